//! The daemon: at every tick, runs the schedules that are due (one run at a time, so one
//! benchmark at a time), including any whose task's context changed since its last run. One
//! daemon per runs.db; SIGTERM abandons the running evaluation cleanly and exits.

pub mod schedule;

use crate::engine::agent_host::AgentSettings;
use crate::engine::remote::RemoteSpec;
use crate::engine::run::{RunOptions, Strategy, run};
use crate::record::store::{ScheduleRow, now};
use crate::record::{LockFile, Store};
use crate::task::{Fingerprint, resolve};
use anyhow::{Result, bail};
use chrono::{DateTime, Utc};
use sandbox::{CancelFlag, Runner};
use schedule::{ScheduleState, When, due};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The agent's request timeout and per-run token budget in scheduled runs (the `run` defaults).
const AGENT_REQUEST_TIMEOUT_S: u64 = 120;
const AGENT_TOKEN_BUDGET: u64 = 2_000_000;

/// Granularity of the daemon's sleep between ticks: how fast it notices SIGTERM while idle.
const SLEEP_SLICE: Duration = Duration::from_millis(100);

fn state_of(row: &ScheduleRow) -> Result<ScheduleState> {
    let when = match (row.every_s, &row.cron) {
        (Some(s), _) => When::Every(Duration::from_secs(s.max(1) as u64)),
        (None, Some(c)) => When::parse_cron(c)?,
        (None, None) => bail!(
            "schedule {} has neither an interval nor a cron pattern",
            row.id
        ),
    };
    let last_run_at = row
        .last_run_at
        .as_deref()
        .map(DateTime::parse_from_rfc3339)
        .transpose()?
        .map(|d| d.with_timezone(&Utc));
    let last_fingerprint: Option<Fingerprint> = row
        .last_fingerprint
        .as_deref()
        .map(serde_json::from_str)
        .transpose()?;
    Ok(ScheduleState {
        when,
        last_run_at,
        last_context: row.last_context.clone(),
        last_fingerprint,
    })
}

pub struct DaemonOptions {
    pub tick: Duration,
    /// Check the schedules once and exit.
    pub once: bool,
}

/// Runs the daemon until SIGTERM/Ctrl-C (or after one pass with `once`).
pub async fn daemon(
    db: &Path,
    ledger: &Path,
    opts: &DaemonOptions,
    runner: &Runner,
    cancel: CancelFlag,
) -> Result<()> {
    let _lock = LockFile::daemon(db)?;
    let store = Store::open(db).await?;
    tracing::info!(db = %db.display(), tick_s = opts.tick.as_secs_f64(), "daemon started");
    while !cancel.load(Ordering::SeqCst) {
        for row in store.schedules().await? {
            if cancel.load(Ordering::SeqCst) {
                break;
            }
            if let Err(e) =
                tick_one(&store, db, ledger, &row, runner, cancel.clone(), Utc::now()).await
            {
                tracing::warn!(schedule = row.id, task = %row.task, "{e:#}");
                store
                    .schedule_finished(row.id, &format!("error: {e:#}"))
                    .await?;
            }
        }
        if opts.once {
            break;
        }
        let mut slept = Duration::ZERO;
        while slept < opts.tick && !cancel.load(Ordering::SeqCst) {
            tokio::time::sleep(SLEEP_SLICE).await;
            slept += SLEEP_SLICE;
        }
    }
    tracing::info!("daemon stopped");
    Ok(())
}

async fn tick_one(
    store: &Store,
    db: &Path,
    ledger: &Path,
    row: &ScheduleRow,
    runner: &Runner,
    cancel: CancelFlag,
    now_at: DateTime<Utc>,
) -> Result<()> {
    let workload = row.workload.as_deref().map(Path::new);
    let r = resolve(Path::new(&row.task_dir), workload)?;
    let state = state_of(row)?;
    let remote: Option<RemoteSpec> = row
        .remote
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| anyhow::anyhow!("schedule {}: its targets do not parse: {e}", row.id))?;
    // Remote targets' nodes are probed only by a run (a probe is a job on the cluster), so a
    // remote schedule is due by time: its runs then evaluate in whatever context the nodes are.
    let (context_id, fingerprint) = match (&remote, &state.last_context, &state.last_fingerprint) {
        (Some(_), Some(c), Some(f)) => (c.clone(), f.clone()),
        _ => (r.context_id.clone(), r.fingerprint.clone()),
    };
    let Some(reason) = due(&state, now_at, &context_id, &fingerprint) else {
        return Ok(());
    };
    let Ok(_run_lock) = LockFile::run(db) else {
        tracing::info!(
            schedule = row.id,
            "another run holds the database; trying again next tick"
        );
        return Ok(());
    };
    tracing::info!(schedule = row.id, task = %row.task, context = %context_id, "running: {reason}");
    store
        .schedule_started(
            row.id,
            &now(),
            &context_id,
            &serde_json::to_string(&fingerprint)?,
            &reason,
        )
        .await?;
    let opts = RunOptions {
        proposer: row.proposer.clone(),
        budget: row.budget.max(1) as usize,
        seed: None,
        workload: workload.map(Path::to_path_buf),
        progress: false,
        warm_start: true,
        agent: AgentSettings::from_env(
            None,
            "tools",
            AGENT_REQUEST_TIMEOUT_S,
            AGENT_TOKEN_BUDGET,
            1,
        )
        .ok(),
        simulate: None,
        strategy: Strategy::Tpe,
        targets: remote.map(|r| (r.targets, r.options)),
    };
    let status = match run(
        store,
        ledger,
        Path::new(&row.task_dir),
        &opts,
        runner,
        cancel,
    )
    .await
    {
        // One report per context the run found (several on a mixed cluster).
        Ok(reports) => {
            for report in &reports {
                tracing::info!(schedule = row.id, run = report.run_id, context = %report.context_id, accepted = report.accepted, status = %report.status, "run ended");
            }
            if let Some(first) = reports.first()
                && first.context_id != context_id
                && let Some((_, fp)) = store
                    .contexts(&row.task)
                    .await?
                    .into_iter()
                    .find(|(id, _)| *id == first.context_id)
            {
                store
                    .schedule_context(row.id, &first.context_id, &fp)
                    .await?;
            }
            let statuses: Vec<String> = reports.iter().map(|r| r.status.to_string()).collect();
            statuses.join(", ")
        }
        Err(e) => format!("failed: {e:#}"),
    };
    store.schedule_finished(row.id, &status).await?;
    Ok(())
}
