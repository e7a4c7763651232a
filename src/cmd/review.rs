//! `polymorph review`, `approve`, `reject` and `export`: the human side of the ledger.

use super::output::print_json;
use crate::cli::{ApproveArgs, Cli, ExportArgs, RejectArgs, ReviewArgs};
use anyhow::{Context as _, Result};
use polymorph::measure::pct;
use polymorph::record::{Ledger, ReviewState, Store, review};
use polymorph::view::entry_arg;

pub async fn approve(cli: &Cli, a: ApproveArgs) -> Result<()> {
    let store = Store::open(&cli.db).await?;
    let e = entry_arg(&store, &a.id).await?;
    let by = review::reviewer(a.by);
    review::approve(&store, &cli.db, &e, &by, a.note.as_deref()).await?;
    println!("e{} approved by {by}", e.id);
    Ok(())
}

pub async fn reject(cli: &Cli, a: RejectArgs) -> Result<()> {
    let store = Store::open(&cli.db).await?;
    let e = entry_arg(&store, &a.id).await?;
    let by = review::reviewer(a.by);
    let r = review::reject(&store, &cli.db, &cli.ledger, &e, &by, &a.reason).await?;
    if a.json {
        return print_json(&r);
    }
    let ids: Vec<String> = r.rejected.iter().map(|i| format!("e{i}")).collect();
    println!(
        "rejected {}; {} now restores e{} (revert commit {})",
        ids.join(", "),
        r.branch,
        r.restores,
        &r.revert_commit[..12]
    );
    Ok(())
}

pub async fn export(cli: &Cli, a: ExportArgs) -> Result<()> {
    let store = Store::open(&cli.db).await?;
    let e = entry_arg(&store, &a.id).await?;
    let patch = review::export(&store, &Ledger::open_or_init(&cli.ledger)?, &e).await?;
    match a.output {
        Some(path) => {
            std::fs::write(&path, patch).with_context(|| format!("writing {}", path.display()))?
        }
        None => print!("{patch}"),
    }
    Ok(())
}

pub async fn review(cli: &Cli, a: ReviewArgs) -> Result<()> {
    let store = Store::open(&cli.db).await?;
    let rows = store
        .reviews(a.task.as_deref(), Some(ReviewState::Pending))
        .await?;
    let json = a.json;
    if json {
        return print_json(&rows);
    }
    if rows.is_empty() {
        println!("nothing waits for review");
        return Ok(());
    }
    let now = chrono::Utc::now();
    println!(
        "{:>5}  {:<12} {:<12} {:<26} {:<18} {:>8}",
        "entry", "task", "context", "gain [interval]", "proposer", "age"
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
        println!(
            "{:>5}  {:<12} {:<12} {:<26} {:<18} {:>8}",
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
