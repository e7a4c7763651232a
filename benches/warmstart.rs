//! Measures warm starts on matmul-c: after tuning the decode workload, how many candidates a
//! run on the prefill workload (a new context on the same hardware) needs to reach the best a
//! cold start reaches, compared with the cold start itself, over several search seeds.
//!
//! A run "reaches" a score when one of its accepted entries measures at least 95% of it (scores
//! from different runs are measured at different times; the margin absorbs that noise).
//!
//! cargo bench --bench warmstart [-- SEEDS [COLD_BUDGET]]   (default 3 seeds, 30 candidates)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use polymorph::optimize::{ProposerChoice, RunOptions, run};
use polymorph::store::Store;
use sandbox::{Isolation, Runner};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Share of the cold best that counts as reaching it.
const REACH: f64 = 0.95;

fn opts(budget: usize, seed: u64, workload: Option<PathBuf>, warm: bool) -> RunOptions {
    RunOptions {
        proposer: ProposerChoice::Search,
        budget,
        seed: Some(seed),
        workload,
        progress: false,
        warm_start: warm,
        agent: None,
    }
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

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
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
    {
        let store = Store::open(&base.path().join("runs.db")).await.unwrap();
        let r = run(
            &store,
            &base.path().join("ledger"),
            &task,
            &opts(cold_budget, 1, None, false),
            &runner,
            cancel.clone(),
        )
        .await
        .unwrap();
        eprintln!("decode tuned: {} accepted of {}", r.accepted, r.candidates);
        store.pool().close().await;
    }

    let mut ratios = Vec::new();
    for seed in 1..=seeds {
        let cold_dir = tempfile::tempdir().unwrap();
        let store = Store::open(&cold_dir.path().join("runs.db")).await.unwrap();
        let cold = run(
            &store,
            &cold_dir.path().join("ledger"),
            &task,
            &opts(cold_budget, seed, prefill.clone(), false),
            &runner,
            cancel.clone(),
        )
        .await
        .unwrap();
        let cold_acc = accepted(&store, cold.run_id).await;
        let best = cold_acc.iter().map(|(_, s)| *s).fold(f64::NAN, f64::max);
        let cold_n = cold_acc
            .iter()
            .find(|(_, s)| *s >= REACH * best)
            .map(|(k, _)| *k)
            .unwrap_or(cold_budget as i64);

        let warm_dir = tempfile::tempdir().unwrap();
        copy_dir(base.path(), warm_dir.path());
        let store = Store::open(&warm_dir.path().join("runs.db")).await.unwrap();
        let warm = run(
            &store,
            &warm_dir.path().join("ledger"),
            &task,
            &opts(warm_budget, seed, prefill.clone(), true),
            &runner,
            cancel.clone(),
        )
        .await
        .unwrap();
        let warm_acc = accepted(&store, warm.run_id).await;
        let warm_n = warm_acc
            .iter()
            .find(|(_, s)| *s >= REACH * best)
            .map(|(k, _)| *k);
        let warm_best = warm_acc.iter().map(|(_, s)| *s).fold(f64::NAN, f64::max);
        println!(
            "seed {seed}: cold best {best:.2} GFLOP/s reached at candidate {cold_n} of {cold_budget}; warm start {} (best {warm_best:.2} within {warm_budget})",
            warm_n.map_or("did not reach it".to_string(), |n| format!(
                "reached it at candidate {n}"
            ))
        );
        ratios.push(warm_n.map(|w| w as f64 / cold_n as f64));
    }
    let reached: Vec<f64> = ratios.iter().flatten().copied().collect();
    println!(
        "warm start reached the cold-start best in {} of {seeds} seeds; candidates needed, warm / cold: {}",
        reached.len(),
        ratios
            .iter()
            .map(|r| r.map_or("-".to_string(), |r| format!("{:.0}%", r * 100.0)))
            .collect::<Vec<_>>()
            .join(", ")
    );
}
