//! What the model-based search learns from: every parameter assignment measured in a context,
//! earlier runs included, as per-case medians of its samples and of the incumbent's beside them.
//! Read whole once per run, then only the candidates recorded since (a read per proposal that
//! grew with the history was most of the loop's own time).

use crate::measure::{SampleSide, median};
use crate::record::Store;
use anyhow::Result;
use proposers::{Observation, Params};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Values per (side, case) of one candidate while its rows are read.
#[derive(Default)]
struct Gathered {
    params: Params,
    screened_only: bool,
    carried: bool,
    candidate: BTreeMap<String, Vec<f64>>,
    incumbent: BTreeMap<String, Vec<f64>>,
}

fn medians(values: BTreeMap<String, Vec<f64>>) -> BTreeMap<String, f64> {
    values.into_iter().map(|(c, v)| (c, median(&v))).collect()
}

/// The observations of a task's context, oldest first, kept up to date by `refresh`.
#[derive(Default)]
pub struct Observations {
    /// Shared with each proposal's context; extended in place once that context is gone.
    list: Arc<Vec<Observation>>,
    /// The newest candidate read so far.
    after: i64,
}

impl Observations {
    /// Adds the candidates recorded since the last call; the whole list.
    pub async fn refresh(
        &mut self,
        store: &Store,
        task: &str,
        context_id: &str,
    ) -> Result<Arc<Vec<Observation>>> {
        let rows = store.params_samples(task, context_id, self.after).await?;
        let mut order: Vec<i64> = Vec::new();
        let mut by_id: BTreeMap<i64, Gathered> = BTreeMap::new();
        for row in rows {
            let g = by_id.entry(row.id).or_insert_with(|| {
                order.push(row.id);
                let params = serde_json::from_str::<serde_json::Value>(&row.payload)
                    .ok()
                    .and_then(|v| serde_json::from_value(v.get("params")?.clone()).ok())
                    .unwrap_or_default();
                let origin = row.origin.parse::<proposers::Origin>().ok();
                Gathered {
                    params,
                    screened_only: origin.as_ref().is_some_and(|o| o.screen_only()),
                    carried: matches!(origin, Some(proposers::Origin::WarmStart { .. })),
                    ..Gathered::default()
                }
            });
            let (Some(side), Some(case), Some(value)) = (row.side, row.case_name, row.value) else {
                continue;
            };
            let into = match side {
                SampleSide::Candidate => &mut g.candidate,
                SampleSide::Incumbent => &mut g.incumbent,
            };
            into.entry(case).or_default().push(value);
        }
        if let Some(last) = order.last() {
            self.after = *last;
        }
        Arc::make_mut(&mut self.list).extend(
            order
                .into_iter()
                .filter_map(|id| by_id.remove(&id))
                .filter(|g| !g.params.is_empty())
                .map(|g| Observation {
                    params: g.params,
                    pairs: g.candidate.values().map(Vec::len).max().unwrap_or(0),
                    candidate: medians(g.candidate),
                    incumbent: medians(g.incumbent),
                    screened_only: g.screened_only,
                    carried: g.carried,
                }),
        );
        Ok(Arc::clone(&self.list))
    }
}
