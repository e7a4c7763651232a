//! Review on a real ledger and runs.db from a real run: review lists pending entries, approve
//! records who and when, reject reverts on the branch (never rewriting history), rejects what
//! was built on the entry, and the next run starts from the best entry left; export produces a
//! patch `git apply` and `git am` accept.

use crate::common::{Env, int_column};
use predicates::str::contains;
use serde_json::{Value, json};

fn git_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn review_approve_reject_and_the_next_run() {
    let env = Env::new();
    let task = env.accepted_entries(&[400, 150, 0]);
    let pending = env.json(&["review"]);
    let ids = int_column(&pending, "entry");
    assert_eq!(
        ids,
        [2, 3, 4],
        "oldest first, the task as given (e1) is not reviewable"
    );
    assert!(pending[0]["gain_low"].as_f64().unwrap() > 0.0);

    env.cmd()
        .args(["approve", "e2", "--by", "alice"])
        .assert()
        .success()
        .stdout(contains("e2 approved by alice"));
    let e2 = env.json(&[
        "query",
        "SELECT review_state, reviewed_by, reviewed_at FROM ledger_entries WHERE id = 2",
    ]);
    assert_eq!(e2[0]["review_state"], "approved");
    assert_eq!(e2[0]["reviewed_by"], "alice");
    assert!(e2[0]["reviewed_at"].as_str().unwrap().starts_with("20"));
    env.cmd()
        .args(["approve", "e1"])
        .assert()
        .code(2)
        .stderr(contains("nothing to review"));

    let branch = env.json(&["best", task.to_str().unwrap()])["branch"]
        .as_str()
        .unwrap()
        .to_string();
    let before: Vec<String> = env
        .git(&["log", "--format=%H", &branch])
        .lines()
        .map(String::from)
        .collect();
    let rejection = env.json(&[
        "reject",
        "e3",
        "--reason",
        "too risky for production",
        "--by",
        "bob",
    ]);
    assert_eq!(rejection["rejected"], json!([3, 4]), "e4 was built on e3");
    assert_eq!(rejection["restores"], 2);
    // History is not rewritten: the old commits are still there, under one revert commit.
    let after: Vec<String> = env
        .git(&["log", "--format=%H", &branch])
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(after[1..], before[..]);
    assert!(
        env.git(&["log", "-1", "--format=%s", &branch])
            .starts_with("Revert e3: too risky for production")
    );
    let e2_commit = env.json(&[
        "query",
        "SELECT commit_sha FROM ledger_entries WHERE id = 2",
    ])[0]["commit_sha"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        env.git(&["diff", &e2_commit, &branch]),
        "",
        "the revert restores e2's tree"
    );
    let states = env.json(&[
        "query",
        "SELECT id, review_state, review_reason FROM ledger_entries ORDER BY id",
    ]);
    assert_eq!(
        states[3]["review_reason"],
        "built on rejected e3: too risky for production"
    );
    env.cmd()
        .args(["reject", "e3", "--reason", "again"])
        .assert()
        .code(2)
        .stderr(contains("already rejected"));
    assert_eq!(env.json(&["review"]).as_array().unwrap().len(), 0);

    // The best is e2 again, and the next run starts from it, its commits following the revert.
    let best = env.json(&["best", task.to_str().unwrap()]);
    assert_eq!(best["entry"], 2);
    let report = env.run(&task, &["--budget", "2", "--seed", "1"]);
    let parents = env.json(&["query", &format!("SELECT DISTINCT parent_entry_id AS p FROM candidates WHERE run_id = {} ORDER BY p LIMIT 1", report["run_id"])]);
    assert_eq!(parents[0]["p"], 2);
    let tip = env.git(&["rev-parse", &branch]);
    let revert = rejection["revert_commit"].as_str().unwrap();
    let ancestry = git_in(
        &env.ledger(),
        &["merge-base", "--is-ancestor", revert, tip.trim()],
    );
    assert!(
        ancestry.status.success(),
        "later commits build on the revert commit"
    );
}

