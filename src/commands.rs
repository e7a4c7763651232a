//! The commands behind the CLI: each opens what it needs, does its work through the library and
//! prints a result on stdout (a table for people, JSON with `--json`).

use crate::agent_driver::AgentSettings;
use crate::cli::{Cli, Command, ScheduleAction};
use crate::daemon::DaemonOptions;
use crate::evaluate::{Built, Harness};
use crate::judge::pct;
use crate::ledger::Ledger;
use crate::lock::LockFile;
use crate::optimize::{self, ProposerChoice, RunOptions, RunReport};
use crate::schedule::{When, format_duration, parse_every};
use crate::stats::median;
use crate::store::{CandidateRow, EntryRow, Store};
use anyhow::{Context as _, Result, bail};
use sandbox::{CancelFlag, FileTree, Isolation, Runner};
use serde_json::{Value, json};
use std::path::Path;

pub async fn dispatch(cli: Cli, cancel: CancelFlag) -> Result<()> {
    match cli.command {
        Command::Run {
            task_dir,
            proposer,
            budget,
            seed,
            workload,
            no_warm_start,
            model,
            agent_protocol,
            request_timeout,
            token_budget,
            agent_concurrency,
            json,
        } => {
            if budget == 0 {
                bail!("--budget must be at least 1");
            }
            let proposer = ProposerChoice::parse(&proposer)?;
            let agent = match proposer {
                ProposerChoice::Agent | ProposerChoice::Auto => Some(AgentSettings::from_env(
                    model,
                    &agent_protocol,
                    request_timeout,
                    token_budget,
                    agent_concurrency,
                )?),
                _ => None,
            };
            let opts = RunOptions {
                proposer,
                budget,
                seed,
                workload,
                progress: true,
                warm_start: !no_warm_start,
                agent,
            };
            let _lock = LockFile::run(&cli.db)?;
            let store = Store::open(&cli.db).await?;
            let report =
                optimize::run(&store, &cli.ledger, &task_dir, &opts, &runner(), cancel).await?;
            print_run(&report, &cli.ledger, json)
        }
        Command::Check {
            task_dir,
            rounds,
            entries,
            workload,
            json,
        } => {
            let extra = if entries.is_empty() {
                Vec::new()
            } else {
                entry_trees(&cli.db, &cli.ledger, &entries).await?
            };
            check(
                &task_dir,
                rounds.max(1),
                workload.as_deref(),
                extra,
                json,
                cancel,
            )
        }
        Command::History {
            task,
            context,
            since,
            verdict,
            plot,
            json,
        } => {
            let filter = HistoryFilter {
                task,
                context,
                since: since.as_deref().map(parse_since).transpose()?,
                verdict,
            };
            history(&Store::open(&cli.db).await?, &filter, plot.as_deref(), json).await
        }
        Command::Show { id, json } => {
            show(&Store::open(&cli.db).await?, &cli.ledger, &id, json).await
        }
        Command::Best {
            task,
            context,
            emit,
            json,
        } => {
            best(
                &Store::open(&cli.db).await?,
                &cli.ledger,
                &task,
                context.as_deref(),
                emit.as_deref(),
                json,
            )
            .await
        }
        Command::Review { task, json } => {
            review(&Store::open(&cli.db).await?, task.as_deref(), json).await
        }
        Command::Approve { id, by, note } => {
            let store = Store::open(&cli.db).await?;
            let e = entry_arg(&store, &id).await?;
            let by = crate::review::reviewer(by);
            crate::review::approve(&store, &cli.db, &e, &by, note.as_deref()).await?;
            println!("e{} approved by {by}", e.id);
            Ok(())
        }
        Command::Reject {
            id,
            reason,
            by,
            json,
        } => {
            let store = Store::open(&cli.db).await?;
            let e = entry_arg(&store, &id).await?;
            let r = crate::review::reject(
                &store,
                &cli.db,
                &cli.ledger,
                &e,
                &crate::review::reviewer(by),
                &reason,
            )
            .await?;
            if json {
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
        Command::Export { id, output } => {
            let store = Store::open(&cli.db).await?;
            let e = entry_arg(&store, &id).await?;
            let patch =
                crate::review::export(&store, &Ledger::open_or_init(&cli.ledger)?, &e).await?;
            match output {
                Some(path) => std::fs::write(&path, patch)
                    .with_context(|| format!("writing {}", path.display()))?,
                None => print!("{patch}"),
            }
            Ok(())
        }
        Command::Query { sql, json } => query(&Store::open(&cli.db).await?, &sql, json).await,
        Command::Context {
            task_dir,
            workload,
            json,
        } => context(&task_dir, workload.as_deref(), json),
        Command::Schedule { action } => schedule(&Store::open(&cli.db).await?, action).await,
        Command::Serve { host, port } => {
            crate::serve::serve(
                cli.db.clone(),
                cli.ledger.clone(),
                std::net::SocketAddr::new(host, port),
                cancel,
            )
            .await
        }
        Command::Daemon { tick, once } => {
            let opts = DaemonOptions {
                tick: parse_every(&tick).map_err(|e| anyhow::anyhow!("{e}").context("--tick"))?,
                once,
            };
            crate::daemon::daemon(&cli.db, &cli.ledger, &opts, &runner(), cancel).await
        }
    }
}

fn runner() -> Runner {
    let isolation = Isolation::detect(&std::env::var("PATH").unwrap_or_default());
    if let Isolation::Plain(why) = &isolation {
        tracing::warn!(
            "task commands run without bwrap isolation ({why}): no network or filesystem confinement"
        );
    }
    Runner::new(isolation)
}

/// A diff on stdout, coloured when stdout is a terminal.
fn print_diff(diff: &str) {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        print!("{diff}");
        return;
    }
    for line in diff.lines() {
        let colour = match line.as_bytes().first() {
            _ if line.starts_with("+++")
                || line.starts_with("---")
                || line.starts_with("diff ") =>
            {
                "1"
            }
            Some(b'+') => "32",
            Some(b'-') => "31",
            Some(b'@') => "36",
            _ => "",
        };
        if colour.is_empty() {
            println!("{line}")
        } else {
            println!("\x1b[{colour}m{line}\x1b[0m")
        }
    }
}

/// A JSON value as a table cell: strings bare, null as `null_as`.
fn cell(v: &Value, null_as: &str) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => null_as.to_string(),
        other => other.to_string(),
    }
}

