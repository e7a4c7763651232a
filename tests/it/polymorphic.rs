//! Context-keyed results: the context command, best with what to deploy, warm starts from
//! neighbouring contexts, schedules and the daemon (a changed workload triggers a run; SIGTERM
//! mid-evaluation loses nothing; one daemon per database).

use crate::common::{Env, edit, files_line};
use predicates::str::contains;
use serde_json::Value;
use std::time::{Duration, Instant};

fn edit_workload(task: &std::path::Path, steps: u64) {
    std::fs::write(
        task.join("workload.json"),
        format!("{{\"steps\": {steps}}}\n"),
    )
    .unwrap();
}

#[test]
fn context_names_what_went_into_it_and_moves_with_the_workload() {
    let env = Env::new();
    let task = env.task("spin");
    let a = env.json(&["context", task.to_str().unwrap()]);
    let id = a["context_id"].as_str().unwrap();
    assert_eq!(id.len(), 12);
    assert!(a["fingerprint"]["cpu_cores"].as_u64().unwrap() >= 1);
    assert_eq!(a["fingerprint"]["workload"], "workload.json");
    assert!(
        a["fingerprint"]["toolchain"][0]
            .as_str()
            .unwrap()
            .contains("cc")
            || a["fingerprint"]["toolchain"][0]
                .as_str()
                .unwrap()
                .contains("gcc")
    );
    assert_eq!(
        env.json(&["context", task.to_str().unwrap()])["context_id"],
        id,
        "stable"
    );
    // task.toml's description is not part of the context; how the bench runs is.
    let toml = task.join("task.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        text.replace(
            "description = \"LCG chain with tunable wasted work\"",
            "description = \"reworded\"",
        ),
    )
    .unwrap();
    assert_eq!(
        env.json(&["context", task.to_str().unwrap()])["context_id"],
        id
    );
    std::fs::write(
        &toml,
        text.replace("bench = \"./bench\"", "bench = \"./bench --quiet\""),
    )
    .unwrap();
    assert_ne!(
        env.json(&["context", task.to_str().unwrap()])["context_id"],
        id
    );
    std::fs::write(&toml, &text).unwrap();
    edit_workload(&task, 1);
    assert_ne!(
        env.json(&["context", task.to_str().unwrap()])["context_id"],
        id
    );
}

/// The task's other traces are data: recording a new one changes only the contexts that use it,
/// while a harness file (the check) changes every context of the task.
#[test]
fn a_new_trace_beside_the_workload_moves_only_its_own_context() {
    let env = Env::new();
    let task = env.task("matmul-c");
    let t = task.to_str().unwrap();
    let prefill = task.join("workloads/prefill.json");
    let p = prefill.to_str().unwrap();
    let id = |args: &[&str]| env.json(args)["context_id"].as_str().unwrap().to_string();
    let (decode, on_prefill) = (id(&["context", t]), id(&["context", t, "--workload", p]));
    assert_ne!(decode, on_prefill);
    let text = std::fs::read_to_string(&prefill).unwrap();
    std::fs::write(&prefill, text.replacen("\"m\": 64", "\"m\": 32", 1)).unwrap();
    std::fs::write(task.join("workloads/recorded.json"), "{}").unwrap();
    assert_eq!(id(&["context", t]), decode);
    assert_ne!(id(&["context", t, "--workload", p]), on_prefill);
    let check = task.join("check.c");
    let source = std::fs::read_to_string(&check).unwrap();
    std::fs::write(&check, format!("{source}\n")).unwrap();
    assert_ne!(id(&["context", t]), decode);
}

#[test]
fn best_says_what_to_deploy_and_emits_the_tree() {
    let env = Env::new();
    let task = env.task("spin");
    let report = env.run(&task, &["--budget", "4", "--seed", "3"]);
    assert!(report["accepted"].as_u64().unwrap() >= 1, "{report}");
    let out = env.path().join("deploy");
    let best = env.json(&[
        "best",
        task.to_str().unwrap(),
        "--emit",
        out.to_str().unwrap(),
    ]);
    let pad = best["deploy"]["params"]["PAD_PERMILLE"].as_i64().unwrap();
    assert!(pad < 200);
    assert_eq!(
        best["deploy"]["files"]["params.h"],
        format!("#define PAD_PERMILLE {pad}\n")
    );
    assert_eq!(
        std::fs::read_to_string(out.join("params.h")).unwrap(),
        format!("#define PAD_PERMILLE {pad}\n")
    );
    assert!(out.join("bench.c").is_file());
    env.cmd()
        .args([
            "best",
            task.to_str().unwrap(),
            "--emit",
            out.to_str().unwrap(),
        ])
        .assert()
        .code(2)
        .stderr(contains("not empty"));
    // By name, with the only context there is.
    assert_eq!(env.json(&["best", "spin"])["commit"], best["commit"]);
}

