//! The shared store: runs recorded in a throw-away PostgreSQL cluster and read back by every
//! command, and two controllers sharing the database and the
//! ledger committing one chain of entries (one of two candidates judged against the same
//! incumbent lands, the other is recorded as having lost the race and the run re-bases).

use super::common::postgres::Postgres;
use super::common::tools::{Tool, missing};
use super::common::{Env, git_in as git, int_column};
use polymorph::measure::{Interval, Verdict};
use polymorph::record::store::{NewEntry, NewEvaluation, Superseded};
use polymorph::record::{ChangeKind, ProposerKind, RunProposer, Stage, Store};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

pub(super) fn cluster() -> Option<Postgres> {
    match Postgres::start() {
        Ok(pg) => Some(pg),
        Err(why) => {
            missing(Tool::Postgres, &format!("the PostgreSQL store: {why}"));
            None
        }
    }
}

/// `polymorph` on the database at `url` and the ledger at `ledger`.
fn cmd_on(env: &Env, url: &str, ledger: &Path) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("polymorph"));
    c.current_dir(env.path())
        .env_remove("OPENAI_BASE_URL")
        .env_remove("POLYMORPH_DB")
        .args(["--db", url, "--ledger", ledger.to_str().unwrap()]);
    c
}

/// `polymorph` on this env's ledger and the database at `url`.
fn cmd(env: &Env, url: &str) -> Command {
    cmd_on(env, url, &env.ledger())
}

