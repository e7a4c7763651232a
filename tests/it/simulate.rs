//! Simulation: `polymorph record` measures a task's whole parameter space into a cache, and
//! `run --simulate` replays it through the real loop and judge without running any process of
//! the task, in a context of its own.

use crate::common::{Env, edit};
use predicates::str::contains;

#[test]
fn a_recorded_cache_is_replayed_through_the_loop_in_its_own_context() {
    let env = Env::new();
    let task = env.task("spin");
    let cache = env.path().join("spin-cache.json");
    let record = |what: &str| {
        env.cmd()
            .args(["record", task.to_str().unwrap(), "--samples", "3", "--out"])
            .arg(&cache)
            .assert()
            .success()
            .stdout(contains(what))
    };
    // The task as given, its hand-tuned baseline and the five assignments; a second call
    // finds them all recorded and measures nothing.
    record("7 trees (7 measured now, 0 failed");
    record("7 trees (0 measured now");
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
    assert_eq!(c["samples_per_tree"], 3);
    assert!(
        c["trees"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["samples"].as_array().unwrap().len() == 3)
    );

    let report = env.json(&[
        "run",
        task.to_str().unwrap(),
        "--simulate",
        cache.to_str().unwrap(),
        "--budget",
        "4",
        "--seed",
        "3",
    ]);
    assert_eq!(report["candidates"], 4, "{report}");
    assert!(report["accepted"].as_u64().unwrap() >= 1, "{report}");
    // Simulated results never share a context (or a ledger branch) with measured ones.
    let real = env.json(&["context", task.to_str().unwrap()]);
    assert_ne!(report["context_id"], real["context_id"], "{report} {real}");
    // No process of the task ran: the bench seconds are the recorded ones.
    let rows = env.json(&[
        "query",
        "SELECT SUM(process_seconds) AS p, SUM(bench_seconds) AS b, SUM(pairs) AS n FROM evaluations",
    ]);
    assert_eq!(rows[0]["p"].as_f64().unwrap(), 0.0, "{rows}");
    assert!(rows[0]["b"].as_f64().unwrap() > 0.0, "{rows}");

    // A cache recorded for other harness files is refused, saying why.
    edit(&task.join("bench.c"), "int main", "/* changed */\nint main");
    env.cmd()
        .args([
            "run",
            task.to_str().unwrap(),
            "--simulate",
            cache.to_str().unwrap(),
        ])
        .assert()
        .code(2)
        .stderr(contains("was recorded for other harness files"));
    // So is a file that is no cache.
    let bogus = env.write("bogus.json", "{\"trees\": 3}");
    env.cmd()
        .args([
            "run",
            task.to_str().unwrap(),
            "--simulate",
            bogus.to_str().unwrap(),
        ])
        .assert()
        .code(2)
        .stderr(contains(
            "is not a measurement cache written by `polymorph record`",
        ));
}