/// Items joined with "; ", or `empty` when there are none.
fn joined(items: &[String], empty: &str) -> String {
    if items.is_empty() {
        empty.to_string()
    } else {
        items.join("; ")
    }
}

fn fmt_score(x: Option<f64>) -> String {
    x.map_or("-".to_string(), |v| format!("{v:.4}"))
}

fn print_json(v: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

fn print_run(r: &RunReport, ledger: &Path, json: bool) -> Result<()> {
    if json {
        return print_json(r);
    }
    println!(
        "run {} on {} ({}), context {}: {}",
        r.run_id, r.task, r.proposer, r.context_id, r.status
    );
    if let Some(m) = &r.message {
        println!("  {m}");
    }
    println!(
        "  {} candidates: {} accepted, {} rejected, {} failed, {} quarantined",
        r.candidates, r.accepted, r.rejected, r.failed, r.quarantined
    );
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => format!("{:.2}x", b / a),
        _ => "-".into(),
    };
    println!(
        "  {} (measured side by side at the end of the run):",
        r.metric
    );
    println!("    start       {}", fmt_score(r.start_score));
    println!(
        "    best        {}  ({} the start)",
        fmt_score(r.best_score),
        ratio(r.start_score, r.best_score)
    );
    if r.hand_tuned_score.is_some() {
        println!(
            "    hand-tuned  {}  (best is {} of it)",
            fmt_score(r.hand_tuned_score),
            ratio(r.hand_tuned_score, r.best_score)
        );
    }
    if let (Some(e), Some(c)) = (r.best_entry, &r.best_commit) {
        println!(
            "  best entry e{e}, commit {}: git -C {} log {}",
            &c[..12.min(c.len())],
            ledger.display(),
            r.branch
        );
    }
    Ok(())
}

