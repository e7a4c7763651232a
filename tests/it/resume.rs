//! A run killed with SIGKILL leaves runs.db and the ledger consistent and resumes where it
//! stopped; a second run on the same db is refused while the first holds it.

use crate::common::{Env, int_column};
use predicates::str::contains;
use std::time::{Duration, Instant};

fn start_run(env: &Env, task: &str, budget: &str) -> std::process::Child {
    env.spawn(&["run", task, "--budget", budget, "--seed", "11"])
}

/// Waits until runs.db has at least `n` candidates (or the child exits).
fn wait_for_candidates(env: &Env, child: &mut std::process::Child, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        if env.db().exists() {
            let out = env
                .cmd()
                .args(["query", "SELECT COUNT(*) AS n FROM candidates", "--json"])
                .output()
                .unwrap();
            if out.status.success() {
                let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                if v[0]["n"].as_i64().unwrap_or(0) >= n {
                    return;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sigkill_mid_run_then_resume() {
    let env = Env::new();
    let task = env.task("spin");
    let task = task.to_str().unwrap();
    let mut child = start_run(&env, task, "5");
    wait_for_candidates(&env, &mut child, 2);
    child.kill().unwrap();
    child.wait().unwrap();

    let integrity = env.json(&["query", "PRAGMA integrity_check"]);
    assert_eq!(integrity[0]["integrity_check"], "ok");
    let runs = env.json(&["history"]);
    assert_eq!(
        runs[0]["status"], "running",
        "a killed run is left resumable"
    );

    let report = env.json(&["run", task, "--budget", "5", "--seed", "11"]);
    assert_eq!(report["resumed"], true);
    assert_eq!(report["run_id"], 1);
    assert_eq!(report["status"], "finished");
    // Each position of the run evaluated exactly once, none lost.
    let seqs = env.json(&[
        "query",
        "SELECT seq FROM candidates WHERE run_id = 1 ORDER BY seq",
    ]);
    let seqs = int_column(&seqs, "seq");
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>());
    assert_eq!(seqs.len() as u64, report["candidates"].as_u64().unwrap());
    // Every evaluation has its candidate and vice versa.
    let orphans = env.json(&["query", "SELECT COUNT(*) AS n FROM candidates c LEFT JOIN evaluations e ON e.candidate_id = c.id WHERE e.candidate_id IS NULL"]);
    assert_eq!(orphans[0]["n"], 0);
    // The ledger branch points at the newest recorded entry; every commit on it is recorded.
    let branch = report["branch"].as_str().unwrap();
    let shas = env.git(&["log", "--format=%H", branch]);
    let recorded = env.json(&[
        "query",
        "SELECT commit_sha FROM ledger_entries ORDER BY id DESC",
    ]);
    let recorded: Vec<&str> = recorded
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["commit_sha"].as_str().unwrap())
        .collect();
    assert_eq!(shas.lines().collect::<Vec<_>>(), recorded);
}

#[test]
fn a_second_run_on_the_same_db_is_refused() {
    let env = Env::new();
    let task = env.task("spin");
    let task = task.to_str().unwrap();
    let mut first = start_run(&env, task, "50");
    wait_for_candidates(&env, &mut first, 1);
    env.cmd()
        .args(["run", task, "--budget", "1"])
        .assert()
        .code(2)
        .stderr(contains("another polymorph run is using"));
    first.kill().unwrap();
    first.wait().unwrap();
}
