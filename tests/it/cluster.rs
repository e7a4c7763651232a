//! Remote targets on real engines started by the tests: an ssh target on loopback and a
//! one-node Slurm cluster with two slots. The loop runs its evaluations there, records here,
//! and survives a dropped connection and a cancelled job without losing or doubling anything.

use super::common::engines::{Slurm, Sshd};
use super::common::records::{assert_consistent, rows};
use super::common::tools::{Tool, missing};
use super::common::{Env, wait_for};
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

fn worker() -> String {
    assert_cmd::cargo::cargo_bin("polymorph")
        .display()
        .to_string()
}

/// `polymorph run` in the background with `extra` arguments, its output into files.
fn spawn_run(env: &Env, task: &Path, extra: &[&str], slurm: Option<&Slurm>) -> Child {
    let mut c = env.process();
    c.args([
        "run",
        task.to_str().unwrap(),
        "--json",
        "--worker",
        &worker(),
    ])
    .args(extra)
    .stdout(std::fs::File::create(env.path().join("run.out")).unwrap())
    .stderr(std::fs::File::create(env.path().join("run.err")).unwrap());
    if let Some(s) = slurm {
        c.env("SLURM_CONF", s.conf());
    }
    c.spawn().unwrap()
}

/// Waits for the run to end; its report and its stderr.
fn finish(env: &Env, mut child: Child) -> (serde_json::Value, String) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the run did not end in 300 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let err = std::fs::read_to_string(env.path().join("run.err")).unwrap();
    let out = std::fs::read_to_string(env.path().join("run.out")).unwrap();
    let report = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (report, err)
}

