//! The rows `history` prints and the review page lists: one per run, with its verdict counts,
//! best entry and model usage, filtered by task, context, start time and verdict; a simulated
//! run says so.

use crate::measure::Verdict;
use crate::record::Store;
use crate::task::branch_name;
use anyhow::Result;
use serde_json::{Value, json};

/// Which runs `history` shows.
#[derive(Default)]
pub struct HistoryFilter {
    pub task: Option<String>,
    pub context: Option<String>,
    /// RFC 3339 UTC; runs that started at or after it.
    pub since: Option<String>,
    /// Runs with at least one candidate of this verdict.
    pub verdict: Option<Verdict>,
}

/// The rows `history` shows (one JSON object per run), filtered.
pub async fn history_rows(store: &Store, filter: &HistoryFilter) -> Result<Vec<Value>> {
    let task = filter.task.as_deref();
    let runs = store.runs(task).await?;
    let simulations = store.simulations().await?;
    // One query for every run's model minutes, and one per context for its best entry, however
    // many runs there are.
    let minutes_by_run = store.model_minutes_by_run().await?;
    let mut bests = std::collections::HashMap::new();
    let mut rows = Vec::new();
    for run in &runs {
        if filter
            .context
            .as_ref()
            .is_some_and(|c| *c != run.context_id)
            || filter.since.as_ref().is_some_and(|s| run.started_at < *s)
        {
            continue;
        }
        let counts = run.counts;
        if filter.verdict.is_some_and(|v| counts.get(v) == 0) {
            continue;
        }
        let branch = branch_name(&run.task, &run.context_id);
        if !bests.contains_key(&branch) {
            let best = store.incumbent(&branch).await?;
            bests.insert(branch.clone(), best);
        }
        let best = bests[&branch].as_ref();
        let usage = run.usage;
        let per_candidate = |n: i64| (n > 0).then(|| usage.prompt_tokens / n);
        let minutes = minutes_by_run.get(&run.id).copied().unwrap_or(0.0);
        let per = |x: f64, n: i64| (n > 0).then(|| x / n as f64);
        let mut row = json!({
            "run": run.id, "task": run.task, "context_id": run.context_id, "proposer": run.proposer,
            "budget": run.budget, "status": run.status, "started_at": run.started_at, "finished_at": run.finished_at,
            "candidates": counts.total(),
            "accepted": counts.accepted, "rejected": counts.rejected, "held": counts.held, "failed": counts.failed, "quarantined": counts.quarantined,
            "start_score": run.start_score, "hand_tuned_score": run.hand_tuned_score,
            "best_entry": best.as_ref().map(|b| b.id), "best_score": best.and_then(|b| b.score),
            "message": run.message, "model_tokens": usage.tokens, "model_requests": usage.requests,
            "prompt_tokens": usage.prompt_tokens, "prompt_tokens_per_candidate": per_candidate(counts.total()),
            "prompt_tokens_per_accepted": per_candidate(counts.accepted),
            "model_minutes": minutes,
            "model_minutes_per_candidate": per(minutes, counts.total()),
            "model_minutes_per_accepted": per(minutes, counts.accepted),
            "model_requests_per_accepted": per(usage.requests as f64, counts.accepted),
            "model_tokens_per_accepted": per(usage.tokens as f64, counts.accepted),
        });
        simulations.label(&run.task, &run.context_id, &mut row);
        rows.push(row);
    }
    Ok(rows)
}
