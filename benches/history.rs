//! Measures `history`, `review` and `show`, and the review page's main views, on a runs.db with
//! 100,000 candidates (generated: 100 runs of 1,000 candidates, each with an evaluation and 8
//! samples, 5 accepted entries per run waiting for review), timing the real binary as a user
//! runs it and the page's requests as a browser makes them.
//!
//! cargo bench --bench history [-- CANDIDATES]   (default 100000)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use polymorph::store::Store;
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
    let mut tx = store.pool().begin().await.unwrap();
    let now = "2026-11-30T00:00:00Z";
    sqlx::query("INSERT INTO contexts (task, id, fingerprint, created_at) VALUES ('gen', 'ctx000000000', '{}', ?)").bind(now).execute(&mut *tx).await.unwrap();
    let mut entry_id = 0i64;
    for r in 1..=runs {
        sqlx::query("INSERT INTO runs (id, task, task_dir, context_id, proposer, budget, seed, status, started_at) VALUES (?, 'gen', '/x', 'ctx000000000', 'search', ?, 1, 'finished', ?)")
            .bind(r).bind(per_run).bind(now).execute(&mut *tx).await.unwrap();
        for k in 1..=per_run {
            let id = (r - 1) * per_run + k;
            sqlx::query("INSERT INTO candidates (id, run_id, seq, task, context_id, proposer, origin, kind, payload, params_key, diff, created_at) VALUES (?, ?, ?, 'gen', 'ctx000000000', 'search', 'search(local)', 'params', '{}', ?, '--- a/p.h\n+++ b/p.h\n', ?)")
                .bind(id).bind(r).bind(k).bind(format!("{{\"K\":{id}}}")).bind(now).execute(&mut *tx).await.unwrap();
            let accepted = k % (per_run / 5).max(1) == 0;
            let verdict = if accepted {
                "accepted"
            } else if k % 3 == 0 {
                "failed"
            } else {
                "rejected"
            };
            sqlx::query("INSERT INTO evaluations (candidate_id, verdict, reason, stage, gain, gain_low, gain_high, pairs, created_at) VALUES (?, ?, 'generated', 'judge', 0.05, 0.03, 0.07, 6, ?)")
                .bind(id).bind(verdict).bind(now).execute(&mut *tx).await.unwrap();
            for s in 0..8 {
                sqlx::query("INSERT INTO samples (candidate_id, round, side, case_name, value) VALUES (?, ?, ?, 'c', 1.0)")
                    .bind(id).bind(s / 2).bind(if s % 2 == 0 { "incumbent" } else { "candidate" }).execute(&mut *tx).await.unwrap();
            }
            if accepted {
                entry_id += 1;
                sqlx::query("INSERT INTO ledger_entries (id, kind, candidate_id, task, context_id, branch, commit_sha, score, created_at) VALUES (?, 'accepted', ?, 'gen', 'ctx000000000', 'gen/ctx000000000', ?, 1.0, ?)")
                    .bind(entry_id).bind(id).bind(format!("{entry_id:040x}")).bind(now).execute(&mut *tx).await.unwrap();
            }
        }
    }
    tx.commit().await.unwrap();
    store.pool().close().await;
    println!(
        "generated {total} candidates ({entry_id} pending entries) in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let bin = env!("CARGO_BIN_EXE_polymorph");
    for args in [
        vec!["history"],
        vec!["history", "--json"],
        vec!["history", "--verdict", "accepted"],
        vec!["review"],
        vec!["show", "50000"],
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
    for path in [
        "/",
        "/api/runs",
        "/api/entries",
        "/api/runs/50/plot.svg",
        "/api/candidates/50000",
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
