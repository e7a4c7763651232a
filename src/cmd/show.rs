//! `polymorph show`: one candidate, entry or commit: its verdict, numbers, samples and diff.

use super::output::{fmt_score, print_diff, print_json, say};
use crate::cli::{Cli, ShowArgs};
use anyhow::{Context as _, Result, bail};
use polymorph::measure::{median, pct, signed_rank_interval};
use polymorph::record::Store;
use polymorph::record::store::{CandidateRow, EntryRow, SIMULATED};
use polymorph::view::{ShowData, resolve_entry, show_data, show_json};
use serde_json::json;
use std::collections::BTreeMap;

pub async fn show(cli: &Cli, a: ShowArgs) -> Result<()> {
    let store = &Store::open_existing(&cli.db()).await?;
    let ledger_buf = cli.ledger();
    let (id, json, ledger_path) = (a.id.as_str(), a.json, ledger_buf.as_path());
    let entry = resolve_entry(store, id).await?;
    let candidate_id = match (&entry, id.parse::<i64>()) {
        (Some(e), _) => e.candidate_id,
        (None, Ok(n)) => Some(n),
        (None, Err(_)) => {
            bail!("no entry {id}: give a candidate number, an entry like e3, or a commit prefix")
        }
    };
    let Some(cid) = candidate_id else {
        let e = entry.context("entry vanished")?;
        let mut out = json!({ "entry": e.id, "kind": e.kind, "task": e.task, "context_id": e.context_id, "branch": e.branch, "commit": e.commit_sha });
        store
            .simulations()
            .await?
            .label(&e.task, &e.context_id, &mut out);
        if json {
            return print_json(&out);
        }
        if out["simulated"] == true {
            say!("{SIMULATED}");
        }
        say!(
            "entry e{}: the task {} as given, branch {}, commit {}",
            e.id,
            e.task,
            e.branch,
            e.commit_sha
        );
        return Ok(());
    };
    let d = show_data(store, ledger_path, cid, entry).await?;
    if json {
        return print_json(&show_json(&d)?);
    }
    let ShowData {
        c,
        entry,
        per_case,
        diff,
        states,
        confirmation_round,
        simulation,
    } = d;
    if let Some(sha) = simulation {
        say!("{SIMULATED} (cache sha256 {})", &sha[..12.min(sha.len())]);
    }
    print_summary(store, &c, entry.as_ref()).await?;
    print_cases(&per_case);
    if let Some(r) = confirmation_round {
        say!(
            "  pairs 1-{r}: the first series, accepted; {}-{}: the fresh series that confirmation asked for",
            r + 1,
            c.pairs
        );
    }
    if !states.is_empty() {
        say!("\n  machine state when each bench process started:");
        for s in &states {
            say!("    pair {:>2} {:<10} {}", s.round + 1, s.side, s.state);
        }
    }
    if let Some(d) = diff.filter(|d| !d.is_empty()) {
        say!();
        print_diff(&d);
    }
    if let Some(log) = c.log.filter(|l| !l.is_empty()) {
        say!("\n--- output of the failing command (tail) ---\n{log}");
    }
    Ok(())
}

/// Who proposed it, what the judge said, where it is in the ledger, what it cost.
async fn print_summary(store: &Store, c: &CandidateRow, entry: Option<&EntryRow>) -> Result<()> {
    say!(
        "candidate {} (run {}, #{}) of {} in context {}",
        c.id,
        c.run_id,
        c.seq,
        c.task,
        c.context_id
    );
    say!(
        "  proposer: {} ({}){}",
        c.proposer,
        c.origin,
        c.note
            .as_ref()
            .map(|n| format!(": {n}"))
            .unwrap_or_default()
    );
    if let Some(parent) = c.parent_entry_id {
        say!("  parent:   e{parent} (the incumbent it was measured against)");
    }
    say!("  verdict:  {} at {}: {}", c.verdict, c.stage, c.reason);
    if let (Some(g), Some(l), Some(h)) = (c.gain, c.gain_low, c.gain_high) {
        say!(
            "  gain:     {} [{}, {}] at {:.1}% confidence over {} pairs ({:.1}s of benchmarks)",
            pct(g),
            pct(l),
            pct(h),
            c.confidence.unwrap_or(0.0) * 100.0,
            c.pairs,
            c.bench_seconds
        );
        say!(
            "  score:    incumbent {} -> candidate {}",
            fmt_score(c.incumbent_score),
            fmt_score(c.candidate_score)
        );
    }
    if let Some(e) = entry {
        say!(
            "  ledger:   entry e{} on {}, commit {} ({})",
            e.id,
            e.branch,
            e.commit_sha,
            e.review_state
        );
        if let (Some(by), Some(at)) = (&e.reviewed_by, &e.reviewed_at) {
            let why = e
                .review_reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default();
            say!("  review:   {} by {by} at {at}{why}", e.review_state);
        }
    }
    if let Some(model) = &c.model {
        say!(
            "  model:    {model}, {} prompt + {} completion tokens{}",
            c.prompt_tokens.unwrap_or(0),
            c.completion_tokens.unwrap_or(0),
            c.agent_protocol
                .as_deref()
                .map(|p| format!(", {p} protocol"))
                .unwrap_or_default()
        );
    }
    if let (Some(score), Some(hand)) = (
        c.candidate_score,
        store.run(c.run_id).await?.and_then(|r| r.hand_tuned_score),
    ) {
        say!(
            "  baseline: the candidate measured {:.2}x the hand-tuned baseline's figure at the run's start",
            score / hand
        );
    }
    Ok(())
}

/// Per case: medians of both sides and the paired change with its interval.
fn print_cases(per_case: &BTreeMap<String, (Vec<f64>, Vec<f64>)>) {
    if per_case.is_empty() {
        return;
    }
    say!(
        "  {:<24}{:>14}{:>14}  change [95% interval]",
        "case (median)",
        "incumbent",
        "candidate"
    );
    for (k, (a, b)) in per_case {
        let (ma, mb) = (median(a), median(b));
        // Samples are stored round by round, so a[i] and b[i] are one interleaved pair.
        let ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| (y / x).ln()).collect();
        let interval = signed_rank_interval(&ratios, 0.95)
            .map(|i| format!("{} [{}, {}]", pct(i.estimate), pct(i.low), pct(i.high)))
            .unwrap_or_else(|| format!("{:+.1}%", (mb / ma - 1.0) * 100.0));
        say!("  {k:<24}{ma:>14.4}{mb:>14.4}  {interval}");
    }
}
