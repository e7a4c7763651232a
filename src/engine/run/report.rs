//! What a run tells people: one progress line per candidate, the commit message of an accepted
//! entry, and the report at the end with start, best and hand-tuned measured side by side.

use crate::engine::evaluate::{Evaluation, Evaluator};
use crate::measure::{Direction, Verdict, log_gain, median, pct};
use crate::record::{CommitId, Ledger, RunProposer, RunStatus, Store};
use crate::task::Resolved;
use anyhow::{Context as _, Result};
use serde::Serialize;
use std::time::Instant;

/// Interleaved rounds used to measure the start, hand-tuned and best trees at the start and end
/// of a run: a reference figure, not a verdict, so a few rounds suffice.
pub const REFERENCE_ROUNDS: usize = 3;

/// What a run did, for the terminal and `--json`.
#[derive(Debug, Serialize)]
pub struct RunReport {
    pub run_id: i64,
    pub task: String,
    pub context_id: String,
    pub branch: String,
    pub proposer: RunProposer,
    pub resumed: bool,
    pub candidates: usize,
    pub accepted: usize,
    pub rejected: usize,
    /// The search race's contenders held after their screen (never judged in
    /// full, so never accepted, but not refused either).
    pub held: usize,
    pub failed: usize,
    pub quarantined: usize,
    pub status: RunStatus,
    pub message: Option<String>,
    /// Fresh interleaved measurement at the end of the run.
    pub start_score: Option<f64>,
    pub best_score: Option<f64>,
    pub hand_tuned_score: Option<f64>,
    /// The median of the hardware limit the final side-by-side processes measured
    /// (`[metric] limit`, e.g. the capacity a serving ramp could show on this machine), with its name.
    pub limit: Option<(String, f64)>,
    pub metric: String,
    pub best_entry: Option<i64>,
    pub best_commit: Option<String>,
    /// The sha256 of the cache a simulated run replayed (`run --simulate`): its figures are
    /// recorded samples, not measurements. `None` for a measured run.
    pub simulation: Option<String>,
    /// What the model cost, for a run whose proposals came from one.
    pub model: Option<ModelUse>,
}

/// A run's model requests, tokens and minutes spent waiting for replies.
#[derive(Debug, Serialize)]
pub struct ModelUse {
    pub requests: i64,
    pub tokens: i64,
    pub minutes: f64,
}

/// `x` over `base` in the metric's direction, as a factor (2.0 = twice as good).
pub fn ratio(direction: Direction, base: Option<f64>, x: Option<f64>) -> Option<f64> {
    Some(log_gain(direction, base?, x?).exp())
}

/// One line per candidate on stderr, when enabled.
pub struct Progress<'a> {
    pub enabled: bool,
    pub budget: usize,
    /// Put before the line (a context's id, when several run side by side).
    pub label: &'a str,
    /// The held contender with the best screen in the search's current race (its number and
    /// gain), named on each held line: until the race's leader is judged in full, nothing is
    /// accepted, and a user watching sees where the race stands.
    pub best_held: std::cell::Cell<Option<(usize, f64)>>,
}

impl Progress<'_> {
    /// The line of candidate `k`; `screened` when it was only screened (a race goes on), not
    /// judged in full (which ends the race).
    pub fn line(
        &self,
        k: usize,
        ev: &Evaluation,
        screened: bool,
        (vs_start, vs_hand): (Option<f64>, Option<f64>),
    ) {
        let race = match (ev.verdict, &ev.summary) {
            (Verdict::Held, Some(s)) => {
                let best = match self.best_held.get() {
                    Some(b) if b.1 >= s.gain.estimate => b,
                    _ => (k, s.gain.estimate),
                };
                self.best_held.set(Some(best));
                format!(" | best screen so far: #{} {}", best.0, pct(best.1))
            }
            _ => {
                if !screened {
                    self.best_held.set(None);
                }
                String::new()
            }
        };
        if !self.enabled {
            return;
        }
        let fmt = |r: Option<f64>| r.map_or("?".to_string(), |r| format!("{r:.2}x"));
        // The reason may quote the candidate (a path, a failing check's line): written out.
        eprintln!(
            "{}[{k:>3}/{}] {:<11} {}{race} | best ~{} start, ~{} hand-tuned",
            self.label,
            self.budget,
            ev.verdict.as_str(),
            sandbox::shown(&ev.reason),
            fmt(vs_start),
            fmt(vs_hand)
        );
    }
}

/// polymorph's own time in an iteration so far: its wall time less the task's processes and,
/// for a model-driven proposer, less the model's latency and the processes it ran (the final
/// write of the evaluation itself is not included).
pub fn overhead_ms(
    iteration: Instant,
    process_seconds: f64,
    usage: Option<&proposers::Usage>,
) -> f64 {
    let outside = usage.map_or(0.0, |u| (u.latency_ms + u.process_ms) as f64 / 1000.0);
    (iteration.elapsed().as_secs_f64() - process_seconds - outside).max(0.0) * 1000.0
}

/// Builds and measures start, best and hand-tuned side by side, so the summary compares
/// figures taken under the same conditions.
pub fn final_measurement(
    r: &Resolved,
    ledger: &Ledger,
    exec: &mut Evaluator<'_>,
    best: CommitId,
    report: &mut RunReport,
) -> Result<()> {
    let best_tree = ledger.read_tree(best)?;
    // A run that accepted nothing ends where it started: that tree is measured once.
    let best_is_start = best_tree == r.source;
    let mut trees = vec![("the start", r.source.clone())];
    if !best_is_start {
        trees.push(("the best", best_tree));
    }
    if let Some(hand) = r.hand_tuned.clone() {
        trees.push(("the hand-tuned baseline", hand));
    }
    let samples = exec.measure(trees, REFERENCE_ROUNDS)?;
    let w = &r.task.metric.weights;
    let scores: Vec<f64> = samples.iter().map(|s| w.median_score(s)).collect();
    report.start_score = Some(scores[0]);
    report.best_score = Some(scores[usize::from(!best_is_start)]);
    report.hand_tuned_score = r.hand_tuned.as_ref().and_then(|_| scores.last().copied());
    let limits: Vec<f64> = samples.iter().flatten().filter_map(|s| s.limit).collect();
    report.limit = match &r.task.metric.limit {
        Some(name) if !limits.is_empty() => Some((name.clone(), median(&limits))),
        _ => None,
    };
    Ok(())
}

/// The task as given and the hand-tuned baseline, measured once per run (a resumed run reuses
/// the figures recorded by its first attempt).
pub(super) async fn references(
    store: &Store,
    r: &Resolved,
    exec: &mut Evaluator<'_>,
    run_id: i64,
) -> Result<(Option<f64>, Option<f64>)> {
    let run_row = store.run(run_id).await?.context("run row vanished")?;
    if let (Some(s), h) = (run_row.start_score, run_row.hand_tuned_score)
        && (h.is_some() || r.task.hand_tuned.is_none())
    {
        return Ok((Some(s), h));
    }
    let mut trees = vec![("the task as given", r.source.clone())];
    if let Some(t) = r.hand_tuned.clone() {
        trees.push(("the hand-tuned baseline", t));
    }
    let samples = exec.measure(trees, REFERENCE_ROUNDS)?;
    let w = &r.task.metric.weights;
    let s = Some(w.median_score(&samples[0]));
    let h = samples.get(1).map(|x| w.median_score(x));
    store.set_references(run_id, s, h).await?;
    Ok((s, h))
}
