//! Measures `history`, `review`, `show` and `best`, and the review page's main views, on a runs.db with
//! 100,000 candidates (generated: 100 runs of 1,000 candidates, each with an evaluation and 8
//! samples, 5 accepted entries per run waiting for review), timing the real binary as a user
//! runs it and the page's requests as a browser makes them.
//!
//! cargo bench --bench history [-- CANDIDATES]   (default 100000)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use polymorph::measure::{Interval, SampleSide, Series, Verdict};
use polymorph::record::store::{NewEntry, NewEvaluation, NewSample};
use polymorph::record::{ChangeKind, Ledger, ProposerKind, RunProposer, RunStatus, Stage, Store};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

/// One GET over a fresh connection, read to the end; the body length.
fn get(port: u16, path: &str) -> usize {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    assert!(
        out.starts_with(b"HTTP/1.1 200"),
        "{path}: {}",
        String::from_utf8_lossy(&out[..out.len().min(200)])
    );
    out.len()
}

/// The k-th generated candidate of a run: a parameter assignment judged +5% [+3, +7], with
/// four pairs of one-case samples.
fn generated(run: i64, k: i64, verdict: Verdict, incumbent: i64) -> NewEvaluation {
    let samples = (0..8)
        .map(|s| NewSample {
            round: s / 2,
            series: Series::First,
            side: if s % 2 == 0 {
                SampleSide::Incumbent
            } else {
                SampleSide::Candidate
            },
            case: "c".into(),
            value: 1.0,
        })
        .collect();
    NewEvaluation {
        run_id: run,
        seq: k,
        task: "gen".into(),
        context_id: "ctx000000000".into(),
        proposer: ProposerKind::Search,
        origin: "search(local)".into(),
        note: None,
        kind: ChangeKind::Params,
        payload: "{}".into(),
        params_key: Some(format!("{{\"K\":{run}.{k}}}")),
        diff: Some("--- a/p.h\n+++ b/p.h\n".into()),
        parent_entry_id: Some(incumbent),
        verdict,
        reason: "generated".into(),
        stage: Stage::Judge,
        gain: Some(Interval {
            estimate: 0.05,
            low: 0.03,
            high: 0.07,
            confidence: 0.95,
        }),
        incumbent_score: None,
        candidate_score: None,
        pairs: 4,
        bench_seconds: 0.0,
        process_seconds: 0.0,
        overhead_ms: 0.0,
        log: None,
        samples,
        states: Vec::new(),
        usage: None,
    }
}

fn report(what: &str, mut times: Vec<f64>) {
    times.sort_by(f64::total_cmp);
    let n = times.len();
    println!(
        "{what:<36} median {:>6.1} ms (min {:.1}, max {:.1}) over {n} runs",
        times[n / 2],
        times[0],
        times[n - 1]
    );
}

/// A one-file tree for the k-th generated ledger commit.
fn tree(k: i64) -> sandbox::FileTree {
    let mut t = sandbox::FileTree::default();
    t.insert(
        sandbox::RelPath::new("p.h").unwrap(),
        format!("#define K {k}\n").into_bytes(),
    );
    t
}

/// `runs` finished runs of `per_run` generated candidates each, one transaction per run, and a
/// real ledger whose branch holds every accepted entry; the number of those (pending review).
async fn generate(store: &Store, ledger: &Ledger, runs: i64, per_run: i64) -> i64 {
    store
        .upsert_context("gen", "ctx000000000", "{}")
        .await
        .unwrap();
    let mut head = ledger.write_commit(None, &tree(0), "origin").unwrap();
    // Each candidate is judged against the entry at the branch's head when it is recorded.
    let mut incumbent = store
        .insert_origin(
            "gen",
            "ctx000000000",
            "gen/ctx000000000",
            &head.to_string(),
            None,
        )
        .await
        .unwrap();
    let mut entries = 0i64;
    for _ in 1..=runs {
        let run = store
            .create_run(
                "gen",
                "/x",
                "ctx000000000",
                &RunProposer::Search,
                per_run,
                1,
            )
            .await
            .unwrap();
        let mut tx = store.begin().await.unwrap();
        for k in 1..=per_run {
            let accepted = k % (per_run / 5).max(1) == 0;
            let verdict = if accepted {
                Verdict::Accepted
            } else if k % 3 == 0 {
                Verdict::Failed
            } else {
                Verdict::Rejected
            };
            let entry = accepted.then(|| {
                entries += 1;
                head = ledger
                    .write_commit(Some(head), &tree(entries), "generated")
                    .unwrap();
                NewEntry {
                    branch: "gen/ctx000000000".into(),
                    commit_sha: head.to_string(),
                    score: Some(1.0),
                    params: None,
                }
            });
            let (_, landed) = tx
                .record(&generated(run, k, verdict, incumbent), entry.as_ref())
                .await
                .unwrap();
            incumbent = landed.unwrap_or(incumbent);
        }
        tx.commit().await.unwrap();
        store
            .finish_run(run, RunStatus::Finished, None)
            .await
            .unwrap();
    }
    ledger.set_branch("gen/ctx000000000", head).unwrap();
    entries
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let total: i64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100_000);
    let runs = 100i64;
    let per_run = total / runs;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let store = Store::open(&db).await.unwrap();
    let started = Instant::now();
    let ledger = Ledger::open_or_init(&dir.path().join("ledger")).unwrap();
    let entries = generate(&store, &ledger, runs, per_run).await;
    store.close().await;
    println!(
        "generated {total} candidates ({entries} pending entries) in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let bin = env!("CARGO_BIN_EXE_polymorph");
    let middle = (total / 2).to_string();
    for args in [
        vec!["history"],
        vec!["history", "--json"],
        vec!["history", "--verdict", "accepted"],
        vec!["review"],
        vec!["show", middle.as_str()],
        vec!["best", "gen", "--context", "ctx000000000"],
        vec!["best", "gen", "--context", "ctx000000000", "--json"],
    ] {
        let mut times = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            let out = Command::new(bin)
                .arg("--db")
                .arg(&db)
                .arg("--ledger")
                .arg(dir.path().join("ledger"))
                .args(&args)
                .output()
                .unwrap();
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            assert!(
                out.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        report(&format!("polymorph {}", args.join(" ")), times);
    }
    let mut server = Command::new(bin)
        .arg("--db")
        .arg(&db)
        .arg("--ledger")
        .arg(dir.path().join("ledger"))
        .args(["serve", "--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap();
    let candidate = format!("/api/candidates/{middle}");
    for path in [
        "/",
        "/api/runs",
        "/api/entries",
        "/api/runs/50/plot.svg",
        candidate.as_str(),
    ] {
        let times = (0..5)
            .map(|_| {
                let t = Instant::now();
                get(port, path);
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        report(&format!("page GET {path}"), times);
    }
    let _ = server.kill();
    let _ = server.wait();
}
