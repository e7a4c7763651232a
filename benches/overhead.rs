//! Measures polymorph's own time per candidate on matmul-c (everything but the build, test and
//! bench processes: proposing, verifying, writing workspaces, hashing, judging, git and SQLite),
//! from a real search run, as recorded in runs.db's `evaluations.overhead_ms`.
//!
//! cargo bench --bench overhead [-- BUDGET]   (default 20 candidates)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use polymorph::engine::Strategy;
use polymorph::engine::{RunOptions, run};
use polymorph::record::{ProposerChoice, RunProposer, Store};
use sandbox::{Isolation, Runner};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let budget: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("runs.db")).await.unwrap();
    let runner = Runner::new(Isolation::detect(
        &std::env::var("PATH").unwrap_or_default(),
    ));
    let task = Path::new(env!("CARGO_MANIFEST_DIR")).join("tasks/matmul-c");
    let opts = RunOptions {
        proposer: ProposerChoice::Given(RunProposer::Search),
        budget,
        seed: Some(5),
        workload: None,
        progress: true,
        warm_start: false,
        agent: None,
        simulate: None,
        strategy: Strategy::Model,
        targets: None,
    };
    let started = std::time::Instant::now();
    let report = run(
        &store,
        &dir.path().join("ledger"),
        &task,
        &opts,
        &runner,
        Arc::new(AtomicBool::new(false)),
    )
    .await
    .unwrap()
    .remove(0);
    let wall = started.elapsed().as_secs_f64();
    let (_, rows) = store
        .query_readonly("SELECT e.overhead_ms, e.process_seconds, e.verdict FROM evaluations e ORDER BY e.overhead_ms")
        .await
        .unwrap();
    let overhead: Vec<f64> = rows.iter().map(|r| r[0].as_f64().unwrap()).collect();
    let process: f64 = rows.iter().map(|r| r[1].as_f64().unwrap()).sum();
    let pick = |q: f64| overhead[((overhead.len() - 1) as f64 * q).round() as usize];
    println!(
        "overhead benchmark on matmul-c ({}), {} candidates, {} accepted",
        runner.isolation().describe(),
        report.candidates,
        report.accepted
    );
    println!(
        "polymorph's own time per candidate: median {:.1} ms, p90 {:.1} ms, max {:.1} ms (task processes: {:.1} s in all; run wall time {:.1} s)",
        pick(0.5),
        pick(0.9),
        pick(1.0),
        process,
        wall
    );
}
