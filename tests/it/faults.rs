//! Faults: SIGKILL at random moments, a database that is not polymorph's, a ledger that cannot
//! be written, a task directory that vanishes mid-run. Each gives a clear error or a consistent
//! state that the next run resumes from, and nothing recorded is lost.

use crate::common::records::{assert_consistent, rows};
use crate::common::tools::{Tool, bwrap, missing};
use crate::common::{Env, files_line};
use predicates::str::contains;
use rand::{Rng, SeedableRng};
use std::time::{Duration, Instant};

/// Replay candidates for a long-ish run on spin: comment-only changes mixed with real gains.
fn replay(env: &Env, task: &std::path::Path, n: usize) -> std::path::PathBuf {
    let kernel = std::fs::read_to_string(task.join("kernel.c")).unwrap();
    let lines: Vec<String> = (0..n)
        .map(|i| match i % 5 {
            1 => {
                let pad = [100, 50, 25, 0][i / 5 % 4];
                serde_json::json!({ "params": { "PAD_PERMILLE": pad } }).to_string()
            }
            _ => files_line(
                "kernel.c",
                &format!("/* variant {i} */\n{kernel}"),
                "comment only",
            ),
        })
        .collect();
    env.write("faults.jsonl", &(lines.join("\n") + "\n"))
}

#[test]
fn sigkill_at_random_moments_loses_nothing_and_resumes() {
    let env = Env::new();
    // Every candidate gets at least the six pairs the kill delays below were chosen for: with
    // screening, most would end after two and a trial could finish the whole run.
    let task = env.spin_without_screening();
    let file = replay(&env, &task, 25);
    let proposer = format!("replay:{}", file.display());
    let args = [
        "run",
        task.to_str().unwrap(),
        "--proposer",
        &proposer,
        "--budget",
        "25",
    ];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2024);
    let mut kills = 0;
    for _ in 0..10 {
        let mut child = env.spawn(&args);
        let delay = Duration::from_millis(rng.random_range(100..2500));
        let started = Instant::now();
        while started.elapsed() < delay && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(10));
        }
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            kills += 1;
        }
        child.wait().unwrap();
        assert_consistent(&env);
    }
    assert!(kills >= 8, "only {kills} of 10 trials were killed mid-run");
    let report = env.json(&args);
    assert_eq!(report["status"], "finished");
    assert_eq!(report["run_id"], 1, "every attempt resumed the same run");
    assert_eq!(report["candidates"], 25);
    assert_consistent(&env);
    let seqs = rows(&env, "SELECT seq FROM candidates ORDER BY seq");
    let seqs: Vec<i64> = seqs.iter().map(|r| r["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, (1..=25).collect::<Vec<_>>());
    // The branch points at the newest entry.
    let tip = rows(
        &env,
        "SELECT commit_sha FROM ledger_entries ORDER BY id DESC LIMIT 1",
    );
    assert_eq!(
        env.git(&["rev-parse", report["branch"].as_str().unwrap()])
            .trim(),
        tip[0]["commit_sha"].as_str().unwrap()
    );
}

#[test]
fn a_database_that_is_not_polymorphs_is_refused_untouched() {
    let env = Env::new();
    std::fs::write(
        env.db(),
        b"this is not a database at all, just some bytes in a file",
    )
    .unwrap();
    let before = std::fs::read(env.db()).unwrap();
    env.cmd()
        .args(["history"])
        .assert()
        .code(2)
        .stderr(contains("runs.db"));
    assert_eq!(std::fs::read(env.db()).unwrap(), before);

    let other = Env::new();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let opts = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(other.db())
            .create_if_missing(true);
        let pool = sqlx::SqlitePool::connect_with(opts).await.unwrap();
        sqlx::query("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
    });
    other
        .cmd()
        .args(["history"])
        .assert()
        .code(2)
        .stderr(contains("is not a polymorph database").and(contains("invoices")));
}

#[test]
fn a_ledger_that_is_not_a_ledger_or_not_writable_fails_before_any_work() {
    let env = Env::new();
    let task = env.task("spin");
    std::fs::create_dir_all(env.ledger()).unwrap();
    std::fs::write(env.ledger().join("notes.txt"), "mine").unwrap();
    env.cmd()
        .args(["run", task.to_str().unwrap(), "--budget", "1"])
        .assert()
        .code(2)
        .stderr(contains("is not a polymorph ledger"));
    assert_eq!(
        std::fs::read_to_string(env.ledger().join("notes.txt")).unwrap(),
        "mine"
    );

    // A read-only ledger: polymorph runs under bwrap with the ledger bound read-only (as root,
    // permissions alone would not stop it).
    let Some(bwrap) = bwrap() else {
        missing(Tool::Bwrap, "bwrap not available: read-only ledger case");
        return;
    };
    let env = Env::new();
    let task = env.task("spin");
    env.cmd()
        .args(["run", task.to_str().unwrap(), "--budget", "1"])
        .assert()
        .success();
    let runs_before = rows(&env, "SELECT COUNT(*) AS n FROM candidates")[0]["n"].clone();
    let ledger = env.ledger();
    let status = std::process::Command::new(bwrap)
        .args(["--bind", "/", "/", "--dev", "/dev", "--ro-bind"])
        .arg(&ledger)
        .arg(&ledger)
        .arg(assert_cmd::cargo::cargo_bin("polymorph"))
        .args([
            "--db",
            env.db().to_str().unwrap(),
            "--ledger",
            ledger.to_str().unwrap(),
            "run",
            task.to_str().unwrap(),
            "--budget",
            "3",
        ])
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&status.stderr).contains("is not writable"),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert_eq!(
        rows(&env, "SELECT COUNT(*) AS n FROM candidates")[0]["n"],
        runs_before
    );
    assert_consistent(&env);
}

