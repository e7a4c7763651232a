//! One simulated run on a landscape through the real loop and judge, and what it evaluated.

use super::landscape::Landscape;
use polymorph::engine::{RunOptions, Strategy, run};
use polymorph::record::{ProposerChoice, RunProposer, Store};
use sandbox::{Isolation, Runner};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// One evaluated candidate of a run, in the order proposed.
pub struct Evaluated {
    pub key: String,
    pub pairs: usize,
    pub verdict: String,
    pub origin: String,
}

/// A run on `l`'s cache by `proposer` with `strategy`, `budget` candidates, seeded.
pub fn options(
    l: &Landscape,
    proposer: RunProposer,
    strategy: Strategy,
    budget: usize,
    seed: u64,
    warm_start: bool,
) -> RunOptions {
    RunOptions {
        proposer: ProposerChoice::Given(proposer),
        budget,
        seed: Some(seed),
        workload: l.workload.clone(),
        progress: false,
        warm_start,
        agent: None,
        simulate: Some(l.cache.clone()),
        strategy,
        targets: None,
    }
}

/// Runs `opts` on `l` with its store and ledger under `state` (kept by the caller where a later
/// run should start warm from this one) and returns its evaluated candidates.
pub async fn replay(state: &Path, l: &Landscape, opts: &RunOptions) -> Vec<Evaluated> {
    let store = Store::open(&state.join("runs.db")).await.unwrap();
    let runner = Runner::new(Isolation::detect(""));
    let cancel = Arc::new(AtomicBool::new(false));
    let report = run(
        &store,
        &state.join("ledger"),
        &l.task,
        opts,
        &runner,
        cancel,
    )
    .await
    .unwrap()
    .remove(0);
    let (_, rows) = store
        .query_readonly(&format!(
            "SELECT c.params_key, e.pairs, e.verdict, c.origin FROM candidates c \
             JOIN evaluations e ON e.candidate_id = c.id WHERE c.run_id = {} ORDER BY c.seq",
            report.run_id
        ))
        .await
        .unwrap();
    // Closed here, not dropped: a pool dropped with its tasks running kept the runtime from
    // shutting down at a bench's end.
    store.close().await;
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    rows.iter()
        .map(|r| Evaluated {
            key: text(&r[0]),
            pairs: r[1].as_i64().unwrap_or(0) as usize,
            verdict: text(&r[2]),
            origin: text(&r[3]),
        })
        .collect()
}

/// Proposes the one assignment `params` in a run on `l` under `state`, judged against the task
/// as given, and returns what was evaluated.
pub async fn propose_one(
    state: &Path,
    l: &Landscape,
    params: &serde_json::Value,
    seed: u64,
) -> Vec<Evaluated> {
    let file = state.join("pick.jsonl");
    std::fs::write(
        &file,
        serde_json::json!({ "params": params }).to_string() + "\n",
    )
    .unwrap();
    let opts = options(l, RunProposer::Replay(file), Strategy::Tpe, 1, seed, false);
    replay(state, l, &opts).await
}