/// Ledger entries by id, as (name, tree); their editable files go onto the checked task.
async fn entry_trees(
    db: &Path,
    ledger_path: &Path,
    ids: &[String],
) -> Result<Vec<(String, FileTree)>> {
    let store = Store::open(db).await?;
    let ledger = Ledger::open_or_init(ledger_path)?;
    let mut out = Vec::new();
    for id in ids {
        let e = resolve_entry(&store, id)
            .await?
            .with_context(|| format!("no ledger entry {id} (give e7 or a commit prefix)"))?;
        out.push((
            format!("e{}", e.id),
            ledger.read_tree(git2::Oid::from_str(&e.commit_sha)?)?,
        ));
    }
    Ok(out)
}

fn check(
    task_dir: &Path,
    rounds: usize,
    workload: Option<&Path>,
    extra: Vec<(String, FileTree)>,
    json: bool,
    cancel: CancelFlag,
) -> Result<()> {
    let r = optimize::resolve(task_dir, workload)?;
    let runner = runner();
    let mut h = Harness::new(&r.task, &r.source, &runner, cancel, r.workload.as_ref())?;
    let mut names = vec!["start".to_string()];
    let mut built: Vec<Built> = vec![
        h.prepare(r.source.clone())
            .map_err(|f| anyhow::anyhow!("the task as given: {}", f.reason))?,
    ];
    if let Some(hand) = r.hand_tuned.clone() {
        built.push(
            h.prepare(hand)
                .map_err(|f| anyhow::anyhow!("the hand-tuned baseline: {}", f.reason))?,
        );
        names.push("hand_tuned".to_string());
    }
    for (name, tree) in extra {
        let mut t = r.source.clone();
        for (p, b) in tree.iter().filter(|(p, _)| r.task.is_editable(p)) {
            t.insert(p.clone(), b.clone());
        }
        built.push(
            h.prepare(t)
                .map_err(|f| anyhow::anyhow!("entry {name}: {}", f.reason))?,
        );
        names.push(name);
    }
    let refs: Vec<&Built> = built.iter().collect();
    let samples = h.measure(&refs, rounds)?;
    let cases: Vec<String> = samples[0][0].cases.keys().cloned().collect();
    let per_case = |i: usize, case: &str| {
        median(&samples[i].iter().map(|s| s.cases[case]).collect::<Vec<_>>())
    };
    let scores: Vec<f64> = (0..names.len())
        .map(|i| crate::evaluate::median_score(&samples[i]))
        .collect();
    if json {
        let trees: Vec<Value> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let c: serde_json::Map<String, Value> = cases
                    .iter()
                    .map(|c| (c.clone(), json!(per_case(i, c))))
                    .collect();
                json!({ "name": n, "score": scores[i], "cases": c })
            })
            .collect();
        return print_json(&json!({
            "task": r.task.name, "context_id": r.context_id, "metric": r.task.metric.name,
            "direction": r.task.metric.direction.as_str(), "isolation": runner.isolation().describe(), "trees": trees,
        }));
    }
    println!(
        "task {} ok: builds, passes its test, benchmarks ({} rounds each, interleaved)",
        r.task.name, rounds
    );
    println!(
        "context {}  isolation: {}",
        r.context_id,
        runner.isolation().describe()
    );
    print!(
        "{:<24}",
        format!(
            "{} ({})",
            r.task.metric.name,
            r.task.metric.direction.as_str()
        )
    );
    for n in &names {
        print!("{n:>14}");
    }
    println!();
    for c in &cases {
        print!("{c:<24}");
        for i in 0..names.len() {
            print!("{:>14.4}", per_case(i, c));
        }
        println!();
    }
    print!("{:<24}", "score (geomean)");
    for s in &scores {
        print!("{s:>14.4}");
    }
    println!();
    for (name, score) in names.iter().zip(&scores).skip(1) {
        let g = crate::judge::log_gain(r.task.metric.direction, scores[0], *score).exp();
        println!("{name} is {g:.2}x the start");
    }
    Ok(())
}

