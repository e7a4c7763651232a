//! What a test reads back from runs.db and the ledger: rows of a query, and the invariants that
//! must hold after any crash.

use super::Env;
use serde_json::Value;

/// The rows `polymorph query SQL` prints.
pub fn rows(env: &Env, sql: &str) -> Vec<Value> {
    env.json(&["query", sql]).as_array().unwrap().clone()
}

/// The invariants that must hold after any crash.
pub fn assert_consistent(env: &Env) {
    assert_eq!(
        rows(env, "PRAGMA integrity_check")[0]["integrity_check"],
        "ok"
    );
    assert_eq!(rows(env, "PRAGMA foreign_key_check").len(), 0);
    // No evaluation without its candidate or candidate without its evaluation, none twice.
    let orphans = rows(
        env,
        "SELECT COUNT(*) AS n FROM candidates c LEFT JOIN evaluations e ON e.candidate_id = c.id WHERE e.candidate_id IS NULL",
    );
    assert_eq!(orphans[0]["n"], 0);
    let dups = rows(
        env,
        "SELECT COUNT(*) AS n FROM (SELECT run_id, seq FROM candidates GROUP BY run_id, seq HAVING COUNT(*) > 1)",
    );
    assert_eq!(dups[0]["n"], 0);
    // Each run's totals (kept by triggers) agree with its candidates, whatever was killed when.
    let drift = rows(
        env,
        "SELECT COUNT(*) AS n FROM runs r WHERE n_accepted + n_rejected + n_held + n_failed + n_quarantined
            != (SELECT COUNT(*) FROM candidates c JOIN evaluations e ON e.candidate_id = c.id WHERE c.run_id = r.id)
         OR n_accepted != (SELECT COUNT(*) FROM candidates c JOIN evaluations e ON e.candidate_id = c.id
                           WHERE c.run_id = r.id AND e.verdict = 'accepted')",
    );
    assert_eq!(drift[0]["n"], 0, "run totals drifted from the candidates");
    // Every commit reachable from a ledger branch is a recorded entry (verified by polymorph).
    if !env.ledger().join("HEAD").exists() {
        return;
    }
    let recorded: Vec<String> = rows(env, "SELECT commit_sha FROM ledger_entries")
        .iter()
        .map(|r| r["commit_sha"].as_str().unwrap().to_string())
        .collect();
    for sha in env.git(&["log", "--all", "--format=%H"]).lines() {
        assert!(
            recorded.iter().any(|r| r == sha),
            "ledger commit {sha} is not a recorded entry"
        );
    }
}
