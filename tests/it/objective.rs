//! One objective per workload, end to end: a workload's `"weights"` are read with it, a case the
//! bench prints without a weight (or a weight for one it does not print) invalidates the sample
//! with a reason, and weights that are not numbers stop the run before any work.

use crate::common::Env;
use predicates::str::contains;

fn with_weights(env: &Env, weights: &str) -> std::path::PathBuf {
    let task = env.task("spin");
    std::fs::write(
        task.join("workload.json"),
        format!("{{\"steps\": 4000000, \"weights\": {weights}}}"),
    )
    .unwrap();
    task
}

#[test]
fn a_workload_s_weights_name_the_cases_the_bench_prints() {
    let env = Env::new();
    let task = with_weights(&env, "{\"default\": 3}");
    let report = env.run(&task, &["--budget", "2", "--seed", "3"]);
    assert_eq!(report["status"], "finished", "{report}");
    assert!(report["accepted"].as_u64().unwrap() >= 1, "{report}");

    let env = Env::new();
    let task = with_weights(&env, "{\"default\": 1, \"prefill\": 2}");
    let out = env
        .cmd()
        .args(["run", task.to_str().unwrap(), "--budget", "1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the workload weights case prefill, which the bench did not print"),
        "{stderr}"
    );

    let env = Env::new();
    let task = with_weights(&env, "{\"default\": \"many\"}");
    env.cmd()
        .args(["run", task.to_str().unwrap(), "--budget", "1"])
        .assert()
        .code(2)
        .stderr(contains("\"weights\" must map case names to numbers"));
}
