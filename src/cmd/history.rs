//! `polymorph history`: runs and their outcomes, filtered, as a table, JSON or an SVG plot.

use super::output::{cell, print_json, say};
use crate::cli::{Cli, HistoryArgs};
use anyhow::{Context as _, Result, bail};
use polymorph::engine::daemon::schedule::parse_every;
use polymorph::measure::plot;
use polymorph::record::Store;
use polymorph::view::{HistoryFilter, history_rows};
use serde_json::Value;
use std::path::Path;

pub async fn history(cli: &Cli, a: HistoryArgs) -> Result<()> {
    let filter = HistoryFilter {
        task: a.task,
        context: a.context,
        since: a.since.as_deref().map(parse_since).transpose()?,
        verdict: a.verdict,
    };
    show_history(
        &Store::open_existing(&cli.db()).await?,
        &filter,
        a.plot.as_deref(),
        a.json,
    )
    .await
}

/// `--since`: a date, an RFC 3339 time, or an age such as 12h or 7d; as RFC 3339 UTC.
fn parse_since(s: &str) -> Result<String> {
    if let Ok(age) = parse_every(s) {
        let at = chrono::Utc::now() - chrono::Duration::from_std(age)?;
        return Ok(at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t
            .with_timezone(&chrono::Utc)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Ok(format!("{d}T00:00:00Z"));
    }
    bail!("--since {s:?}: give a date (2026-11-30), an RFC 3339 time, or an age (12h, 7d)")
}

async fn show_history(
    store: &Store,
    filter: &HistoryFilter,
    plot: Option<&Path>,
    json: bool,
) -> Result<()> {
    let rows = history_rows(store, filter).await?;
    if let Some(file) = plot {
        write_plot(store, &rows, file).await?;
    }
    if json {
        return print_json(&rows);
    }
    if rows.is_empty() {
        say!(
            "no runs yet{}",
            filter
                .task
                .as_deref()
                .map(|t| format!(" for task {t}"))
                .unwrap_or_default()
        );
        return Ok(());
    }
    print_table(&rows);
    Ok(())
}

/// `--plot FILE`: the shown runs' best-so-far curve and every candidate's gain, as SVG.
async fn write_plot(store: &Store, rows: &[Value], file: &Path) -> Result<()> {
    let ids: Vec<i64> = rows.iter().filter_map(|r| r["run"].as_i64()).collect();
    let points = store.plot_points(&ids).await?;
    let title = format!(
        "{} run(s), {} candidates: best so far vs the start, and each candidate's gain",
        ids.len(),
        points.len()
    );
    std::fs::write(file, plot::svg(&title, &points))
        .with_context(|| format!("writing {}", file.display()))?;
    eprintln!("plot written to {}", file.display());
    Ok(())
}

/// One line per run.
fn print_table(rows: &[Value]) {
    let text = |v: &Value| cell(v, "-");
    say!(
        "{:>4}  {:<12} {:<12} {:<8} {:<11} {:>5} {:>4} {:>4} {:>4} {:>4} {:>4} {:>12}  {:<20} {:>9}  measured",
        "run",
        "task",
        "context",
        "proposer",
        "status",
        "cand",
        "acc",
        "rej",
        "held",
        "fail",
        "quar",
        "best",
        "started",
        "tok/acc",
    );
    for r in rows {
        let proposer = text(&r["proposer"]);
        let proposer = if proposer.starts_with("replay:") {
            "replay".to_string()
        } else {
            proposer
        };
        let best = r["best_score"]
            .as_f64()
            .map_or("-".to_string(), |b| format!("{b:.4}"));
        say!(
            "{:>4}  {:<12} {:<12} {:<8} {:<11} {:>5} {:>4} {:>4} {:>4} {:>4} {:>4} {:>12}  {:<20} {:>9}  {}",
            text(&r["run"]),
            text(&r["task"]),
            text(&r["context_id"]),
            proposer,
            text(&r["status"]),
            text(&r["candidates"]),
            text(&r["accepted"]),
            text(&r["rejected"]),
            text(&r["held"]),
            text(&r["failed"]),
            text(&r["quarantined"]),
            best,
            text(&r["started_at"]),
            text(&r["prompt_tokens_per_accepted"]),
            if r["simulated"] == true {
                "SIMULATED"
            } else {
                "yes"
            },
        );
    }
}