#[test]
fn a_new_context_starts_from_its_neighbours_best() {
    let env = Env::new();
    let task = env.task("spin");
    let first = env.run(&task, &["--budget", "4", "--seed", "5"]);
    let best_a = env.json(&["best", task.to_str().unwrap()]);
    edit_workload(&task, 2);
    let second = env.run(&task, &["--budget", "1"]);
    assert_ne!(second["context_id"], first["context_id"]);
    let c = env.json(&[
        "query",
        "SELECT origin, payload FROM candidates WHERE run_id = 2",
    ]);
    let origin = c[0]["origin"].as_str().unwrap();
    assert_eq!(
        origin,
        format!(
            "warm-start({}:e{})",
            first["context_id"].as_str().unwrap(),
            best_a["entry"]
        )
    );
    let payload: Value = serde_json::from_str(c[0]["payload"].as_str().unwrap()).unwrap();
    assert_eq!(
        payload["params"], best_a["params"],
        "re-measured here, not trusted"
    );
    // The old numbers were not reused: the candidate has its own samples in this context.
    let samples = env.json(&["query", "SELECT COUNT(*) AS n FROM samples s JOIN candidates c ON c.id = s.candidate_id WHERE c.run_id = 2"]);
    assert!(samples[0]["n"].as_i64().unwrap() >= 12);

    edit_workload(&task, 3);
    env.run(&task, &["--budget", "1", "--no-warm-start"]);
    let cold = env.json(&["query", "SELECT origin FROM candidates WHERE run_id = 3"]);
    assert!(cold[0]["origin"].as_str().unwrap().starts_with("search("));
}

