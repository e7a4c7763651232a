//! The history digest a model sees: what worked on this task before (accepted entries, biggest
//! gain first, with their diffs) and what failed recently (with reasons), across earlier runs
//! and contexts, within a size budget, so a proposer builds on wins and does not repeat failures.

use crate::measure::pct;
use crate::record::Store;
use anyhow::Result;

/// Characters of digest (about a quarter as many tokens): room for a few diffs and reasons.
const DIGEST_BUDGET: usize = 8_000;
/// Longest diff quoted for one entry.
const DIFF_CAP: usize = 1_500;
/// Recent failures and rejections listed.
const RECENT: i64 = 8;

/// Accepted entries quoted, at most.
const WINS: i64 = 20;

pub async fn digest(store: &Store, task: &str) -> Result<String> {
    let wins = store.wins(task, WINS).await?;
    let losses = store.losses(task, RECENT).await?;
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
    for l in losses {
        let item = format!(
            "- candidate {} ({}): {} at {}: {}\n",
            l.id, l.origin, l.verdict, l.stage, l.reason
        );
        if out.len() + item.len() > DIGEST_BUDGET {
            break;
        }
        out.push_str(&item);
    }
    Ok(out)
}