/// Every seq of the run recorded once, 1..=n.
fn assert_recorded_once(env: &Env, n: i64) {
    let seqs: Vec<i64> = rows(env, "SELECT seq FROM candidates ORDER BY seq")
        .iter()
        .map(|r| r["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=n).collect::<Vec<_>>());
    assert_consistent(env);
}

/// The run ends finished with `n` candidates, each recorded once, after at least one
/// abandoned evaluation; its stderr.
fn assert_retried_and_recorded_once(env: &Env, child: Child, n: i64) -> String {
    let (report, err) = finish(env, child);
    assert!(
        err.contains("evaluation abandoned (not recorded), retrying"),
        "{err}"
    );
    assert_eq!(report["status"], "finished", "{err}");
    assert_eq!(report["candidates"], n);
    assert_recorded_once(env, n);
    err
}

#[test]
fn an_ssh_target_evaluates_in_the_nodes_context_and_records_here() {
    let sshd = match Sshd::start() {
        Ok(s) => s,
        Err(why) => return missing(Tool::Ssh, &format!("ssh target: {why}")),
    };
    let env = Env::new();
    let task = env.task("spin");
    let (target, ssh) = (sshd.target(), sshd.ssh_command());
    let args = [
        "--budget",
        "4",
        "--seed",
        "3",
        "--target",
        &target,
        "--ssh-command",
        &ssh,
    ];
    let (report, err) = finish(&env, spawn_run(&env, &task, &args, None));
    assert_eq!(report["status"], "finished", "{err}");
    assert_eq!(report["candidates"], 4);
    assert!(err.contains(&format!("evaluating on {target}")), "{err}");
    // The node is this machine, so its context is the one probed here.
    let here = env.json(&["context", task.to_str().unwrap()]);
    assert_eq!(report["context_id"], here["context_id"]);
    assert!(report["best_score"].as_f64().unwrap() > 0.0);
    assert_recorded_once(&env, 4);
}

#[test]
fn a_mixed_cluster_gets_a_run_and_a_branch_per_context() {
    let first = match Sshd::start() {
        Ok(s) => s,
        Err(why) => return missing(Tool::Ssh, &format!("ssh targets of two contexts: {why}")),
    };
    let env = Env::new();
    // The second node's C compiler reports another version: another toolchain, so another
    // context (as an H100 node and an H200 node would be).
    let bin = env.path().join("other-cc");
    std::fs::create_dir_all(&bin).unwrap();
    let cc = bin.join("cc");
    std::fs::write(
        &cc,
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'cc (other) 99.1'; exit 0; }\nexec /usr/bin/cc \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&cc, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
    let second = Sshd::start_with(&format!("SetEnv PATH={path}")).unwrap();
    second.authorize(&first);
    let task = env.task("spin");
    std::fs::write(task.join("params.h"), "#define PAD_PERMILLE 800\n").unwrap();
    let steps = env.write(
        "steps.jsonl",
        &[400, 0]
            .map(|p| format!("{{\"files\": {{\"params.h\": \"#define PAD_PERMILLE {p}\\n\"}}}}\n"))
            .concat(),
    );
    let replay = format!("replay:{}", steps.display());
    let (a, b, ssh) = (first.target(), second.target(), first.ssh_command());
    let args = [
        "--proposer",
        &replay,
        "--target",
        &a,
        "--target",
        &b,
        "--ssh-command",
        &ssh,
    ];
    let (reports, err) = finish(&env, spawn_run(&env, &task, &args, None));
    let reports = reports
        .as_array()
        .unwrap_or_else(|| panic!("{reports}\n{err}"));
    assert_eq!(reports.len(), 2, "{err}");
    assert!(err.contains("the targets span 2 contexts"), "{err}");
    let contexts: Vec<&str> = reports
        .iter()
        .map(|r| r["context_id"].as_str().unwrap())
        .collect();
    assert_ne!(contexts[0], contexts[1]);
    for r in reports {
        assert_eq!(r["status"], "finished", "{r}\n{err}");
        assert_eq!(r["accepted"], 2, "{r}\n{err}");
        // Each context's progress lines say which they are.
        assert!(
            err.contains(&format!("{} [  1/", r["context_id"].as_str().unwrap())),
            "{err}"
        );
    }
    // Each result went to its context's branch: the toolchain each node reported is in it.
    let fingerprints = rows(&env, "SELECT id, fingerprint FROM contexts ORDER BY id");
    let other: Vec<bool> = fingerprints
        .iter()
        .map(|c| {
            c["fingerprint"]
                .as_str()
                .unwrap()
                .contains("cc (other) 99.1")
        })
        .collect();
    assert_eq!(other.iter().filter(|o| **o).count(), 1, "{fingerprints:?}");
    let branches = rows(
        &env,
        "SELECT context_id, COUNT(*) AS n FROM ledger_entries WHERE kind = 'accepted' GROUP BY context_id",
    );
    assert_eq!(branches.len(), 2, "{branches:?}");
    assert!(branches.iter().all(|b| b["n"] == 2), "{branches:?}");
}

#[test]
fn a_schedule_with_an_ssh_target_is_run_there_by_the_daemon() {
    let sshd = match Sshd::start() {
        Ok(s) => s,
        Err(why) => {
            return missing(
                Tool::Ssh,
                &format!("a scheduled run on an ssh target: {why}"),
            );
        }
    };
    let env = Env::new();
    let task = env.task("spin");
    let (target, ssh, w) = (sshd.target(), sshd.ssh_command(), worker());
    let add = [
        "schedule",
        "add",
        task.to_str().unwrap(),
        "--every",
        "1h",
        "--budget",
        "2",
        "--proposer",
        "search",
        "--target",
        &target,
        "--ssh-command",
        &ssh,
        "--worker",
        &w,
    ];
    let out = env.cmd().args(add).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.contains(&format!("evaluating {target}")),
        "{said}"
    );
    let daemon = env.cmd().args(["daemon", "--once"]).output().unwrap();
    let err = String::from_utf8_lossy(&daemon.stderr);
    assert!(daemon.status.success(), "{err}");
    assert!(err.contains(&format!("evaluating on {target}")), "{err}");
    let list = env.json(&["schedule", "list"]);
    assert_eq!(list[0]["last_status"], "finished", "{list}\n{err}");
    let here = env.json(&["context", task.to_str().unwrap()]);
    assert_eq!(
        list[0]["last_context"], here["context_id"],
        "the node's context (this machine)"
    );
    assert_recorded_once(&env, 2);
    // Not due again for an hour: the next tick runs nothing.
    env.cmd().args(["daemon", "--once"]).assert().success();
    assert_recorded_once(&env, 2);
}

#[test]
fn a_connection_dropped_mid_benchmark_is_retried_and_recorded_once() {
    let sshd = match Sshd::start() {
        Ok(s) => s,
        Err(why) => return missing(Tool::Ssh, &format!("ssh target: {why}")),
    };
    let env = Env::new();
    let task = env.spin_without_screening();
    let (target, ssh) = (sshd.target(), sshd.ssh_command());
    // A second target nothing listens on: left out at the start, the run goes on.
    let dead = format!(
        "ssh://root@127.0.0.1:{}",
        super::common::engines::free_port()
    );
    let args = [
        "--budget",
        "2",
        "--seed",
        "5",
        "--target",
        &target,
        "--target",
        &dead,
        "--ssh-command",
        &ssh,
    ];
    let child = spawn_run(&env, &task, &args, None);
    // Once the first candidate's benchmarks run (the probe and the reference figures are
    // done), every ssh session of the server is cut.
    let candidates = || {
        rows(
            &env,
            "SELECT count(*) AS n FROM runs WHERE start_score IS NOT NULL",
        )[0]["n"]
            == 1
    };
    assert!(wait_for(Duration::from_secs(120), || {
        env.db().exists() && candidates() && sshd.runs("bench")
    }));
    assert!(sshd.cut_sessions(), "no ssh session to cut");
    let err = assert_retried_and_recorded_once(&env, child, 2);
    assert!(err.contains(&format!("target left out: {dead}")), "{err}");
}

#[test]
fn slurm_evaluates_candidates_in_parallel_job_steps() {
    let slurm = match Slurm::start() {
        Ok(s) => s,
        Err(why) => return missing(Tool::Slurm, &format!("slurm target: {why}")),
    };
    let env = Env::new();
    // Six pairs a candidate: each job runs long enough to be seen beside the other.
    let task = env.spin_without_screening();
    let args = [
        "--budget", "4", "--seed", "7", "--target", "slurm", "--jobs", "2",
    ];
    let mut child = spawn_run(&env, &task, &args, Some(&slurm));
    let mut most = 0;
    while child.try_wait().unwrap().is_none() {
        let n = slurm
            .running()
            .iter()
            .filter(|(_, name)| name == "polymorph-spin-evaluate")
            .count();
        most = most.max(n);
        std::thread::sleep(Duration::from_millis(50));
    }
    let (report, err) = finish(&env, child);
    assert_eq!(report["status"], "finished", "{err}");
    assert_eq!(report["candidates"], 4);
    assert_eq!(most, 2, "never two evaluations in flight at once");
    assert_recorded_once(&env, 4);
}

#[test]
fn a_slurm_job_cancelled_mid_benchmark_is_retried_and_recorded_once() {
    let slurm = match Slurm::start() {
        Ok(s) => s,
        Err(why) => return missing(Tool::Slurm, &format!("slurm target: {why}")),
    };
    let env = Env::new();
    let task = env.spin_without_screening();
    let args = ["--budget", "2", "--seed", "9", "--target", "slurm"];
    let child = spawn_run(&env, &task, &args, Some(&slurm));
    let mut job = None;
    assert!(wait_for(Duration::from_secs(120), || {
        job = slurm
            .running()
            .into_iter()
            .find(|(_, name)| name == "polymorph-spin-evaluate")
            .map(|(id, _)| id);
        job.as_ref().is_some_and(|id| slurm.job_runs(id, "bench"))
    }));
    let id = job.unwrap();
    let cancelled = slurm.command("scancel").arg(&id).status().unwrap();
    assert!(cancelled.success());
    assert_retried_and_recorded_once(&env, child, 2);
}

#[test]
fn sigterm_during_a_slurm_evaluation_ends_its_job_and_the_run_resumes() {
    let slurm = match Slurm::start() {
        Ok(s) => s,
        Err(why) => return missing(Tool::Slurm, &format!("slurm target: {why}")),
    };
    let env = Env::new();
    let task = env.spin_without_screening();
    let args = ["--budget", "3", "--seed", "13", "--target", "slurm"];
    let mut child = spawn_run(&env, &task, &args, Some(&slurm));
    assert!(wait_for(Duration::from_secs(120), || {
        slurm
            .running()
            .iter()
            .any(|(id, name)| name == "polymorph-spin-evaluate" && slurm.job_runs(id, "bench"))
    }));
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let stopped = Instant::now();
    assert!(wait_for(Duration::from_secs(30), || {
        child.try_wait().unwrap().is_some()
    }));
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert!(stopped.elapsed() < Duration::from_secs(20));
    assert!(
        wait_for(Duration::from_secs(15), || slurm.running().is_empty()),
        "a job outlived the run: {:?}",
        slurm.running()
    );
    assert_eq!(
        rows(&env, "SELECT status FROM runs")[0]["status"],
        "interrupted"
    );
    assert_consistent(&env);
    let (report, err) = finish(&env, spawn_run(&env, &task, &args, Some(&slurm)));
    assert_eq!(report["status"], "finished", "{err}");
    assert_eq!(report["run_id"], 1, "the interrupted run was resumed");
    assert_recorded_once(&env, 3);
}

#[test]
fn a_target_that_keeps_failing_is_left_out_and_the_run_resumes_elsewhere() {
    let first = match Sshd::start() {
        Ok(s) => s,
        Err(why) => return missing(Tool::Ssh, &format!("ssh target: {why}")),
    };
    let env = Env::new();
    let task = env.spin_without_screening();
    let run = |sshd: &Sshd| {
        let (target, ssh) = (sshd.target(), sshd.ssh_command());
        let args = [
            "--budget",
            "3",
            "--seed",
            "17",
            "--target",
            &target,
            "--ssh-command",
            &ssh,
        ];
        spawn_run(&env, &task, &args, None)
    };
    let mut child = run(&first);
    assert!(wait_for(Duration::from_secs(120), || first.runs("bench")));
    let gone = first.target();
    first.stop();
    assert!(wait_for(Duration::from_secs(60), || {
        child.try_wait().unwrap().is_some()
    }));
    let status = child.wait().unwrap();
    let err = std::fs::read_to_string(env.path().join("run.err")).unwrap();
    assert_eq!(status.code(), Some(2), "{status:?}: {err}");
    assert!(
        err.contains(&format!("target {gone} left out after 3 faults in a row")),
        "{err}"
    );
    assert_eq!(
        rows(&env, "SELECT status FROM runs")[0]["status"],
        "interrupted",
        "{err}"
    );
    assert_consistent(&env);
    // Another box of the same context takes over: the same run goes on to the end.
    let second = Sshd::start().unwrap();
    let (report, err) = finish(&env, run(&second));
    assert_eq!(report["status"], "finished", "{err}");
    assert_eq!(report["run_id"], 1, "the interrupted run was resumed");
    assert_recorded_once(&env, 3);
}

#[test]
fn a_worker_refuses_a_job_from_another_version_and_says_why() {
    let job = r#"{"protocol":1,"version":"0.0.0-other","task_dir_name":"x"}"#;
    let out = assert_cmd::Command::cargo_bin("polymorph")
        .unwrap()
        .arg("worker")
        .write_stdin(format!("{job}\n"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(stdout.starts_with("POLYMORPH-REPLY "), "{stdout}");
    assert!(
        stdout.contains("this controller is 0.0.0-other"),
        "{stdout}"
    );
    assert!(stdout.contains("install the same version"), "{stdout}");
    // Not a job at all: no reply, an error, so the controller counts a fault.
    let out = assert_cmd::Command::cargo_bin("polymorph")
        .unwrap()
        .arg("worker")
        .write_stdin("hello\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("POLYMORPH-REPLY"));
}

#[test]
fn target_options_without_their_target_are_refused_before_any_work() {
    let env = Env::new();
    let task = env.task("spin");
    let t = task.to_str().unwrap();
    for (args, says) in [
        (
            vec!["--slurm-arg=--partition=gpu"],
            "--slurm-arg is for the slurm target",
        ),
        (
            vec!["--jobs", "2"],
            "--jobs runs candidates in parallel on remote targets",
        ),
        (
            vec!["--target", "local", "--target", "slurm"],
            "cannot be mixed",
        ),
        (
            vec!["--target", "k8s://x"],
            "expected local, slurm, slurm:PARTITION or ssh://",
        ),
    ] {
        env.cmd()
            .args(["run", t, "--budget", "1"])
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    }
    assert!(!env.db().exists(), "nothing was started");
}