#[test]
fn schedules_are_validated_listed_and_removed() {
    let env = Env::new();
    let task = env.task("spin");
    let t = task.to_str().unwrap();
    env.cmd()
        .args(["schedule", "add", t, "--every", "6h", "--budget", "3"])
        .assert()
        .success()
        .stdout(contains("every 6h"));
    env.cmd()
        .args(["schedule", "add", t, "--cron", "0 3 * * *"])
        .assert()
        .success();
    env.cmd()
        .args(["schedule", "add", t, "--every", "6x"])
        .assert()
        .code(2)
        .stderr(contains("unit must be"));
    env.cmd()
        .args(["schedule", "add", t, "--cron", "nonsense"])
        .assert()
        .code(2)
        .stderr(contains("--cron"));
    env.cmd()
        .args(["schedule", "add", t, "--every", "1h", "--cron", "0 3 * * *"])
        .assert()
        .code(2);
    env.cmd()
        .args(["schedule", "add", "/no/such/task", "--every", "1h"])
        .assert()
        .code(2)
        .stderr(contains("not found"));
    let list = env.json(&["schedule", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert_eq!(list[0]["every_s"], 21600);
    assert_eq!(list[1]["cron"], "0 3 * * *");
    env.cmd()
        .args(["schedule", "remove", "1"])
        .assert()
        .success();
    env.cmd()
        .args(["schedule", "remove", "1"])
        .assert()
        .code(2)
        .stderr(contains("no schedule 1"));
    assert_eq!(env.json(&["schedule", "list"]).as_array().unwrap().len(), 1);
}

#[test]
fn the_daemon_runs_due_schedules_and_reruns_when_the_workload_changes() {
    let env = Env::new();
    let task = env.task("spin");
    let t = task.to_str().unwrap();
    env.cmd()
        .args(["schedule", "add", t, "--every", "1h", "--budget", "1"])
        .assert()
        .success();
    env.cmd()
        .args(["daemon", "--once"])
        .assert()
        .success()
        .stderr(contains("first run"));
    let s = env.json(&["schedule", "list"]);
    assert_eq!(s[0]["last_status"], "finished");
    assert_eq!(s[0]["last_reason"], "first run");
    // Nothing is due an hour early in the same context.
    env.cmd().args(["daemon", "--once"]).assert().success();
    assert_eq!(env.json(&["history"]).as_array().unwrap().len(), 1);
    edit_workload(&task, 7);
    env.cmd()
        .args(["daemon", "--once"])
        .assert()
        .success()
        .stderr(contains("workload changed"));
    let s = env.json(&["schedule", "list"]);
    assert!(
        s[0]["last_reason"]
            .as_str()
            .unwrap()
            .starts_with("workload changed (workload.json)"),
        "{s}"
    );
    assert_eq!(env.json(&["history"]).as_array().unwrap().len(), 2);
}

/// A daemon stopped while a finished run measures its reference figures keeps the run finished:
/// only those figures are lost, and the schedule does not say it failed.
#[test]
fn sigterm_during_the_final_measurement_keeps_the_run_finished() {
    let env = Env::new();
    let task = env.task("spin");
    edit(
        &task.join("task.toml"),
        "bench = \"./bench\"",
        "bench = \"sleep 1; ./bench\"",
    );
    let replay = env.write(
        "broken.jsonl",
        &files_line("kernel.c", "not C\n", "does not build"),
    );
    let proposer = format!("replay:{}", replay.display());
    let t = task.to_str().unwrap();
    env.cmd()
        .args([
            "schedule",
            "add",
            t,
            "--every",
            "1h",
            "--budget",
            "1",
            "--proposer",
            &proposer,
        ])
        .assert()
        .success();
    let mut daemon = env.spawn(&["daemon", "--tick", "1s"]);
    let deadline = Instant::now() + Duration::from_secs(90);
    let finished = || {
        env.db().exists()
            && env
                .cmd()
                .args([
                    "query",
                    "SELECT COUNT(*) AS n FROM runs WHERE status = 'finished'",
                    "--json",
                ])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .and_then(|o| serde_json::from_slice::<Value>(&o.stdout).ok())
                .is_some_and(|v| v[0]["n"].as_i64() == Some(1))
    };
    while !finished() {
        assert!(Instant::now() < deadline, "the run never finished");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signalling a child we spawned.
    unsafe {
        libc::kill(daemon.id() as i32, libc::SIGTERM);
    }
    assert_eq!(daemon.wait().unwrap().code(), Some(130));
    let schedules = env.json(&["schedule", "list"]);
    assert_eq!(schedules[0]["last_status"], "finished", "{schedules}");
    assert_eq!(env.json(&["history"])[0]["status"], "finished");
}

#[test]
fn sigterm_stops_the_daemon_mid_evaluation_and_loses_nothing() {
    let env = Env::new();
    let task = env.task("spin");
    let kernel = std::fs::read_to_string(task.join("kernel.c")).unwrap();
    let lines: Vec<String> = (0..40)
        .map(|i| files_line("kernel.c", &format!("/* {i} */\n{kernel}"), "comment only"))
        .collect();
    let replay = env.write("nulls.jsonl", &(lines.join("\n") + "\n"));
    let proposer = format!("replay:{}", replay.display());
    env.cmd()
        .args([
            "schedule",
            "add",
            task.to_str().unwrap(),
            "--every",
            "1h",
            "--budget",
            "40",
            "--proposer",
            &proposer,
        ])
        .assert()
        .success();
    let mut daemon = env.spawn(&["daemon", "--tick", "1s"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "the daemon never started a run");
        let n = env.db().exists().then(|| {
            env.cmd()
                .args(["query", "SELECT COUNT(*) AS n FROM candidates", "--json"])
                .output()
                .unwrap()
        });
        if let Some(out) = n.filter(|o| o.status.success()) {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            if v[0]["n"].as_i64().unwrap() >= 2 {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    env.cmd()
        .args(["daemon", "--once"])
        .assert()
        .code(2)
        .stderr(contains("another polymorph daemon"));
    // SAFETY: signalling a child we spawned.
    unsafe {
        libc::kill(daemon.id() as i32, libc::SIGTERM);
    }
    let signalled = Instant::now();
    let status = daemon.wait().unwrap();
    assert!(
        signalled.elapsed() < Duration::from_secs(10),
        "took {:?}",
        signalled.elapsed()
    );
    assert_eq!(status.code(), Some(130));
    let runs = env.json(&["history"]);
    assert_eq!(runs[0]["status"], "interrupted");
    let integrity = env.json(&["query", "PRAGMA integrity_check"]);
    assert_eq!(integrity[0]["integrity_check"], "ok");
    let orphans = env.json(&["query", "SELECT COUNT(*) AS n FROM candidates c LEFT JOIN evaluations e ON e.candidate_id = c.id WHERE e.candidate_id IS NULL"]);
    assert_eq!(orphans[0]["n"], 0);
    // A plain run picks the interrupted run up where it stopped.
    let done = runs[0]["candidates"].as_u64().unwrap();
    let report = env.run(&task, &["--proposer", &proposer, "--budget", "40"]);
    assert_eq!(report["run_id"], 1);
    assert_eq!(report["candidates"], 40);
    assert!(done < 40);
}
