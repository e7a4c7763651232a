//! The history digest a model sees: what worked on this task before (accepted entries, biggest
//! gain first, with their diffs) and what failed recently (with reasons), across earlier runs
//! and contexts, within a size budget, so a proposer builds on wins and does not repeat failures.

use crate::judge::pct;
use crate::store::Store;
use anyhow::Result;

/// Characters of digest (about a quarter as many tokens): room for a few diffs and reasons.
const DIGEST_BUDGET: usize = 8_000;
/// Longest diff quoted for one entry.
const DIFF_CAP: usize = 1_500;
/// Recent failures and rejections listed.
const RECENT: i64 = 8;

#[derive(sqlx::FromRow)]
struct Win {
    id: i64,
    context_id: String,
    gain: f64,
    gain_low: f64,
    gain_high: f64,
    origin: String,
    note: Option<String>,
    diff: Option<String>,
}

pub async fn digest(store: &Store, task: &str) -> Result<String> {
    let wins: Vec<Win> = sqlx::query_as(
        "SELECT l.id, l.context_id, e.gain, e.gain_low, e.gain_high, c.origin, c.note, c.diff
         FROM ledger_entries l JOIN candidates c ON c.id = l.candidate_id JOIN evaluations e ON e.candidate_id = c.id
         WHERE l.task = ? AND l.kind = 'accepted' AND l.review_state != 'rejected' ORDER BY e.gain DESC LIMIT 20",
    )
    .bind(task)
    .fetch_all(store.pool())
    .await?;
    let losses: Vec<(i64, String, String, String, String)> = sqlx::query_as(
        "SELECT c.id, e.verdict, e.stage, e.reason, c.origin FROM candidates c JOIN evaluations e ON e.candidate_id = c.id
         WHERE c.task = ? AND e.verdict IN ('failed', 'rejected') ORDER BY c.id DESC LIMIT ?",
    )
    .bind(task)
    .bind(RECENT)
    .fetch_all(store.pool())
    .await?;
    let mut out = String::new();
    if wins.is_empty() && losses.is_empty() {
        return Ok("No earlier attempts on this task.".to_string());
    }
    if !wins.is_empty() {
        out.push_str("Accepted improvements (biggest first):\n");
    }
    for w in wins {
        let mut item = format!(
            "- e{} in context {}: {} [{}, {}] from {}",
            w.id,
            w.context_id,
            pct(w.gain),
            pct(w.gain_low),
            pct(w.gain_high),
            w.origin
        );
        if let Some(n) = w.note {
            item.push_str(&format!(" ({n})"));
        }
        item.push('\n');
        if let Some(d) = w.diff {
            let d: String = d.chars().take(DIFF_CAP).collect();
            item.push_str(&format!("```diff\n{d}\n```\n"));
        }
        if out.len() + item.len() > DIGEST_BUDGET {
            break;
        }
        out.push_str(&item);
    }
    if !losses.is_empty() {
        out.push_str("Recent attempts that did not get in (newest first):\n");
    }
    for (id, verdict, stage, reason, origin) in losses {
        let item = format!("- candidate {id} ({origin}): {verdict} at {stage}: {reason}\n");
        if out.len() + item.len() > DIGEST_BUDGET {
            break;
        }
        out.push_str(&item);
    }
    Ok(out)
}