#[test]
fn a_task_directory_that_vanishes_mid_run_loses_nothing() {
    let env = Env::new();
    let task = env.task("spin");
    let file = replay(&env, &task, 12);
    let proposer = format!("replay:{}", file.display());
    let mut child = env.spawn(&[
        "run",
        task.to_str().unwrap(),
        "--proposer",
        &proposer,
        "--budget",
        "12",
    ]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        if env.db().exists()
            && rows(&env, "SELECT COUNT(*) AS n FROM candidates")[0]["n"]
                .as_i64()
                .unwrap_or(0)
                >= 2
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::remove_dir_all(&task).unwrap();
    let status = child.wait().unwrap();
    // The run works from its in-memory copy of the task and finishes; either way the record is whole.
    assert!(
        status.code() == Some(0) || status.code() == Some(2),
        "{status:?}"
    );
    assert_consistent(&env);
    assert!(
        rows(&env, "SELECT COUNT(*) AS n FROM candidates")[0]["n"]
            .as_i64()
            .unwrap()
            >= 2
    );
}

use predicates::prelude::PredicateBooleanExt;

#[test]
fn a_target_that_hangs_up_before_reading_its_job_is_a_fault_not_a_crash() {
    // An "ssh" that exits at once, as ssh does when the host is down, without reading the job.
    // The job carries the task directory; a file larger than a pipe's buffer makes polymorph's
    // write of it meet the closed pipe every time, never only when the race goes that way.
    let env = Env::new();
    let task = env.spin_without_screening();
    std::fs::write(task.join("data.bin"), vec![b'x'; 1 << 20]).unwrap();
    let ssh = env.write(
        "dead-ssh",
        "#!/bin/sh\necho 'ssh: connect to host: Connection refused' >&2\nexit 255\n",
    );
    std::fs::set_permissions(&ssh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = env
        .cmd()
        .args(["run", task.to_str().unwrap(), "--budget", "2"])
        .args(["--target", "ssh://nobody@127.0.0.1:9", "--ssh-command"])
        .arg(&ssh)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{:?}: {err}", out.status);
    assert!(err.contains("target left out"), "{err}");
    assert!(err.contains("no target answered"), "{err}");
    assert!(err.contains("Connection refused"), "{err}");
    assert_consistent(&env);
}

/// This process as a sandbox token names its owner: PID namespace, PID, start time.
fn owner_of_this_test() -> (String, String, String) {
    let ns = std::fs::read_link("/proc/self/ns/pid").unwrap();
    let ns = ns.to_str().unwrap();
    let ns = ns
        .trim_start_matches("pid:[")
        .trim_end_matches(']')
        .to_string();
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 1..];
    let started = after.split_whitespace().nth(19).unwrap().to_string();
    (ns, std::process::id().to_string(), started)
}

#[test]
fn sandboxed_processes_a_killed_polymorph_left_behind_are_killed_by_the_next() {
    // What bwrap leaves when its parent dies as it starts (its parent-death signal set too
    // late): a process marked with the token of a polymorph that is gone. Stood in for by a
    // `sleep` marked with a dead PID, beside one marked by this live test process.
    let env = Env::new();
    let (ns, me, started) = owner_of_this_test();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let marked = |owner: String| {
        std::process::Command::new("sleep")
            .arg("300")
            .env("POLYMORPH_SANDBOX_TOKEN", format!("{owner}-0"))
            .spawn()
            .unwrap()
    };
    let mut orphan = marked(format!("{ns}.{dead}.1"));
    let mut alive = marked(format!("{ns}.{me}.{started}"));
    let task = env.task("spin");
    env.cmd()
        .args(["check", task.to_str().unwrap(), "--rounds", "1"])
        .assert()
        .success();
    let reaped = crate::common::wait_for(Duration::from_secs(5), || {
        orphan.try_wait().unwrap().is_some()
    });
    let still = alive.try_wait().unwrap().is_none();
    alive.kill().ok();
    alive.wait().ok();
    if !reaped {
        orphan.kill().ok();
    }
    use std::os::unix::process::ExitStatusExt;
    assert!(reaped, "the orphan outlived the next polymorph's start");
    assert_eq!(orphan.wait().unwrap().signal(), Some(9));
    assert!(still, "a process of a live polymorph was killed");
}
