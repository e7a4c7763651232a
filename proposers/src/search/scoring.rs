//! What the searches rank measured assignments by: what the judge could accept of each, scored
//! against the current incumbent (the judge's objective, penalised past the per-case tolerance).

use crate::search::tuning::PENALTY;
use crate::{Observation, Params, ProposalContext};
use std::collections::{BTreeMap, HashMap};

/// What the judge accepts, from the task's `[metric]`.
#[derive(Debug, Clone)]
pub struct Goal {
    pub maximize: bool,
    /// The gain the judge asks for (0.02 = 2%).
    pub min_gain: f64,
    /// The judge refuses a candidate with any case ending worse than the floor by more than
    /// this (0.05 = 5%).
    pub case_tolerance: f64,
    /// Each case's weight in the objective, as the workload gives it; empty: equal weights.
    pub weights: BTreeMap<String, f64>,
}

impl Goal {
    fn log_ratio(&self, reference: f64, value: f64) -> f64 {
        let r = (value / reference).ln();
        if self.maximize { r } else { -r }
    }

    /// What the judge could accept, relative to `reference` (the incumbent's per-case figures):
    /// the weighted mean per-case log gain (the judge's objective), minus a penalty for the case
    /// that would end furthest below the floor past the tolerance (`floor`: each case's log
    /// gain of the incumbent over the floor). An assignment measured more than once (a race's
    /// leader, screened and then judged in full) gets each case's log gain averaged over its
    /// measurements.
    pub(crate) fn objective(
        &self,
        seen: &[&Observation],
        reference: &BTreeMap<String, f64>,
        floor: &BTreeMap<String, f64>,
    ) -> f64 {
        let mut per_case: BTreeMap<&str, (f64, usize)> = BTreeMap::new();
        for o in seen {
            for (case, v) in &o.candidate {
                let Some(r) = reference.get(case).or_else(|| o.incumbent.get(case)) else {
                    continue;
                };
                let g = self.log_ratio(*r, *v);
                if g.is_finite() {
                    let slot = per_case.entry(case).or_insert((0.0, 0));
                    *slot = (slot.0 + g, slot.1 + 1);
                }
            }
        }
        if per_case.is_empty() {
            return f64::NEG_INFINITY;
        }
        let weight = |case: &str| match self.weights.is_empty() {
            true => 1.0,
            false => self.weights.get(case).copied().unwrap_or(0.0),
        };
        let total: f64 = per_case.keys().map(|c| weight(c)).sum();
        if total <= 0.0 {
            return f64::NEG_INFINITY;
        }
        let gain = |case: &str, (sum, n): &(f64, usize)| {
            (sum / *n as f64, floor.get(case).copied().unwrap_or(0.0))
        };
        let mean = per_case
            .iter()
            .map(|(c, s)| weight(c) * gain(c, s).0)
            .sum::<f64>()
            / total;
        let worst = per_case
            .iter()
            .map(|(c, s)| gain(c, s).0 + gain(c, s).1)
            .fold(f64::INFINITY, f64::min);
        let limit = (1.0 - self.case_tolerance).ln();
        mean + PENALTY * (worst - limit).min(0.0)
    }

    /// Each assignment measured, scored against the current incumbent, best first.
    pub(crate) fn ranked(&self, ctx: &ProposalContext) -> Vec<(f64, Params)> {
        let last_as_candidate =
            ctx.observations.iter().rev().find(|o| {
                Some(&o.params) == ctx.incumbent_params.as_ref() && !o.candidate.is_empty()
            });
        let reference = match (last_as_candidate, ctx.observations.last()) {
            (Some(o), _) => o.candidate.clone(),
            (None, Some(o)) => o.incumbent.clone(),
            (None, None) => BTreeMap::new(),
        };
        let mut order: Vec<&Params> = Vec::new();
        let mut by_params: HashMap<&Params, Vec<&Observation>> = HashMap::new();
        for o in ctx.observations.iter() {
            by_params
                .entry(&o.params)
                .or_insert_with(|| {
                    order.push(&o.params);
                    Vec::new()
                })
                .push(o);
        }
        let mut scored: Vec<(f64, Params)> = order
            .into_iter()
            .map(|p| {
                (
                    self.objective(&by_params[p], &reference, &ctx.floor),
                    p.clone(),
                )
            })
            .collect();
        if let Some(p) = &ctx.incumbent_params
            && last_as_candidate.is_none()
        {
            scored.push((0.0, p.clone()));
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored
    }
}
