//! A node that lies: a worker that runs the real `polymorph worker` and reports the candidate's
//! samples three times faster than measured (under the plausibility factor, so no other rule
//! stops it), repeating its pairs until the series is long enough to accept, on a null change.
//! Whatever a confirming place measures itself decides: the controller (`--verify-on
//! controller`) or a second, honest node (the default with two targets) refuses it, and nothing
//! reaches the ledger; trusting the same node lands the lie. A worker that sends no pairs fails
//! its candidates, and the run goes on. A node whose sandbox cannot start the candidate's
//! commands is a faulty target: the candidate goes to another, and a run left without one stops
//! as interrupted with nothing recorded of it.

use super::common::engines::Sshd;
use super::common::tools::{Tool, missing};
use super::common::{Env, files_line};
use std::os::unix::fs::PermissionsExt as _;

/// What the liar does to a series.
#[derive(Clone, Copy, Debug)]
enum Lie {
    /// Reports the candidate three times faster, its pairs repeated to 8.
    Faster,
    /// Sends the series with no pairs at all: nothing the judge can decide on.
    Empty,
    /// Says its sandbox could not start the candidate's commands: the node's fault.
    Unstartable,
}

/// The liar, as the `--worker` of every target: it lies to sessions that came in on `port`
/// (through `SSH_CONNECTION`), or to all when `port` is `None`.
fn liar(env: &Env, port: Option<u16>, how: Lie) -> String {
    let real = assert_cmd::cargo::cargo_bin("polymorph");
    let script = format!(
        r#"#!/usr/bin/python3
import json, os, subprocess, sys
line = sys.stdin.readline()
real = subprocess.Popen([{real:?}, "worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
real.stdin.write(line.encode())
real.stdin.flush()
out = real.stdout.read().decode()
real.wait()
port = (os.environ.get("SSH_CONNECTION", "").split() or [""])[-1]
lie = {lie_to:?} in ("", port)
marker = "POLYMORPH-REPLY "
for l in out.splitlines():
    if lie and l.startswith(marker):
        reply = json.loads(l[len(marker):])
        result = reply["result"]
        if isinstance(result, dict) and "Evaluated" in result and {how:?} == "Unstartable":
            result["Evaluated"]["harness_fault"] = "could not run `make`: bwrap could not set up the sandbox (a stand-in)"
        elif isinstance(result, dict) and "Evaluated" in result:
            pairs = result["Evaluated"]["pairs"]
            if {how:?} == "Empty":
                pairs = []
            pairs = [json.loads(json.dumps(pairs[i % len(pairs)])) for i in range(8 if pairs else 0)]
            for _incumbent, candidate in pairs:
                for case in candidate["cases"]:
                    candidate["cases"][case] *= 3
            result["Evaluated"]["pairs"] = pairs
        l = marker + json.dumps(reply)
    print(l)
sys.exit(real.returncode)
"#,
        real = real.display().to_string(),
        lie_to = port.map(|p| p.to_string()).unwrap_or_default(),
        how = format!("{how:?}"),
    );
    let path = env.write("liar.py", &script);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// The spin task and a replay of two null changes (comments): no real gain at all.
fn null_changes(env: &Env) -> (String, String) {
    let task = env.task("spin");
    let lines: Vec<String> = (1..=2)
        .map(|k| {
            let tree = format!("#define PAD_PERMILLE 200\n/* the same work, {k} */\n");
            files_line("params.h", &tree, "a null change") + "\n"
        })
        .collect();
    let replay = env.write("null.jsonl", &lines.concat());
    (
        task.display().to_string(),
        format!("replay:{}", replay.display()),
    )
}

/// `polymorph run` of the null changes on `targets` through `worker`: the report, the verdicts
/// and reasons of the candidates, and the ledger's accepted entries.
fn run(env: &Env, targets: &[String], ssh: &str, worker: &str, extra: &[&str]) -> RunOutcome {
    let (task, replay) = null_changes(env);
    let mut args: Vec<&str> = vec![
        "--proposer",
        &replay,
        "--worker",
        worker,
        "--ssh-command",
        ssh,
    ];
    for t in targets {
        args.extend(["--target", t]);
    }
    args.extend(extra);
    let report = env.run(std::path::Path::new(&task), &args);
    let rows = env.json(&[
        "query",
        "SELECT verdict, reason FROM evaluations ORDER BY candidate_id",
    ]);
    let field = |k: &str| -> Vec<String> {
        let rows = rows.as_array().unwrap();
        rows.iter()
            .map(|r| r[k].as_str().unwrap().to_string())
            .collect()
    };
    let entries = env.json(&[
        "query",
        "SELECT COUNT(*) AS n FROM ledger_entries WHERE kind = 'accepted'",
    ]);
    RunOutcome {
        verdicts: field("verdict"),
        reasons: field("reason"),
        entries: entries[0]["n"].as_i64().unwrap(),
        report,
    }
}

/// Two ssh targets and one ssh command that logs in to both (each sshd trusts its own user
/// key); `None`, reported as missing, where sshd cannot be started.
fn two_targets() -> Option<(Sshd, Sshd, String)> {
    let (a, b) = match (Sshd::start(), Sshd::start()) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(why), _) | (_, Err(why)) => {
            missing(Tool::Ssh, &format!("two ssh targets: {why}"));
            return None;
        }
    };
    let second_key = b
        .ssh_command()
        .split_whitespace()
        .skip_while(|w| *w != "-i")
        .nth(1)
        .unwrap()
        .to_string();
    let ssh = format!("{} -i {second_key}", a.ssh_command());
    Some((a, b, ssh))
}

struct RunOutcome {
    verdicts: Vec<String>,
    reasons: Vec<String>,
    entries: i64,
    report: serde_json::Value,
}

#[test]
fn a_lying_worker_gets_nothing_into_the_ledger_when_the_controller_confirms() {
    let sshd = match Sshd::start() {
        Ok(s) => s,
        Err(why) => return missing(Tool::Ssh, &format!("lying worker: {why}")),
    };
    let (target, ssh) = (vec![sshd.target()], sshd.ssh_command());

    let env = Env::new();
    let worker = liar(&env, None, Lie::Faster);
    let here = run(&env, &target, &ssh, &worker, &["--verify-on", "controller"]);
    assert_eq!(here.verdicts, ["rejected", "rejected"], "{}", here.report);
    for reason in &here.reasons {
        let refused = "not confirmed in a fresh series: on the controller:";
        assert!(reason.starts_with(refused), "{reason}");
    }
    assert_eq!(here.entries, 0);

    // The same lie, confirmed by the node that told it, lands: what the check above prevents.
    let env = Env::new();
    let worker = liar(&env, None, Lie::Faster);
    let trusted = run(&env, &target, &ssh, &worker, &["--verify-on", "same-node"]);
    let accepted = ["accepted", "accepted"];
    assert_eq!(trusted.verdicts, accepted, "{:?}", trusted.reasons);
    assert_eq!(trusted.entries, 2);
}

#[test]
fn a_node_that_sends_a_series_too_short_to_judge_fails_its_candidates_and_the_run_goes_on() {
    let sshd = match Sshd::start() {
        Ok(s) => s,
        Err(why) => return missing(Tool::Ssh, &format!("short series: {why}")),
    };
    let (target, ssh) = (vec![sshd.target()], sshd.ssh_command());
    let env = Env::new();
    let worker = liar(&env, None, Lie::Empty);
    let out = run(&env, &target, &ssh, &worker, &["--verify-on", "controller"]);
    assert_eq!(out.verdicts, ["failed", "failed"], "{}", out.report);
    for reason in &out.reasons {
        assert!(
            reason.contains(": its series ended after 0 pairs, before the judge here decided")
                && reason.starts_with("on "),
            "{reason}"
        );
    }
    assert_eq!(out.entries, 0);
}

#[test]
fn with_two_targets_a_second_node_confirms_and_refuses_the_lie_of_the_first() {
    let Some((lying, honest, ssh)) = two_targets() else {
        return;
    };
    let env = Env::new();
    let worker = liar(&env, Some(lying.port), Lie::Faster);
    // Targets take turns, so one of the two candidates' first series is the liar's at least.
    let targets = vec![lying.target(), honest.target()];
    let out = run(&env, &targets, &ssh, &worker, &[]);
    assert_eq!(out.verdicts, ["rejected", "rejected"], "{}", out.report);
    let refused = "not confirmed in a fresh series: on ";
    assert!(
        out.reasons.iter().any(|r| r.starts_with(refused)),
        "{:?}",
        out.reasons
    );
    assert_eq!(out.entries, 0);
}

#[test]
fn verify_on_without_the_targets_it_needs_is_refused_before_any_work() {
    let env = Env::new();
    let task = env.task("spin");
    for (args, says) in [
        (
            vec!["--verify-on", "controller"],
            "--verify-on is for remote targets",
        ),
        (
            vec!["--target", "slurm", "--verify-on", "other-node"],
            "--verify-on other-node needs two targets or more",
        ),
        (
            vec!["--target", "slurm", "--verify-on", "elsewhere"],
            "expected one of other-node, controller, same-node",
        ),
    ] {
        env.cmd()
            .args(["run", task.to_str().unwrap(), "--budget", "1"])
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    }
    assert!(!env.db().exists(), "nothing was started");
}

#[test]
fn a_node_that_cannot_start_the_candidates_commands_is_a_fault_of_that_node() {
    let Some((faulty, sound, ssh)) = two_targets() else {
        return;
    };
    let env = Env::new();
    let worker = liar(&env, Some(faulty.port), Lie::Unstartable);
    let (task, replay) = null_changes(&env);
    let base = [
        "run",
        task.as_str(),
        "--proposer",
        replay.as_str(),
        "--worker",
        worker.as_str(),
        "--ssh-command",
        ssh.as_str(),
    ];
    let evaluations = |env: &Env| {
        env.json(&["query", "SELECT COUNT(*) AS n FROM evaluations"])[0]["n"]
            .as_i64()
            .unwrap()
    };
    // The faulty node alone: the run stops as interrupted (resumable), nothing recorded of the
    // candidate it could not run.
    let out = env
        .cmd()
        .args(base)
        .args(["--target", &faulty.target()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("could not run the candidate's commands: could not run `make`"),
        "{err}"
    );
    assert!(err.contains("left out after 3 faults in a row"), "{err}");
    assert_eq!(evaluations(&env), 0);
    // With a sound node beside it, each candidate the faulty node could not run is measured on
    // the sound one, and the run ends as a run does.
    let out = env
        .cmd()
        .args(base)
        .args(["--target", &faulty.target(), "--target", &sound.target()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("could not run the candidate's commands"),
        "{err}"
    );
    let verdicts = env.json(&["query", "SELECT verdict FROM evaluations"]);
    assert_eq!(verdicts.as_array().unwrap().len(), 2, "{verdicts}");
    for v in verdicts.as_array().unwrap() {
        assert_ne!(v["verdict"], "failed", "{verdicts}");
    }
}
