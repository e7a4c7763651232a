//! Trust, round two, on the record side: `query` cannot write anywhere, a hung context probe is
//! named and stops the run, a quarantined candidate can be released or dismissed by a person,
//! warm starts carry a neighbour's whole tree, and `best` says whether its entry was approved.

use crate::common::{Env, edit, files_line, set_judge};
use predicates::str::contains;
use serde_json::Value;
use std::time::{Duration, Instant};

#[test]
fn query_refuses_every_statement_that_can_write() {
    let env = Env::new();
    // A database to query: `schedule add` makes one (query itself never creates it).
    let task = env.task("spin");
    env.cmd()
        .args(["schedule", "add", task.to_str().unwrap(), "--every", "1d"])
        .assert()
        .success();
    env.json(&["query", "SELECT 1 AS one"]);
    let copy = env.path().join("copy.db");
    let attached = env.path().join("attached.db");
    for sql in [
        format!("VACUUM INTO '{}'", copy.display()),
        format!("ATTACH '{}' AS x", attached.display()),
        "WITH w AS (SELECT 1) INSERT INTO contexts SELECT 't', 'x', '{}', 'now' FROM w".into(),
        "SELECT 1; DELETE FROM runs".into(),
        "PRAGMA user_version = 9".into(),
    ] {
        env.cmd()
            .args(["query", &sql])
            .assert()
            .code(2)
            .stderr(contains("query is read-only"));
    }
    assert!(!copy.exists() && !attached.exists());
    assert_eq!(
        env.json(&["query", "SELECT COUNT(*) AS n FROM contexts"])[0]["n"],
        0
    );
    assert_eq!(
        env.json(&["query", "PRAGMA user_version"])[0]["user_version"],
        0
    );
}

#[test]
fn a_hung_context_probe_is_named_and_stops_the_command() {
    let env = Env::new();
    let task = env.task("spin");
    let path = env.path_with_fake("nvidia-smi", "exec sleep 987652");
    let started = Instant::now();
    env.cmd()
        .env("PATH", &path)
        .args(["context", task.to_str().unwrap()])
        .timeout(Duration::from_secs(60))
        .assert()
        .code(2)
        .stderr(contains("context probe `nvidia-smi"))
        .stderr(contains("did not answer within 10s"));
    assert!(started.elapsed() < Duration::from_secs(30));
    let ps = std::process::Command::new("ps")
        .args(["-eo", "args"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&ps.stdout).contains("sleep 987652"),
        "the hung probe was killed with its process group"
    );
}

/// The closed form is about 20x faster than the loop at the n this test benches: with a
/// plausibility factor of 1.3 and no hand-tuned baseline, a real gain that needs a person.
fn closed_form() -> String {
    "build() { :; }\ncompute() { echo $(($1 * ($1 + 1) / 2)); }\n".to_string()
}

#[test]
fn a_person_releases_or_dismisses_a_quarantined_candidate() {
    let env = Env::new();
    let task = env.task("adversary");
    edit(
        &task.join("task.toml"),
        "min_gain = 0.02",
        "min_gain = 0.02\nplausible_factor = 1.3",
    );
    // The two quarantined candidates are the fixture, not the test: each gets the full
    // judgement, with no early rejection after pairs that a loaded machine (the whole suite on 2
    // cores) slowed. At the fixture's n = 2000 the loop takes ~3 ms and the closed form ~1 ms,
    // nearly all of it the fork of `date`; on a loaded machine fork times swung the measured gain
    // down to +20% (CI, twice). At n = 20000 the loop takes ~20 ms and the gain is ~20x.
    set_judge(&task, "screen_pairs = 0\nmax_pairs = 40");
    edit(&task.join("bench.sh"), "n=2000", "n=20000");
    let lines = [
        files_line("impl.sh", &closed_form(), "closed form"),
        files_line(
            "impl.sh",
            &format!("# again\n{}", closed_form()),
            "closed form again",
        ),
    ];
    let replay = env.write("q.jsonl", &(lines.join("\n") + "\n"));
    let report = env.run(
        &task,
        &["--proposer", &format!("replay:{}", replay.display())],
    );
    let reasons = env.json(&[
        "query",
        "SELECT verdict, reason FROM evaluations ORDER BY candidate_id",
    ]);
    assert_eq!(report["quarantined"], 2, "{report}\n{reasons}");
    let ids = env.json(&["query", "SELECT c.id FROM candidates c ORDER BY c.id"]);
    let (first, second) = (ids[0]["id"].to_string(), ids[1]["id"].to_string());
    env.cmd()
        .args(["review"])
        .assert()
        .success()
        .stdout(contains("quarantined, waiting for a person"));
    // A release needs a reason; an entry id is not a candidate; a non-quarantined one is refused.
    env.cmd()
        .args(["approve", &first, "--by", "alice"])
        .assert()
        .code(2)
        .stderr(contains("needs --note"));
    env.cmd()
        .args([
            "approve",
            &first,
            "--by",
            "alice",
            "--note",
            "the closed form is exact",
        ])
        .assert()
        .success()
        .stdout(contains("released from quarantine by alice"));
    let best = env.json(&["best", task.to_str().unwrap(), "--approved"]);
    assert_eq!(best["kind"], "accepted", "{best}");
    assert_eq!(best["review_state"], "approved");
    let log = env.git(&["log", "--all", "--format=%s"]);
    assert!(log.contains("released from quarantine by alice"), "{log}");
    // The second was measured against the task as given: the branch has moved on since.
    env.cmd()
        .args(["approve", &second, "--note", "same"])
        .assert()
        .code(2)
        .stderr(contains("has moved on"));
    env.cmd()
        .args(["reject", &second, "--by", "bob", "--reason", "a duplicate"])
        .assert()
        .success()
        .stdout(contains("dismissed by bob"));
    env.cmd()
        .args(["reject", &second, "--reason", "again"])
        .assert()
        .code(2)
        .stderr(contains("already dismissed by bob"));
    let d = env.json(&["query", "SELECT candidate_id, decision, decided_by, reason FROM quarantine_decisions ORDER BY candidate_id"]);
    assert_eq!(d[0]["decision"], "released");
    assert_eq!(d[0]["decided_by"], "alice");
    assert_eq!(d[1]["decision"], "dismissed");
    env.cmd()
        .args(["review"])
        .assert()
        .success()
        .stdout(contains("nothing waits for review"));
}

