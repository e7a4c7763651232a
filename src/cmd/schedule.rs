//! `polymorph schedule` and `polymorph daemon`: scheduled re-tuning.

use super::output::print_json;
use crate::cli::{Cli, DaemonArgs, ScheduleAction};
use anyhow::{Result, bail};
use polymorph::engine::daemon::schedule::{When, format_duration, parse_every};
use polymorph::engine::daemon::{DaemonOptions, daemon as run_daemon};
use polymorph::engine::remote::RemoteSpec;
use polymorph::engine::runner;
use polymorph::record::{ProposerChoice, Store};
use polymorph::task::resolve;
use sandbox::CancelFlag;
use std::path::PathBuf;

/// Candidates a scheduled run evaluates when neither `--budget` nor the task's `[run] budget`
/// says.
const DEFAULT_BUDGET: usize = 20;

pub async fn schedule(cli: &Cli, action: ScheduleAction) -> Result<()> {
    // Only `add` writes a schedule, so only `add` makes a database that is not there.
    let store = match &action {
        ScheduleAction::Add { .. } => Store::open(&cli.db()).await?,
        _ => Store::open_existing(&cli.db()).await?,
    };
    match action {
        ScheduleAction::Add {
            task_dir,
            every,
            cron,
            budget,
            proposer,
            workload,
            remote,
        } => {
            let remote = super::run::targets(&remote)?;
            add(
                &store, task_dir, every, cron, budget, proposer, workload, remote,
            )
            .await
        }
        ScheduleAction::List { json } => list(&store, json).await,
        ScheduleAction::Remove { id } => {
            if !store.remove_schedule(id).await? {
                bail!("no schedule {id}");
            }
            println!("schedule {id} removed");
            Ok(())
        }
    }
}

pub async fn daemon(cli: &Cli, a: DaemonArgs, cancel: CancelFlag) -> Result<()> {
    let opts = DaemonOptions {
        tick: parse_every(&a.tick).map_err(|e| anyhow::anyhow!("{e}").context("--tick"))?,
        once: a.once,
    };
    run_daemon(
        &cli.db(),
        &cli.ledger(),
        &opts,
        &runner(&[&cli.db(), &cli.ledger()]),
        cancel,
    )
    .await
}

#[allow(clippy::too_many_arguments)]
async fn add(
    store: &Store,
    task_dir: PathBuf,
    every: Option<String>,
    cron: Option<String>,
    budget: Option<usize>,
    proposer: ProposerChoice,
    workload: Option<PathBuf>,
    remote: Option<RemoteSpec>,
) -> Result<()> {
    if budget == Some(0) {
        bail!("--budget must be at least 1");
    }
    let r = resolve(&task_dir, workload.as_deref())?;
    let budget = budget.or(r.task.budget).unwrap_or(DEFAULT_BUDGET);
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
            remote
                .as_ref()
                .map(serde_json::to_string)
                .transpose()?
                .as_deref(),
        )
        .await?;
    let on = remote.map_or("here".to_string(), |r| shown_targets(&r));
    println!(
        "schedule {id}: {} {}, budget {budget}, proposer {proposer}, evaluating {on}; run `polymorph daemon` to execute it",
        r.task.name,
        when.describe()
    );
    Ok(())
}

async fn list(store: &Store, json: bool) -> Result<()> {
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
        let on = match s.remote.as_deref().map(serde_json::from_str::<RemoteSpec>) {
            Some(Ok(r)) => format!(" on {}", shown_targets(&r)),
            Some(Err(e)) => format!(" on ? ({e})"),
            None => String::new(),
        };
        println!(
            "{:>3}  {:<12} {:<20} budget {:<4} {:<8}{on} last run {} ({}){}",
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

/// "on ssh://gpu7, slurm:h200 (2 jobs)".
fn shown_targets(r: &RemoteSpec) -> String {
    let list: Vec<String> = r.targets.iter().map(ToString::to_string).collect();
    match r.options.jobs {
        1 => list.join(", "),
        n => format!("{} ({n} jobs)", list.join(", ")),
    }
}
