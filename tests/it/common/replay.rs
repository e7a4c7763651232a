//! Candidates given as replay lines, each run through the real loop, and what became of them.

use super::Env;
use serde_json::Value;

/// Runs every line of `lines` as a replay candidate and returns (verdict, reason, log) each.
pub fn run_replay(
    env: &Env,
    task: &std::path::Path,
    lines: &[String],
    extra_env: &[(&str, &str)],
) -> Vec<(String, String, String)> {
    let replay = env.write("attacks.jsonl", &(lines.join("\n") + "\n"));
    let mut cmd = env.cmd();
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd
        .args([
            "run",
            task.to_str().unwrap(),
            "--proposer",
            &format!("replay:{}", replay.display()),
            "--budget",
            "100",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["candidates"].as_u64().unwrap() as usize,
        lines.len(),
        "{report}"
    );
    let first: i64 = env.json(&["query", "SELECT MIN(c.id) AS id FROM candidates c JOIN runs r ON r.id = c.run_id WHERE r.id = (SELECT MAX(id) FROM runs)"])[0]["id"]
        .as_i64()
        .unwrap();
    (0..lines.len() as i64)
        .map(|i| {
            let c = env.json(&["show", &(first + i).to_string()]);
            let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (s("verdict"), s("reason"), s("log"))
        })
        .collect()
}

pub fn expect(results: &[(String, String, String)], i: usize, verdict: &str, reason: &str) {
    let (v, r, _) = &results[i];
    assert_eq!(v, verdict, "attack {}: {r}", i + 1);
    assert!(
        r.contains(reason),
        "attack {}: reason {r:?} lacks {reason:?}",
        i + 1
    );
}
