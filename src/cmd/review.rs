//! `polymorph review`, `approve`, `reject` and `export`: the human side of the ledger.

use super::output::{print_json, say};
use crate::cli::{ApproveArgs, Cli, ExportArgs, RejectArgs, ReviewArgs};
use anyhow::{Context as _, Result};
use polymorph::measure::pct;
use polymorph::record::store::{CandidateRow, QuarantinedRow};
use polymorph::record::{Ledger, ReviewState, Store, quarantine, review};
use polymorph::view::entry_arg;

/// A bare number names a candidate (for quarantine decisions); `e7` or a commit an entry.
async fn quarantined_arg(store: &Store, id: &str) -> Result<Option<CandidateRow>> {
    let Ok(n) = id.parse::<i64>() else {
        return Ok(None);
    };
    Ok(Some(store.candidate(n).await?.with_context(|| {
        format!("no candidate {n} in runs.db (entries are written e7)")
    })?))
}

pub async fn approve(cli: &Cli, a: ApproveArgs) -> Result<()> {
    let store = Store::open_existing(&cli.db()).await?;
    if let Some(c) = quarantined_arg(&store, &a.id).await? {
        let by = review::reviewer(a.by);
        let why = a.note.unwrap_or_default();
        let d = quarantine::release(&store, &cli.db(), &cli.ledger(), &c, &by, &why).await?;
        say!(
            "candidate {} released from quarantine by {by} into e{} (commit {})",
            d.candidate,
            d.entry.unwrap_or(0),
            d.commit.as_deref().unwrap_or("-")
        );
        return Ok(());
    }
    let e = entry_arg(&store, &a.id).await?;
    let by = review::reviewer(a.by);
    review::approve(&store, &cli.db(), &e, &by, a.note.as_deref()).await?;
    say!("e{} approved by {by}", e.id);
    Ok(())
}

pub async fn reject(cli: &Cli, a: RejectArgs) -> Result<()> {
    let store = Store::open_existing(&cli.db()).await?;
    let by = review::reviewer(a.by);
    if let Some(c) = quarantined_arg(&store, &a.id).await? {
        let d = quarantine::dismiss(&store, &cli.db(), &c, &by, &a.reason).await?;
        if a.json {
            return print_json(&d);
        }
        say!("candidate {} dismissed by {by}", d.candidate);
        return Ok(());
    }
    let e = entry_arg(&store, &a.id).await?;
    let r = review::reject(&store, &cli.db(), &cli.ledger(), &e, &by, &a.reason).await?;
    if a.json {
        return print_json(&r);
    }
    let ids: Vec<String> = r.rejected.iter().map(|i| format!("e{i}")).collect();
    say!(
        "rejected {}; {} now restores e{} (revert commit {})",
        ids.join(", "),
        r.branch,
        r.restores,
        &r.revert_commit[..12]
    );
    Ok(())
}

pub async fn export(cli: &Cli, a: ExportArgs) -> Result<()> {
    let store = Store::open_existing(&cli.db()).await?;
    let e = entry_arg(&store, &a.id).await?;
    let patch = review::export(&store, &Ledger::open_or_init(&cli.ledger())?, &e).await?;
    match a.output {
        Some(path) => {
            std::fs::write(&path, patch).with_context(|| format!("writing {}", path.display()))?
        }
        // To a terminal its control and invisible characters are written out; piped, the patch
        // stays byte for byte what `git am` applies.
        None if std::io::IsTerminal::is_terminal(&std::io::stdout()) => {
            print!("{}", sandbox::shown(&patch))
        }
        None => print!("{patch}"),
    }
    Ok(())
}

pub async fn review(cli: &Cli, a: ReviewArgs) -> Result<()> {
    let store = Store::open_existing(&cli.db()).await?;
    let rows = store
        .reviews(a.task.as_deref(), Some(ReviewState::Pending))
        .await?;
    let simulations = store.simulations().await?;
    if a.json {
        return print_json(&simulations.labelled(&rows)?);
    }
    let quarantined = store.quarantined(a.task.as_deref()).await?;
    if rows.is_empty() && quarantined.is_empty() {
        say!("nothing waits for review");
        return Ok(());
    }
    print_quarantined(&quarantined);
    if rows.is_empty() {
        return Ok(());
    }
    let now = chrono::Utc::now();
    say!(
        "{:>5}  {:<12} {:<12} {:<26} {:<18} {:>8}  measured",
        "entry",
        "task",
        "context",
        "gain [interval]",
        "proposer",
        "age"
    );
    for r in rows {
        let gain = match (r.gain, r.gain_low, r.gain_high) {
            (Some(g), Some(l), Some(h)) => format!("{} [{}, {}]", pct(g), pct(l), pct(h)),
            _ => "-".into(),
        };
        let age = chrono::DateTime::parse_from_rfc3339(&r.created_at)
            .map(|t| {
                let mins = (now - t.with_timezone(&chrono::Utc)).num_minutes();
                if mins < 120 {
                    format!("{mins}m")
                } else if mins < 48 * 60 {
                    format!("{}h", mins / 60)
                } else {
                    format!("{}d", mins / 1440)
                }
            })
            .unwrap_or_default();
        let measured = match simulations.of(&r.task, &r.context_id) {
            Some(_) => "SIMULATED",
            None => "yes",
        };
        say!(
            "{:>5}  {:<12} {:<12} {:<26} {:<18} {:>8}  {measured}",
            format!("e{}", r.entry),
            r.task,
            r.context_id,
            gain,
            r.proposer,
            age
        );
    }
    Ok(())
}

/// Quarantined candidates waiting for a person, with what to do about them.
fn print_quarantined(rows: &[QuarantinedRow]) {
    if rows.is_empty() {
        return;
    }
    say!(
        "quarantined, waiting for a person (`approve N --note WHY` releases, `reject N --reason WHY` dismisses):"
    );
    for q in rows {
        say!(
            "{:>5}  {:<12} {:<12} {} ({})",
            q.candidate,
            q.task,
            q.context_id,
            q.reason,
            q.origin
        );
    }
    say!();
}