/// Runs `c`, which must succeed; its stdout.
fn succeeded(mut c: Command) -> Vec<u8> {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{c:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

pub(super) fn json(env: &Env, url: &str, args: &[&str]) -> Value {
    let mut c = cmd(env, url);
    c.args(args).arg("--json");
    serde_json::from_slice(&succeeded(c)).unwrap()
}

/// `query` refused: its error message.
pub(super) fn refused(env: &Env, url: &str, sql: &str) -> String {
    let out = cmd(env, url).args(["query", sql]).output().unwrap();
    assert!(!out.status.success(), "{sql} ran");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A replay file of spin steps, each lowering the wasted work (from the task's 80%).
fn steps(env: &Env, name: &str, pads: &[u32]) -> String {
    let lines: Vec<String> = pads
        .iter()
        .map(|p| {
            serde_json::json!({ "files": { "params.h": format!("#define PAD_PERMILLE {p}\n") } })
                .to_string()
        })
        .collect();
    let path = env.write(name, &(lines.join("\n") + "\n"));
    format!("replay:{}", path.display())
}

fn spin(env: &Env) -> std::path::PathBuf {
    let task = env.task("spin");
    std::fs::write(task.join("params.h"), "#define PAD_PERMILLE 800\n").unwrap();
    task
}

#[test]
fn a_run_on_postgres_is_read_back_by_every_command() {
    let Some(pg) = cluster() else { return };
    let url = pg.default_url();
    let env = Env::new();
    let task = spin(&env);
    let replay = steps(&env, "steps.jsonl", &[400, 0]);
    let report = json(
        &env,
        &url,
        &["run", task.to_str().unwrap(), "--proposer", &replay],
    );
    assert_eq!(report["status"], "finished", "{report}");
    assert_eq!(report["accepted"], 2, "{report}");
    assert!(
        !env.db().exists(),
        "no runs.db is made when --db names PostgreSQL"
    );

    let history = json(&env, &url, &["history"]);
    assert_eq!(history[0]["accepted"], 2, "{history}");
    let best = json(&env, &url, &["best", "spin"]);
    assert_eq!(best["entry"], report["best_entry"], "{best}");
    let stats = json(
        &env,
        &url,
        &[
            "query",
            "SELECT proposer, candidates, accepted, accept_rate_pct FROM proposer_stats",
        ],
    );
    assert_eq!(stats[0]["accepted"], 2, "{stats}");
    assert_eq!(stats[0]["accept_rate_pct"], 100.0, "{stats}");
    // Refused writes (tests/it/postgres_query.rs) and reads leave the rows as they were.
    let runs = json(&env, &url, &["query", "SELECT COUNT(*) AS n FROM runs"]);
    assert_eq!(runs[0]["n"], 1);

    // Review on PostgreSQL: a rejection takes e3 off the branch, best falls back to e2.
    let shown = json(&env, &url, &["show", "2"]);
    assert_eq!(shown["verdict"], "accepted", "{shown}");
    let mut reject = cmd(&env, &url);
    reject.args(["reject", "e3", "--reason", "not on this cluster"]);
    succeeded(reject);
    let best = json(&env, &url, &["best", "spin"]);
    assert_eq!(best["entry"], 2, "{best}");

    // The model search's held contenders are counted by PostgreSQL's trigger too.
    let matmul = env.task_as_recorded("matmul-c");
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/data/matmul-c-prefill.json");
    let workload = matmul.join("workloads/prefill.json");
    let simulated = json(
        &env,
        &url,
        &[
            "run",
            matmul.to_str().unwrap(),
            "--simulate",
            cache.to_str().unwrap(),
            "--workload",
            workload.to_str().unwrap(),
            "--budget",
            "6",
        ],
    );
    let held = json(
        &env,
        &url,
        &[
            "query",
            "SELECT COUNT(*) AS n FROM evaluations WHERE verdict = 'held'",
        ],
    );
    let history = json(&env, &url, &["history", "--task", "matmul-c"]);
    assert!(held[0]["n"].as_i64().unwrap() >= 2, "{held}");
    assert_eq!(history[0]["held"], held[0]["n"], "{history}");
    assert_eq!(simulated["held"], held[0]["n"], "{simulated}");

    // A database that is not there: a clear error, quickly.
    let out = cmd(&env, "postgres://polymorph@127.0.0.1:1/nothing")
        .arg("history")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("connecting to postgres://"),
        "{err}"
    );
}

/// An accepted evaluation of the spin task, judged against `parent`.
fn accepted(run_id: i64, seq: i64, parent: i64) -> NewEvaluation {
    NewEvaluation {
        run_id,
        seq,
        task: "spin".into(),
        context_id: "c1".into(),
        proposer: ProposerKind::Search,
        origin: "test".into(),
        note: None,
        kind: ChangeKind::Params,
        payload: "{}".into(),
        params_key: None,
        diff: None,
        parent_entry_id: Some(parent),
        verdict: Verdict::Accepted,
        reason: "faster".into(),
        stage: Stage::Judge,
        gain: Some(Interval {
            estimate: 0.1,
            low: 0.05,
            high: 0.15,
            confidence: 0.95,
        }),
        incumbent_score: Some(1.0),
        candidate_score: Some(1.1),
        pairs: 6,
        bench_seconds: 1.0,
        process_seconds: 1.0,
        overhead_ms: 1.0,
        log: None,
        samples: Vec::new(),
        states: Vec::new(),
        usage: None,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn of_two_entries_judged_against_one_incumbent_only_the_first_lands() {
    let Some(pg) = cluster() else { return };
    let url = pg.default_url();
    let (a, b) = (
        Store::open(Path::new(&url)).await.unwrap(),
        Store::open(Path::new(&url)).await.unwrap(),
    );
    let origin = a
        .insert_origin("spin", "c1", "spin/c1", "0000", None)
        .await
        .unwrap();
    // The branch has one origin, whoever starts it.
    assert!(
        b.insert_origin("spin", "c1", "spin/c1", "0001", None)
            .await
            .is_err()
    );
    let run = |s: &Store| {
        let s = s.clone();
        async move {
            s.create_run("spin", "/t", "c1", &RunProposer::Search, 4, 1)
                .await
                .unwrap()
        }
    };
    let (ra, rb) = (run(&a).await, run(&b).await);
    let entry = |sha: &str| NewEntry {
        branch: "spin/c1".into(),
        commit_sha: sha.into(),
        score: Some(1.1),
        params: None,
    };
    let (_, first) = a
        .record(&accepted(ra, 1, origin), Some(&entry("1111")))
        .await
        .unwrap();
    let err = b
        .record(&accepted(rb, 1, origin), Some(&entry("2222")))
        .await
        .unwrap_err();
    let moved = err.downcast_ref::<Superseded>().expect("superseded");
    assert_eq!((moved.judged, moved.now), (Some(origin), first), "{moved}");
    // Nothing of the loser was written; judged against the new incumbent, it lands.
    assert_eq!(b.candidates_in_run(rb).await.unwrap(), 0);
    let (_, second) = b
        .record(&accepted(rb, 1, first.unwrap()), Some(&entry("2222")))
        .await
        .unwrap();
    assert_eq!(
        b.incumbent("spin/c1").await.unwrap().unwrap().id,
        second.unwrap()
    );
    // A run a live controller works in is not another's to resume; once it lets go, it is.
    let held = a.claim_run(ra).await.unwrap();
    assert!(held.is_some());
    assert!(b.claim_run(ra).await.unwrap().is_none());
    drop(held);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while b.claim_run(ra).await.unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the claim was not released"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Two controllers started at once on the same task, database and (shared) ledger: returns the
/// entries, after checking they are one chain and that `shared` (the ledger everyone sees)
/// holds that chain as the branch's history.
fn two_controllers(env: &Env, url: &str, ledgers: [&Path; 2], shared: &Path) -> usize {
    let task = spin(env);
    let replay = steps(env, "steps.jsonl", &[600, 400, 200, 100, 0]);
    let start = |name: &str, ledger: &Path| {
        cmd_on(env, url, ledger)
            .args([
                "run",
                task.to_str().unwrap(),
                "--proposer",
                &replay,
                "--json",
            ])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(env.path().join(format!("{name}.out"))).unwrap())
            .stderr(std::fs::File::create(env.path().join(format!("{name}.err"))).unwrap())
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (start("a", ledgers[0]), start("b", ledgers[1]));
    for (c, name) in [(&mut a, "a"), (&mut b, "b")] {
        let ok = c.wait().unwrap().success();
        let err = std::fs::read_to_string(env.path().join(format!("{name}.err"))).unwrap();
        assert!(ok, "controller {name}: {err}");
    }
    let q = |sql: &str| json(env, url, &["query", sql]);
    let runs = q("SELECT id, status FROM runs ORDER BY id");
    let runs = runs.as_array().unwrap();
    assert_eq!(
        runs.len(),
        2,
        "two runs, neither resumed the other's: {runs:?}"
    );
    assert!(runs.iter().all(|r| r["status"] == "finished"), "{runs:?}");
    let n = q("SELECT COUNT(*) AS n, COUNT(DISTINCT (run_id, seq)) AS d FROM candidates");
    assert_eq!(
        (n[0]["n"].as_i64(), n[0]["d"].as_i64()),
        (Some(10), Some(10)),
        "{n}"
    );
    // One chain: every entry was judged against the entry just before it on the branch.
    let entries = q("SELECT id, parent_entry_id, commit_sha FROM ledger_entries ORDER BY id");
    let entries = entries.as_array().unwrap();
    assert!(entries.len() >= 2, "{entries:?}");
    for w in entries.windows(2) {
        assert_eq!(w[1]["parent_entry_id"], w[0]["id"], "a fork: {entries:?}");
    }
    let recorded: Vec<&str> = entries
        .iter()
        .map(|e| e["commit_sha"].as_str().unwrap())
        .collect();
    let best_on = |ledger: &Path| -> Value {
        let mut c = cmd_on(env, url, ledger);
        c.args(["best", "spin", "--json"]);
        serde_json::from_slice(&succeeded(c)).unwrap()
    };
    let best = best_on(ledgers[0]);
    let branch = best["branch"].as_str().unwrap();
    let head = git(shared, &["rev-parse", branch]);
    assert_eq!(head.trim(), *recorded.last().unwrap(), "{best}");
    let log = git(
        shared,
        &["log", "--first-parent", "--format=%H", head.trim()],
    );
    let shas: Vec<&str> = log.lines().rev().collect();
    assert_eq!(
        shas, recorded,
        "the branch's history is the chain of entries"
    );
    // Either controller's ledger shows the best, whoever committed it.
    assert_eq!(best_on(ledgers[1])["commit"], best["commit"]);
    let lost = q("SELECT COUNT(*) AS n FROM candidate_results WHERE reason LIKE '%lost the race%'");
    eprintln!(
        "two controllers: {} entries, {} lost races",
        entries.len(),
        lost[0]["n"]
    );
    entries.len()
}

#[test]
fn two_controllers_sharing_the_database_and_a_ledger_directory_commit_one_chain() {
    let Some(pg) = cluster() else { return };
    let env = Env::new();
    let ledger = env.ledger();
    two_controllers(&env, &pg.default_url(), [&ledger, &ledger], &ledger);
}

#[test]
fn two_controllers_sharing_the_database_and_a_git_remote_commit_one_chain() {
    let Some(pg) = cluster() else { return };
    let env = Env::new();
    // The shared ledger is a git remote; each controller has its own clone of it.
    let remote = env.path().join("shared.git");
    let clones = [env.path().join("a.git"), env.path().join("b.git")];
    let init = |dir: &Path| {
        git(
            env.path(),
            &["init", "--quiet", "--bare", dir.to_str().unwrap()],
        )
    };
    init(&remote);
    for clone in &clones {
        init(clone);
        git(
            clone,
            &["remote", "add", "origin", remote.to_str().unwrap()],
        );
    }
    two_controllers(&env, &pg.default_url(), [&clones[0], &clones[1]], &remote);
    // Every commit the database records is on the remote.
    let url = pg.default_url();
    let shas = json(
        &env,
        &url,
        &["query", "SELECT commit_sha FROM ledger_entries"],
    );
    for sha in shas.as_array().unwrap() {
        git(
            &remote,
            &["cat-file", "-e", sha["commit_sha"].as_str().unwrap()],
        );
    }
}

#[test]
fn a_controller_killed_mid_run_leaves_a_run_another_resumes() {
    let Some(pg) = cluster() else { return };
    let url = pg.default_url();
    let env = Env::new();
    let task = env.spin_without_screening();
    let run = |budget: &str| {
        cmd(&env, &url)
            .args([
                "run",
                task.to_str().unwrap(),
                "--budget",
                budget,
                "--seed",
                "5",
                "--json",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut first = run("4");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let n = json(
            &env,
            &url,
            &["query", "SELECT COUNT(*) AS n FROM candidates"],
        );
        if n[0]["n"].as_i64() >= Some(1) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no candidate recorded"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    first.kill().unwrap();
    first.wait().unwrap();
    // Its session lock went with its connection: the same command resumes the run.
    let out = run("4").wait_with_output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (report["resumed"].as_bool(), report["run_id"].as_i64()),
        (Some(true), Some(1)),
        "{report}"
    );
    assert_eq!(report["status"], "finished", "{report}");
    let seqs = json(
        &env,
        &url,
        &["query", "SELECT seq FROM candidates ORDER BY seq"],
    );
    let seqs = int_column(&seqs, "seq");
    assert_eq!(seqs, [1, 2, 3, 4], "each candidate once, none lost");
}
