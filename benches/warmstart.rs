//! Measures warm starts on matmul-c, over several search seeds: how many candidates a run in a
//! new context needs to reach the best a cold start reaches there, compared with the cold start.
//! Two kinds of new context on this machine:
//! - a new workload (prefill after decode was tuned): the neighbour's best is a different
//!   kernel strategy, so it transfers poorly;
//! - a new model id on the same workload (prefill tuned, then the model changes): the
//!   neighbour's best should transfer as it is.
//!
//! A run "reaches" a score when one of its accepted entries measures at least 95% of it (scores
//! from different runs are measured at different times; the margin absorbs that noise).
//!
//! cargo bench --bench warmstart [-- SEEDS [COLD_BUDGET]]   (default 3 seeds, 30 candidates)
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "search/copy.rs"]
mod copy;

use copy::copy_dir;
use polymorph::engine::Strategy;
use polymorph::engine::{RunOptions, run};
use polymorph::record::{ProposerChoice, RunProposer, Store};
use sandbox::{Isolation, Runner};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Share of the cold best that counts as reaching it.
const REACH: f64 = 0.95;

fn opts(budget: usize, seed: u64, workload: Option<PathBuf>, warm: bool) -> RunOptions {
    RunOptions {
        proposer: ProposerChoice::Given(RunProposer::Search),
        budget,
        seed: Some(seed),
        workload,
        progress: false,
        warm_start: warm,
        agent: None,
        simulate: None,
        strategy: Strategy::Hill,
        targets: None,
    }
}

/// Runs a task with its state (runs.db, ledger) in `state`; (seq, score) of every accepted
/// candidate of that run, in order.
async fn tune(
    state: &Path,
    task: &Path,
    opts: &RunOptions,
    runner: &Runner,
    cancel: &Arc<AtomicBool>,
) -> Vec<(i64, f64)> {
    let store = Store::open(&state.join("runs.db")).await.unwrap();
    let report = run(
        &store,
        &state.join("ledger"),
        task,
        opts,
        runner,
        cancel.clone(),
    )
    .await
    .unwrap()
    .remove(0);
    let found = accepted(&store, report.run_id).await;
    store.close().await;
    found
}

/// The first candidate of `acc` whose score reaches `target`.
fn reached(acc: &[(i64, f64)], target: f64) -> Option<i64> {
    acc.iter().find(|(_, s)| *s >= target).map(|(k, _)| *k)
}

/// (seq, score) of every accepted candidate of a run, in order.
async fn accepted(store: &Store, run_id: i64) -> Vec<(i64, f64)> {
    let (_, rows) = store
        .query_readonly(&format!(
            "SELECT c.seq, e.candidate_score FROM candidates c JOIN evaluations e ON e.candidate_id = c.id \
             WHERE c.run_id = {run_id} AND e.verdict = 'accepted' ORDER BY c.seq"
        ))
        .await
        .unwrap();
    rows.iter()
        .map(|r| (r[0].as_i64().unwrap(), r[1].as_f64().unwrap()))
        .collect()
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let seeds = args.first().copied().unwrap_or(3) as u64;
    let cold_budget = args.get(1).copied().unwrap_or(30);
    let warm_budget = (cold_budget as f64 * 0.3).ceil() as usize;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let task = root.join("tasks/matmul-c");
    let prefill = Some(task.join("workloads/prefill.json"));
    let runner = Runner::new(Isolation::detect(
        &std::env::var("PATH").unwrap_or_default(),
    ));
    let cancel = Arc::new(AtomicBool::new(false));

    // The neighbour: decode tuned once.
    let base = tempfile::tempdir().unwrap();
    let decode = tune(
        base.path(),
        &task,
        &opts(cold_budget, 1, None, false),
        &runner,
        &cancel,
    )
    .await;
    eprintln!("decode tuned: {} accepted", decode.len());

    let mut ratios = Vec::new();
    let mut model_ratios = Vec::new();
    for seed in 1..=seeds {
        let cold_dir = tempfile::tempdir().unwrap();
        let cold_acc = tune(
            cold_dir.path(),
            &task,
            &opts(cold_budget, seed, prefill.clone(), false),
            &runner,
            &cancel,
        )
        .await;
        let best = cold_acc.iter().map(|(_, s)| *s).fold(f64::NAN, f64::max);
        let target = REACH * best;
        let cold_n = reached(&cold_acc, target).unwrap_or(cold_budget as i64);

        // A new workload: prefill, seeded from the decode context.
        let warm_dir = tempfile::tempdir().unwrap();
        copy_dir(base.path(), warm_dir.path());
        let warm_acc = tune(
            warm_dir.path(),
            &task,
            &opts(warm_budget, seed, prefill.clone(), true),
            &runner,
            &cancel,
        )
        .await;
        let warm_n = reached(&warm_acc, target);
        let warm_best = warm_acc.iter().map(|(_, s)| *s).fold(f64::NAN, f64::max);
        println!(
            "seed {seed}: cold best {best:.2} GFLOP/s reached at candidate {cold_n} of {cold_budget}; warm start {} (best {warm_best:.2} within {warm_budget})",
            warm_n.map_or("did not reach it".to_string(), |n| format!(
                "reached it at candidate {n}"
            ))
        );
        ratios.push(warm_n.map(|w| w as f64 / cold_n as f64));

        // The same workload under a new model id, seeded from the prefill context just tuned.
        let model_dir = tempfile::tempdir().unwrap();
        copy_dir(cold_dir.path(), &model_dir.path().join("state"));
        let task2 = model_dir.path().join("matmul-c");
        copy_dir(&task, &task2);
        let toml = std::fs::read_to_string(task2.join("task.toml"))
            .unwrap()
            .replace("model = \"\"", "model = \"another-model\"");
        std::fs::write(task2.join("task.toml"), toml).unwrap();
        let workload = Some(task2.join("workloads/prefill.json"));
        let moved_acc = tune(
            &model_dir.path().join("state"),
            &task2,
            &opts(warm_budget, seed, workload, true),
            &runner,
            &cancel,
        )
        .await;
        let moved_n = reached(&moved_acc, target);
        println!(
            "seed {seed}: new model id, same workload: {}",
            moved_n.map_or("did not reach the cold best".to_string(), |n| format!(
                "reached the cold best at candidate {n}"
            ))
        );
        model_ratios.push(moved_n.map(|w| w as f64 / cold_n as f64));
    }
    let show = |r: &[Option<f64>]| {
        r.iter()
            .map(|r| r.map_or("-".to_string(), |r| format!("{:.0}%", r * 100.0)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "candidates needed to reach the cold-start best, warm / cold: new workload {}; new model id {}",
        show(&ratios),
        show(&model_ratios)
    );
}