#[test]
fn best_says_whether_its_entry_was_approved() {
    let env = Env::new();
    let task = env.accepted_entries(&[0]);
    let t = task.to_str().unwrap();
    let best = env.json(&["best", t]);
    assert_eq!(best["review_state"], "pending");
    assert_eq!(best["approved"], false);
    env.cmd()
        .args(["best", t])
        .assert()
        .success()
        .stdout(contains("PENDING"));
    // For deployment: the best approved entry, here the task as given.
    let approved = env.json(&["best", t, "--approved"]);
    assert_eq!(approved["kind"], "origin", "{approved}");
    assert_eq!(approved["approved"], true);
    env.cmd()
        .args(["approve", &format!("e{}", best["entry"]), "--by", "carol"])
        .assert()
        .success();
    assert_eq!(env.json(&["best", t, "--approved"])["entry"], best["entry"]);
}

#[test]
fn a_warm_start_brings_the_neighbours_edited_code_too() {
    let env = Env::new();
    let task = env.task("spin");
    // A large, clear gain (800 -> 0 wasted steps per thousand), so the first run accepts it
    // whatever else the machine is doing.
    std::fs::write(task.join("params.h"), "#define PAD_PERMILLE 800\n").unwrap();
    let kernel = std::fs::read_to_string(task.join("kernel.c")).unwrap();
    let edited = format!("/* tuned by hand */\n{kernel}");
    let line = serde_json::json!({ "files": { "kernel.c": edited, "params.h": "#define PAD_PERMILLE 0\n" } }).to_string();
    let replay = env.write("edit.jsonl", &(line + "\n"));
    let first = env.run(
        &task,
        &["--proposer", &format!("replay:{}", replay.display())],
    );
    assert_eq!(first["accepted"], 1, "{first}");
    std::fs::write(task.join("workload.json"), "{\"steps\": 2}\n").unwrap();
    env.run(&task, &["--budget", "1"]);
    let c = env.json(&[
        "query",
        "SELECT kind, payload, origin FROM candidates WHERE run_id = 2",
    ]);
    assert!(
        c[0]["origin"].as_str().unwrap().starts_with("warm-start("),
        "{c}"
    );
    assert_eq!(c[0]["kind"], "files", "{c}");
    let payload: Value = serde_json::from_str(c[0]["payload"].as_str().unwrap()).unwrap();
    assert_eq!(payload["files"]["kernel.c"], edited.as_str());
    assert_eq!(payload["files"]["params.h"], "#define PAD_PERMILLE 0\n");
}

#[test]
fn a_tree_judged_against_an_incumbent_is_not_judged_again_in_this_run_or_the_next() {
    let env = Env::new();
    let task = env.task("spin");
    let kernel = std::fs::read_to_string(task.join("kernel.c")).unwrap();
    let same = files_line(
        "kernel.c",
        &format!("/* tidier */\n{kernel}"),
        "comment only",
    );
    let other = files_line(
        "kernel.c",
        &format!("/* other */\n{kernel}"),
        "comment only",
    );
    let run = |lines: &[&str], name: &str| {
        let replay = env.write(name, &(lines.join("\n") + "\n"));
        let replay = format!("replay:{}", replay.display());
        env.run(
            &task,
            &["--proposer", &replay, "--budget", &lines.len().to_string()],
        )
    };
    // Sent twice in one run, then again in the next: judged once, against the same incumbent.
    let first = run(&[&same, &same, &other], "one.jsonl");
    assert_eq!(first["accepted"], 0, "{first}");
    run(&[&same], "two.jsonl");
    let rows = env.json(&[
        "query",
        "SELECT c.run_id, c.seq, e.verdict, e.stage, e.reason, e.pairs, c.diff FROM candidates c \
         JOIN evaluations e ON e.candidate_id = c.id ORDER BY c.id",
    ]);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 4, "{rows:?}");
    let judged = |r: &Value| r["pairs"].as_i64().unwrap() > 0;
    assert!(judged(&rows[0]) && judged(&rows[2]), "{rows:?}");
    for repeat in [&rows[1], &rows[3]] {
        assert_eq!(repeat["verdict"], "failed", "{repeat}");
        assert_eq!(repeat["stage"], "verify", "{repeat}");
        assert_eq!(repeat["pairs"], 0, "{repeat}");
        assert_eq!(repeat["diff"], rows[0]["diff"], "{repeat}");
        let reason = repeat["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("the same tree as candidate 1 of run 1, already judged against this incumbent (rejected"),
            "{reason}"
        );
    }
}