/// Which runs `history` shows.
#[derive(Default)]
pub struct HistoryFilter {
    pub task: Option<String>,
    pub context: Option<String>,
    /// RFC 3339 UTC; runs that started at or after it.
    pub since: Option<String>,
    pub verdict: Option<String>,
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

/// The rows `history` shows (one JSON object per run), filtered.
pub async fn history_rows(store: &Store, filter: &HistoryFilter) -> Result<Vec<Value>> {
    const VERDICTS: [&str; 4] = ["accepted", "rejected", "failed", "quarantined"];
    if let Some(v) = filter.verdict.as_deref().filter(|v| !VERDICTS.contains(v)) {
        bail!("--verdict {v:?}: expected one of {}", VERDICTS.join(", "));
    }
    let task = filter.task.as_deref();
    let runs = store.runs(task).await?;
    let mut rows = Vec::new();
    for run in &runs {
        if filter
            .context
            .as_ref()
            .is_some_and(|c| *c != run.context_id)
            || filter.since.as_ref().is_some_and(|s| run.started_at < *s)
        {
            continue;
        }
        let counts = store.verdict_counts(run.id).await?;
        let count = |v: &str| counts.iter().find(|(k, _)| k == v).map_or(0, |(_, n)| *n);
        if filter.verdict.as_deref().is_some_and(|v| count(v) == 0) {
            continue;
        }
        let best = store
            .incumbent(&crate::ledger::branch_name(&run.task, &run.context_id))
            .await?;
        let (tokens, requests) = store.run_usage(run.id).await?;
        rows.push(json!({
            "run": run.id, "task": run.task, "context_id": run.context_id, "proposer": run.proposer,
            "budget": run.budget, "status": run.status, "started_at": run.started_at, "finished_at": run.finished_at,
            "candidates": counts.iter().map(|(_, n)| n).sum::<i64>(),
            "accepted": count("accepted"), "rejected": count("rejected"), "failed": count("failed"), "quarantined": count("quarantined"),
            "start_score": run.start_score, "hand_tuned_score": run.hand_tuned_score,
            "best_entry": best.as_ref().map(|b| b.id), "best_score": best.and_then(|b| b.score),
            "message": run.message, "model_tokens": tokens, "model_requests": requests,
        }));
    }
    Ok(rows)
}

async fn history(
    store: &Store,
    filter: &HistoryFilter,
    plot: Option<&Path>,
    json: bool,
) -> Result<()> {
    let rows = history_rows(store, filter).await?;
    if let Some(file) = plot {
        let ids: Vec<i64> = rows.iter().filter_map(|r| r["run"].as_i64()).collect();
        let points = store.plot_points(&ids).await?;
        let title = format!(
            "{} run(s), {} candidates: best so far vs the start, and each candidate's gain",
            ids.len(),
            points.len()
        );
        std::fs::write(file, crate::plot::svg(&title, &points))
            .with_context(|| format!("writing {}", file.display()))?;
        eprintln!("plot written to {}", file.display());
    }
    if json {
        return print_json(&rows);
    }
    if rows.is_empty() {
        println!(
            "no runs yet{}",
            filter
                .task
                .as_deref()
                .map(|t| format!(" for task {t}"))
                .unwrap_or_default()
        );
        return Ok(());
    }
    let text = |v: &Value| cell(v, "-");
    println!(
        "{:>4}  {:<12} {:<12} {:<8} {:<11} {:>5} {:>4} {:>4} {:>4} {:>4} {:>12}  {:<20}",
        "run",
        "task",
        "context",
        "proposer",
        "status",
        "cand",
        "acc",
        "rej",
        "fail",
        "quar",
        "best",
        "started"
    );
    for r in &rows {
        let proposer = text(&r["proposer"]);
        let proposer = if proposer.starts_with("replay:") {
            "replay".to_string()
        } else {
            proposer
        };
        let best = r["best_score"]
            .as_f64()
            .map_or("-".to_string(), |b| format!("{b:.4}"));
        println!(
            "{:>4}  {:<12} {:<12} {:<8} {:<11} {:>5} {:>4} {:>4} {:>4} {:>4} {:>12}  {:<20}",
            text(&r["run"]),
            text(&r["task"]),
            text(&r["context_id"]),
            proposer,
            text(&r["status"]),
            text(&r["candidates"]),
            text(&r["accepted"]),
            text(&r["rejected"]),
            text(&r["failed"]),
            text(&r["quarantined"]),
            best,
            text(&r["started_at"]),
        );
    }
    Ok(())
}

async fn resolve_entry(store: &Store, id: &str) -> Result<Option<EntryRow>> {
    if let Some(n) = id.strip_prefix('e').and_then(|n| n.parse::<i64>().ok()) {
        return store.entry(n).await;
    }
    if id.len() >= 7 && id.chars().all(|c| c.is_ascii_hexdigit()) && id.parse::<i64>().is_err() {
        let found = store.entry_by_commit(&id.to_ascii_lowercase()).await?;
        if found.len() > 1 {
            bail!("commit prefix {id} is ambiguous ({} entries)", found.len());
        }
        return Ok(found.into_iter().next());
    }
    Ok(None)
}

/// A ledger entry named on the command line (e7, or a commit prefix).
async fn entry_arg(store: &Store, id: &str) -> Result<EntryRow> {
    resolve_entry(store, id).await?.with_context(|| {
        format!("no ledger entry {id}: give e7 or a commit prefix (see `polymorph review`)")
    })
}

async fn review(store: &Store, task: Option<&str>, json: bool) -> Result<()> {
    let rows = store.reviews(task, Some("pending")).await?;
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

/// Everything `show` and the review page display about one candidate.
pub struct ShowData {
    pub c: CandidateRow,
    pub entry: Option<EntryRow>,
    /// Per case: (incumbent samples, candidate samples).
    pub per_case: std::collections::BTreeMap<String, (Vec<f64>, Vec<f64>)>,
    pub diff: Option<String>,
}

pub async fn show_data(
    store: &Store,
    ledger_path: &Path,
    cid: i64,
    entry: Option<EntryRow>,
) -> Result<ShowData> {
    let c = store
        .candidate(cid)
        .await?
        .with_context(|| format!("no candidate {cid} in runs.db"))?;
    let entry = match entry {
        Some(e) => Some(e),
        None => store.entry_for_candidate(cid).await?,
    };
    let samples = store.samples(cid).await?;
    // An accepted entry's diff comes from the ledger, against the entry it was built on.
    let diff = match &entry {
        Some(e) if e.kind == "accepted" => {
            let parent = match e.parent_entry_id {
                Some(p) => store.entry(p).await?.map(|p| p.commit_sha),
                None => None,
            };
            match parent {
                Some(p) => Some(Ledger::open_or_init(ledger_path)?.diff(
                    git2::Oid::from_str(&p)?,
                    git2::Oid::from_str(&e.commit_sha)?,
                )?),
                None => c.diff.clone(),
            }
        }
        _ => c.diff.clone(),
    };
    let mut per_case: std::collections::BTreeMap<String, (Vec<f64>, Vec<f64>)> = Default::default();
    for s in &samples {
        let slot = per_case.entry(s.case_name.clone()).or_default();
        if s.side == "incumbent" {
            slot.0.push(s.value)
        } else {
            slot.1.push(s.value)
        }
    }
    Ok(ShowData {
        c,
        entry,
        per_case,
        diff,
    })
}

pub fn show_json(d: &ShowData) -> Result<Value> {
    let (c, entry) = (&d.c, &d.entry);
    let cases: serde_json::Map<String, Value> = d
        .per_case
        .iter()
        .map(|(k, (a, b))| (k.clone(), json!({ "incumbent": a, "candidate": b, "incumbent_median": median(a), "candidate_median": median(b) })))
        .collect();
    Ok(json!({
        "candidate": c.id, "run": c.run_id, "seq": c.seq, "task": c.task, "context_id": c.context_id,
        "proposer": c.proposer, "origin": c.origin, "note": c.note, "kind": c.kind, "payload": serde_json::from_str::<Value>(&c.payload)?,
        "verdict": c.verdict, "reason": c.reason, "stage": c.stage,
        "gain": c.gain, "gain_low": c.gain_low, "gain_high": c.gain_high, "confidence": c.confidence,
        "incumbent_score": c.incumbent_score, "candidate_score": c.candidate_score, "pairs": c.pairs,
        "bench_seconds": c.bench_seconds, "overhead_ms": c.overhead_ms, "parent_entry": c.parent_entry_id,
        "entry": entry.as_ref().map(|e| json!({
            "id": e.id, "commit": e.commit_sha, "branch": e.branch, "review_state": e.review_state,
            "reviewed_by": e.reviewed_by, "reviewed_at": e.reviewed_at, "review_reason": e.review_reason,
        })),
        "cases": cases, "diff": d.diff, "log": c.log, "created_at": c.created_at,
    }))
}

async fn show(store: &Store, ledger_path: &Path, id: &str, json: bool) -> Result<()> {
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
        let out = json!({ "entry": e.id, "kind": e.kind, "task": e.task, "context_id": e.context_id, "branch": e.branch, "commit": e.commit_sha });
        if json {
            return print_json(&out);
        }
        println!(
            "entry e{}: the task {} as given, branch {}, commit {}",
            e.id, e.task, e.branch, e.commit_sha
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
    } = d;
    println!(
        "candidate {} (run {}, #{}) of {} in context {}",
        c.id, c.run_id, c.seq, c.task, c.context_id
    );
    println!(
        "  proposer: {} ({}){}",
        c.proposer,
        c.origin,
        c.note
            .as_ref()
            .map(|n| format!(": {n}"))
            .unwrap_or_default()
    );
    if let Some(parent) = c.parent_entry_id {
        println!("  parent:   e{parent} (the incumbent it was measured against)");
    }
    println!("  verdict:  {} at {}: {}", c.verdict, c.stage, c.reason);
    if let (Some(g), Some(l), Some(h)) = (c.gain, c.gain_low, c.gain_high) {
        println!(
            "  gain:     {} [{}, {}] at {:.1}% confidence over {} pairs ({:.1}s of benchmarks)",
            pct(g),
            pct(l),
            pct(h),
            c.confidence.unwrap_or(0.0) * 100.0,
            c.pairs,
            c.bench_seconds
        );
        println!(
            "  score:    incumbent {} -> candidate {}",
            fmt_score(c.incumbent_score),
            fmt_score(c.candidate_score)
        );
    }
    if let Some(e) = &entry {
        println!(
            "  ledger:   entry e{} on {}, commit {} ({})",
            e.id, e.branch, e.commit_sha, e.review_state
        );
        if let (Some(by), Some(at)) = (&e.reviewed_by, &e.reviewed_at) {
            let why = e
                .review_reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default();
            println!("  review:   {} by {by} at {at}{why}", e.review_state);
        }
    }
    if let Some(model) = &c.model {
        println!(
            "  model:    {model}, {} prompt + {} completion tokens",
            c.prompt_tokens.unwrap_or(0),
            c.completion_tokens.unwrap_or(0)
        );
    }
    if let (Some(score), Some(hand)) = (
        c.candidate_score,
        store.run(c.run_id).await?.and_then(|r| r.hand_tuned_score),
    ) {
        println!(
            "  baseline: the candidate measured {:.2}x the hand-tuned baseline's figure at the run's start",
            score / hand
        );
    }
    if !per_case.is_empty() {
        println!(
            "  {:<24}{:>14}{:>14}  change [95% interval]",
            "case (median)", "incumbent", "candidate"
        );
        for (k, (a, b)) in &per_case {
            let (ma, mb) = (median(a), median(b));
            // Samples are stored round by round, so a[i] and b[i] are one interleaved pair.
            let ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| (y / x).ln()).collect();
            let interval = crate::stats::signed_rank_interval(&ratios, 0.95)
                .map(|i| format!("{} [{}, {}]", pct(i.estimate), pct(i.low), pct(i.high)))
                .unwrap_or_else(|| format!("{:+.1}%", (mb / ma - 1.0) * 100.0));
            println!("  {k:<24}{ma:>14.4}{mb:>14.4}  {interval}");
        }
    }
    if let Some(d) = diff.filter(|d| !d.is_empty()) {
        println!();
        print_diff(&d);
    }
    if let Some(log) = c.log.filter(|l| !l.is_empty()) {
        println!("\n--- output of the failing command (tail) ---\n{log}");
    }
    Ok(())
}

async fn best(
    store: &Store,
    ledger_path: &Path,
    task: &str,
    context: Option<&str>,
    emit: Option<&Path>,
    json: bool,
) -> Result<()> {
    let as_dir = Path::new(task);
    let (name, ctx) = if as_dir.join("task.toml").is_file() {
        let r = optimize::resolve(as_dir, None)?;
        let ctx = context.map(str::to_string).unwrap_or(r.context_id);
        (r.task.name, ctx)
    } else {
        let ctx = match context {
            Some(c) => c.to_string(),
            None => {
                let mut ctxs: Vec<String> = store
                    .entries(Some(task))
                    .await?
                    .into_iter()
                    .map(|e| e.context_id)
                    .collect();
                ctxs.sort();
                ctxs.dedup();
                match ctxs.as_slice() {
                    [one] => one.clone(),
                    [] => bail!("no entries for task {task} in runs.db"),
                    many => bail!(
                        "task {task} has several contexts ({}); pass --context or the task directory",
                        many.join(", ")
                    ),
                }
            }
        };
        (task.to_string(), ctx)
    };
    let branch = crate::ledger::branch_name(&name, &ctx);
    let e = store
        .incumbent(&branch)
        .await?
        .with_context(|| format!("no entries for {name} in context {ctx} (branch {branch})"))?;
    let origin = store
        .origin(&branch)
        .await?
        .with_context(|| format!("branch {branch} has no origin entry"))?;
    let ledger = Ledger::open_or_init(ledger_path)?;
    let tree = ledger.read_tree(git2::Oid::from_str(&e.commit_sha)?)?;
    let start = ledger.read_tree(git2::Oid::from_str(&origin.commit_sha)?)?;
    let params: Option<Value> = e.params.as_deref().map(serde_json::from_str).transpose()?;
    // What to deploy: the files this entry changes against the task as given.
    let changed: serde_json::Map<String, Value> = tree
        .iter()
        .filter(|(p, b)| start.get(p) != Some(b.as_slice()))
        .map(|(p, b)| {
            (
                p.to_string(),
                Value::from(String::from_utf8_lossy(b).into_owned()),
            )
        })
        .collect();
    if let Some(dir) = emit {
        if dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
            bail!("--emit {}: the directory is not empty", dir.display());
        }
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        tree.write_to(dir)?;
    }
    if json {
        return print_json(&json!({
            "task": name, "context_id": ctx, "branch": branch, "entry": e.id, "kind": e.kind, "commit": e.commit_sha,
            "score": e.score, "review_state": e.review_state, "params": params,
            "deploy": { "params": params, "files": changed }, "emitted": emit.map(|d| d.display().to_string()),
        }));
    }
    let what = if e.kind == "origin" {
        "the task as given (nothing accepted yet)".to_string()
    } else {
        format!("entry e{}", e.id)
    };
    println!("best for {name} in context {ctx}: {what}");
    println!(
        "  commit {} on {branch} ({}), score {}",
        e.commit_sha,
        e.review_state,
        fmt_score(e.score)
    );
    if let Some(p) = params {
        println!("  params {p}");
    }
    let files: Vec<&String> = changed.keys().collect();
    if !files.is_empty() {
        println!(
            "  changes {}",
            files
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(dir) = emit {
        println!("  tree written to {}", dir.display());
    }
    Ok(())
}

fn context(task_dir: &Path, workload: Option<&Path>, json: bool) -> Result<()> {
    let r = optimize::resolve(task_dir, workload)?;
    if json {
        return print_json(
            &json!({ "task": r.task.name, "context_id": r.context_id, "branch": r.branch, "fingerprint": r.fingerprint }),
        );
    }
    let f = &r.fingerprint;
    println!(
        "context {} for {} (ledger branch {})",
        r.context_id, r.task.name, r.branch
    );
    println!("  cpu        {} ({} cores)", f.cpu_model, f.cpu_cores);
    println!("  gpus       {}", joined(&f.gpus, "none"));
    println!("  toolchain  {}", joined(&f.toolchain, "-"));
    println!(
        "  workload   {} (sha256 {})",
        if f.workload.is_empty() {
            "-"
        } else {
            &f.workload
        },
        &f.workload_sha256[..f.workload_sha256.len().min(12)]
    );
    println!(
        "  model      {}",
        if f.model.is_empty() { "-" } else { &f.model }
    );
    println!(
        "  harness    sha256 {}",
        &f.harness_sha256[..12.min(f.harness_sha256.len())]
    );
    Ok(())
}

async fn schedule(store: &Store, action: ScheduleAction) -> Result<()> {
    match action {
        ScheduleAction::Add {
            task_dir,
            every,
            cron,
            budget,
            proposer,
            workload,
        } => {
            if budget == 0 {
                bail!("--budget must be at least 1");
            }
            ProposerChoice::parse(&proposer)?;
            let r = optimize::resolve(&task_dir, workload.as_deref())?;
            let (every_s, when) = match (&every, &cron) {
                (Some(e), None) => {
                    let d = parse_every(e)?;
                    (Some(d.as_secs() as i64), When::Every(d))
                }
                (None, Some(c)) => (None, When::parse_cron(c)?),
                _ => bail!("give exactly one of --every or --cron"),
            };
            let workload = r
                .workload
                .as_ref()
                .filter(|_| workload.is_some())
                .map(|w| w.path.display().to_string());
            let id = store
                .add_schedule(
                    &r.task.name,
                    &r.task.dir.display().to_string(),
                    every_s,
                    cron.as_deref(),
                    budget as i64,
                    &proposer,
                    workload.as_deref(),
                )
                .await?;
            println!(
                "schedule {id}: {} {}, budget {budget}, proposer {proposer}; run `polymorph daemon` to execute it",
                r.task.name,
                when.describe()
            );
            Ok(())
        }
        ScheduleAction::List { json } => {
            let rows = store.schedules().await?;
            if json {
                return print_json(&rows);
            }
            if rows.is_empty() {
                println!("no schedules");
            }
            for s in rows {
                let when = match (s.every_s, &s.cron) {
                    (Some(e), _) => format!(
                        "every {}",
                        format_duration(std::time::Duration::from_secs(e.max(0) as u64))
                    ),
                    (None, Some(c)) => format!("cron {c:?}"),
                    _ => "-".into(),
                };
                println!(
                    "{:>3}  {:<12} {:<20} budget {:<4} {:<8} last run {} ({}){}",
                    s.id,
                    s.task,
                    when,
                    s.budget,
                    s.proposer,
                    s.last_run_at.as_deref().unwrap_or("never"),
                    s.last_status.as_deref().unwrap_or("-"),
                    s.last_reason.map(|r| format!(": {r}")).unwrap_or_default()
                );
            }
            Ok(())
        }
        ScheduleAction::Remove { id } => {
            if !store.remove_schedule(id).await? {
                bail!("no schedule {id}");
            }
            println!("schedule {id} removed");
            Ok(())
        }
    }
}

async fn query(store: &Store, sql: &str, json: bool) -> Result<()> {
    let (columns, rows) = store.query_readonly(sql).await?;
    if json {
        let objs: Vec<Value> = rows
            .iter()
            .map(|r| Value::Object(columns.iter().cloned().zip(r.iter().cloned()).collect()))
            .collect();
        return print_json(&objs);
    }
    println!("{}", columns.join("\t"));
    for r in rows {
        let cells: Vec<String> = r.iter().map(|v| cell(v, "NULL")).collect();
        println!("{}", cells.join("\t"));
    }
    Ok(())
}