#[test]
fn export_makes_a_patch_git_accepts() {
    let env = Env::new();
    let task = env.accepted_entries(&[400, 150, 0]);
    let patch_path = env.path().join("e4.patch");
    env.cmd()
        .args(["export", "e4", "-o", patch_path.to_str().unwrap()])
        .assert()
        .success();
    let patch = std::fs::read_to_string(&patch_path).unwrap();
    assert!(patch.starts_with("From "));
    assert!(patch.contains("Subject: [PATCH] spin: msteps"));
    assert!(
        patch.contains("-#define PAD_PERMILLE 800\n+#define PAD_PERMILLE 0\n"),
        "{patch}"
    );

    // git am in a repository holding the task as given.
    let upstream = env.path().join("upstream");
    std::fs::create_dir_all(&upstream).unwrap();
    for f in [
        "kernel.c",
        "kernel.h",
        "params.h",
        "bench.c",
        "check.c",
        "Makefile",
        "task.toml",
    ] {
        std::fs::copy(task.join(f), upstream.join(f)).unwrap();
    }
    assert!(git_in(&upstream, &["init", "-q"]).status.success());
    assert!(git_in(&upstream, &["add", "."]).status.success());
    assert!(
        git_in(&upstream, &["commit", "-qm", "upstream"])
            .status
            .success()
    );
    let am = git_in(&upstream, &["am", patch_path.to_str().unwrap()]);
    assert!(
        am.status.success(),
        "{}",
        String::from_utf8_lossy(&am.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(upstream.join("params.h")).unwrap(),
        "#define PAD_PERMILLE 0\n"
    );
    let log = git_in(&upstream, &["log", "-1", "--format=%s"]);
    assert!(String::from_utf8_lossy(&log.stdout).starts_with("spin: msteps"));

    // git apply on a plain copy.
    let plain = env.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::copy(task.join("params.h"), plain.join("params.h")).unwrap();
    let apply = git_in(&plain, &["apply", patch_path.to_str().unwrap()]);
    assert!(
        apply.status.success(),
        "{}",
        String::from_utf8_lossy(&apply.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(plain.join("params.h")).unwrap(),
        "#define PAD_PERMILLE 0\n"
    );

    env.cmd()
        .args(["export", "e1"])
        .assert()
        .code(2)
        .stderr(contains("no change to export"));
    env.cmd()
        .args(["export", "e99"])
        .assert()
        .code(2)
        .stderr(contains("no ledger entry e99"));
    let _: Value = env.json(&["review"]);
}

#[test]
fn history_filters_and_query_views_answer_the_common_questions() {
    let env = Env::new();
    env.accepted_entries(&[400, 150, 0]);
    let ctx = env.json(&["history"])[0]["context_id"]
        .as_str()
        .unwrap()
        .to_string();
    let count = |args: &[&str]| {
        env.json(&[&["history"], args].concat())
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(count(&["--verdict", "accepted"]), 1);
    assert_eq!(count(&["--verdict", "quarantined"]), 0);
    assert_eq!(count(&["--verdict", "held"]), 0);
    assert_eq!(count(&["--context", &ctx]), 1);
    assert_eq!(count(&["--context", "000000000000"]), 0);
    assert_eq!(count(&["--since", "1h"]), 1);
    assert_eq!(count(&["--since", "2099-01-01"]), 0);
    assert_eq!(count(&["--task", "spin"]), 1);
    assert_eq!(count(&["--task", "other"]), 0);
    env.cmd()
        .args(["history", "--verdict", "great"])
        .assert()
        .code(2)
        .stderr(contains("expected one of"));
    env.cmd()
        .args(["history", "--since", "yesterday"])
        .assert()
        .code(2)
        .stderr(contains("--since"));

    let stats = env.json(&[
        "query",
        "SELECT proposer, candidates, accepted, accept_rate_pct FROM proposer_stats",
    ]);
    assert_eq!(stats[0]["proposer"], "replay");
    assert_eq!(stats[0]["accepted"], 3);
    assert_eq!(stats[0]["accept_rate_pct"], 100.0);
    let last = env.json(&[
        "query",
        "SELECT entries, last_accepted_at FROM last_improvement",
    ]);
    assert_eq!(last[0]["entries"], 3);
    let tried = env.json(&[
        "query",
        "SELECT verdict, reason FROM candidate_results WHERE run_id = 1 ORDER BY seq",
    ]);
    assert_eq!(tried.as_array().unwrap().len(), 3);
}

#[test]
fn an_approve_racing_a_reject_never_leaves_a_rejected_entry_approved() {
    for trial in 0..3 {
        let env = Env::new();
        env.accepted_entries(&[400]);
        let start = |args: &[&str]| {
            env.process()
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let approve_args = ["approve", "e2", "--by", "ann"];
        let reject_args = ["reject", "e2", "--reason", "wrong", "--by", "bob"];
        let outcomes =
            [start(&approve_args), start(&reject_args)].map(|c| c.wait_with_output().unwrap());
        // An action that found the database busy (the other held its lock) is tried again, as
        // a reviewer would.
        let settle = |out: std::process::Output, args: &[&str]| {
            let busy = String::from_utf8_lossy(&out.stderr).contains("another polymorph run");
            if busy {
                start(args).wait_with_output().unwrap()
            } else {
                out
            }
        };
        let [approve, reject] = outcomes;
        let approve = settle(approve, &approve_args);
        let reject = settle(reject, &reject_args);
        assert!(reject.status.success(), "trial {trial}: {reject:?}");
        let state = env.json(&[
            "query",
            "SELECT review_state FROM ledger_entries WHERE id = 2",
        ]);
        assert_eq!(
            state[0]["review_state"], "rejected",
            "trial {trial}: {approve:?}"
        );
        if !approve.status.success() {
            let why = String::from_utf8_lossy(&approve.stderr);
            assert!(why.contains("rejected"), "trial {trial}: {why}");
        }
    }
}
