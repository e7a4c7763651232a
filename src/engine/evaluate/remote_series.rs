//! A candidate evaluated on remote targets. A node's series is judged here prefix by prefix,
//! as the local loop judges it, and a candidate that series accepts is confirmed by a fresh
//! series where the run says (`--verify-on`): on a second target, on the same one, or here on
//! the controller. A node that reports invented samples gets nothing into the ledger unless the
//! place that confirms it lies too.

use super::confirm::{confirmed, needs_confirmation};
use super::evaluation::Evaluation;
use super::failure::Failure;
use super::harness::{Built, Harness};
use crate::engine::remote::wire::{Job, Outcome, WireEvaluation};
use crate::engine::remote::{Pick, Pool, TargetId, VerifyOn};
use crate::measure::{Decision, Judge, Sample};
use crate::record::Stage;
use anyhow::{Result, bail};
use sandbox::{CancelFlag, FileTree};

/// The controller's own harness, for `--verify-on controller`, with the incumbent built here.
pub struct Here<'a> {
    harness: Box<Harness<'a>>,
    incumbent: Option<Built>,
}

impl<'a> Here<'a> {
    pub fn new(harness: Harness<'a>) -> Self {
        Here {
            harness: Box::new(harness),
            incumbent: None,
        }
    }

    /// `first` (a node's evaluation) confirmed by a fresh series here when it was accepted.
    /// The hand-tuned figure the nodes measured is no reference for this machine's numbers, so
    /// plausibility is judged against the incumbent alone.
    pub fn confirm(
        &mut self,
        incumbent: &FileTree,
        first: Evaluation,
        judge: &Judge<'_>,
    ) -> Result<Evaluation> {
        let Some(tree) = first.tree.clone().filter(|_| needs_confirmation(&first)) else {
            return Ok(first);
        };
        let stale = self.incumbent.as_ref().is_none_or(|b| b.tree != *incumbent);
        if stale {
            let built = tokio::task::block_in_place(|| self.harness.prepare(incumbent.clone()))
                .map_err(|f| {
                    anyhow::anyhow!(
                        "the incumbent does not pass on the controller: {}",
                        f.reason
                    )
                })?;
            self.incumbent = Some(built);
        }
        let Some(inc) = self.incumbent.as_mut() else {
            bail!("the incumbent was not built on the controller");
        };
        self.harness.keep_intact(inc)?;
        let judge = Judge {
            reference: None,
            spread: None,
            ..*judge
        };
        let mut again =
            tokio::task::block_in_place(|| self.harness.evaluate_tree(tree, inc, &judge, false));
        again.reason = format!("on the controller: {}", again.reason);
        Ok(confirmed(first, again))
    }
}

/// One candidate's series on a node, judged here, and its confirmation on a node when that
/// series accepts it (with `VerifyOn::Controller` the caller confirms it here afterwards).
pub fn on_nodes(
    pool: &Pool,
    job: &Job,
    cancel: &CancelFlag,
    (tree, diff): (FileTree, String),
    judge: &Judge<'_>,
    verify: VerifyOn,
) -> Result<Evaluation> {
    let call = |pick| remote_evaluation(pool, job, cancel, tree.clone(), diff.clone(), judge, pick);
    let (by, first) = call(Pick::Any)?;
    let pick = match (by, verify) {
        (Some(t), VerifyOn::SameNode) => Pick::Only(t),
        (Some(t), VerifyOn::OtherNode) => Pick::Not(t),
        _ => return Ok(first),
    };
    if !needs_confirmation(&first) {
        return Ok(first);
    }
    let (_, again) = call(pick)?;
    Ok(confirmed(first, again))
}

/// One series on a node the pool picks, judged here; the target that answered (none when
/// cancelled).
fn remote_evaluation(
    pool: &Pool,
    job: &Job,
    cancel: &CancelFlag,
    tree: FileTree,
    diff: String,
    judge: &Judge<'_>,
    pick: Pick,
) -> Result<(Option<TargetId>, Evaluation)> {
    let (by, mut ev) = match pool.call_on(job, cancel, pick)? {
        None => {
            let mut ev = Evaluation::failed(Failure::new(Stage::Bench, "cancelled"));
            ev.cancelled = true;
            (None, ev)
        }
        Some((target, reply)) => match reply.result {
            Outcome::Evaluated(w) => {
                let (mut ev, series) = judged(w, tree, judge);
                // A series cut short is the node's doing: it is always named. Otherwise the
                // node is named where the pool was told which one to pick (a confirmation).
                if series == Series::EndedEarly || !matches!(pick, Pick::Any) {
                    ev.reason = format!("on {}: {}", reply.node, ev.reason);
                }
                (Some(target), ev)
            }
            Outcome::TaskError(why) => bail!("on {}: {why}", reply.node),
            _ => bail!("{} answered another question", reply.node),
        },
    };
    ev.diff = Some(diff);
    Ok((by, ev))
}

/// How a node's series ended, for the judge here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Series {
    /// The judge decided on a prefix of it, or the node reported a failure or a cancellation.
    Judged,
    /// It ended before the judge here decided: the node stopped early or sent no pairs.
    EndedEarly,
}

/// A node's evaluation, judged here from its samples. A series that ends before the judge here
/// decides fails the candidate (the caller names the node); the run goes on.
fn judged(w: WireEvaluation, tree: FileTree, judge: &Judge<'_>) -> (Evaluation, Series) {
    let mut pairs: Vec<(Sample, Sample)> = w
        .pairs
        .into_iter()
        .map(|(a, b)| (Sample::from(a), Sample::from(b)))
        .collect();
    // Every prefix is judged as the local loop judges it, pair by pair: the verdict is the
    // first prefix's that decides, and pairs a node measured past it count for nothing (a node
    // cannot pick the moment its series looks best).
    let decided = (1..=pairs.len()).find_map(|n| match judge.decide(&pairs[..n]) {
        Decision::Continue => None,
        d => Some((n, d)),
    });
    let decision = match decided {
        Some((n, d)) => {
            pairs.truncate(n);
            Some(d)
        }
        None => (!pairs.is_empty()).then_some(Decision::Continue),
    };
    let mut ev = Evaluation::failed(Failure::new(Stage::Verify, ""));
    ev.bench_seconds = w.bench_seconds;
    ev.process_seconds = w.process_seconds;
    ev.cancelled = w.cancelled;
    ev.harness_fault = w.harness_fault;
    match (w.failure, decision) {
        (Some((stage, reason, log)), decision) => {
            ev.stage = stage;
            ev.reason = reason;
            ev.log = log;
            if let (Stage::Retest, Some(Decision::Done { summary, .. })) = (stage, decision) {
                ev.summary = Some(summary);
            }
        }
        (
            None,
            Some(Decision::Done {
                verdict,
                reason,
                summary,
            }),
        ) => {
            ev.verdict = verdict;
            ev.stage = Stage::Judge;
            ev.reason = reason;
            ev.summary = Some(summary);
            ev.tree = Some(tree);
        }
        (None, _) if ev.cancelled => ev.reason = "cancelled".into(),
        (None, _) => {
            ev.stage = Stage::Judge;
            ev.reason = format!(
                "its series ended after {} pairs, before the judge here decided; nothing is taken from it",
                pairs.len()
            );
            ev.pairs = pairs;
            return (ev, Series::EndedEarly);
        }
    }
    ev.pairs = pairs;
    (ev, Series::Judged)
}
