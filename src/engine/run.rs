//! A run: resolve the context (here, or on the remote targets' nodes), make sure the ledger
//! branch and runs.db agree, start or resume the run row, hand the loop (`run_loop.rs`) the
//! proposer and where to evaluate, and measure start, best and hand-tuned side by side at the
//! end. A killed run resumes where it stopped.

use super::agent_host::AgentSettings;
use super::evaluator::{Evaluator, base_job};
use super::ledger_sync::sync_ledger;
use super::proposers::{Strategy, make_proposer, resolve_proposer};
use super::remote::{NoTargetLeft, Pool, Target, TargetOptions};
use super::report::{RunReport, final_measurement};
use super::run_loop::Loop;
use super::side_by_side::{probe_targets, side_by_side};
use super::simulate::{Cache, harness, simulated};
use super::warm_start::warm_start;
use crate::record::store::RunClaim;
use crate::record::{Ledger, ProposerChoice, RunProposer, RunStatus, Store};
use crate::task::{Resolved, resolve};
use anyhow::{Context as _, Result, bail};
use sandbox::{CancelFlag, Runner};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

pub struct RunOptions {
    pub proposer: ProposerChoice,
    pub budget: usize,
    pub seed: Option<u64>,
    pub workload: Option<PathBuf>,
    /// Print one progress line per candidate on stderr.
    pub progress: bool,
    /// In a context never tuned, first re-measure the bests of the nearest tuned contexts.
    pub warm_start: bool,
    /// The LLM agent's settings, for `--proposer agent` (and `auto` when an endpoint is set).
    pub agent: Option<AgentSettings>,
    /// Replay this recorded measurement cache instead of running the task's processes; the
    /// run's context names the cache, so its results never mix with measured ones.
    pub simulate: Option<PathBuf>,
    /// How the search proposer chooses assignments.
    pub strategy: Strategy,
    /// Where evaluations run: here (`None`), or on these remote targets.
    pub targets: Option<(Vec<Target>, TargetOptions)>,
}

/// The run row this attempt works in: new, or an interrupted one resumed.
pub(super) struct Attempt {
    pub run_id: i64,
    pub done: usize,
    pub seed: u64,
    pub resumed: bool,
    /// This process's claim on the run (see `Store::claim_run`), held while it works in it.
    _claim: RunClaim,
}

async fn start_or_resume(
    store: &Store,
    r: &Resolved,
    proposer: &RunProposer,
    opts: &RunOptions,
) -> Result<Attempt> {
    let task = &r.task;
    // The newest unfinished run nobody else works in (on a shared database another live
    // controller may hold one).
    for run in store
        .resumable_runs(&task.name, &r.context_id, proposer)
        .await?
    {
        let Some(claim) = store.claim_run(run.id).await? else {
            continue;
        };
        let done = store.candidates_in_run(run.id).await? as usize;
        store.mark_running(run.id).await?;
        if opts.progress {
            eprintln!(
                "resuming run {} ({done} of {} candidates already evaluated)",
                run.id,
                opts.budget.max(run.budget as usize)
            );
        }
        return Ok(Attempt {
            run_id: run.id,
            done,
            seed: run.seed as u64,
            resumed: true,
            _claim: claim,
        });
    }
    let seed = opts
        .seed
        .unwrap_or_else(|| u64::from(rand::random::<u32>()));
    loop {
        let run_id = store
            .create_run(
                &task.name,
                &task.dir.display().to_string(),
                &r.context_id,
                proposer,
                opts.budget as i64,
                seed as i64,
            )
            .await?;
        // Another controller may resume a brand-new run before its creator claims it: then
        // that one works in it and this one makes another.
        if let Some(claim) = store.claim_run(run_id).await? {
            return Ok(Attempt {
                run_id,
                done: 0,
                seed,
                resumed: false,
                _claim: claim,
            });
        }
    }
}

/// Runs the loop on a task for `opts.budget` candidates (resuming an interrupted run). One
/// report per context: one, unless the remote targets span several contexts (a mixed
/// cluster), where each context's targets get a run and a branch of their own, side by side.
pub async fn run(
    store: &Store,
    ledger_path: &Path,
    task_dir: &Path,
    opts: &RunOptions,
    runner: &Runner,
    cancel: CancelFlag,
) -> Result<Vec<RunReport>> {
    let mut r = resolve(task_dir, opts.workload.as_deref())?;
    let here = |r, cache| Context {
        r,
        cache,
        pool: None,
        label: String::new(),
    };
    let one = match (&opts.simulate, &opts.targets) {
        (Some(_), Some(_)) => bail!("--simulate replays a cache here; it takes no --target"),
        (Some(path), None) => {
            let cache = simulated(&mut r, path)?;
            here(r, Some(cache))
        }
        (None, None) => {
            r.check_requirements()?;
            here(r, None)
        }
        (None, Some((targets, options))) => {
            let mut groups = probe_targets(&r, targets, options, &cancel)?;
            if groups.len() > 1 {
                return side_by_side(store, ledger_path, groups, opts, runner, cancel);
            }
            groups.remove(0)
        }
    };
    Ok(vec![
        run_in_context(store, ledger_path, one, opts, runner, cancel).await?,
    ])
}

/// A resolved task in one context and where its evaluations run.
pub(super) struct Context {
    pub r: Resolved,
    /// A recorded cache replayed instead of the task's processes (`--simulate`).
    pub cache: Option<Cache>,
    /// The remote targets of this context; `None`: here.
    pub pool: Option<Pool>,
    /// Put before each progress line when several contexts run side by side.
    pub label: String,
}

/// One run in one context: proposer, ledger branch, run row, loop, final measurement.
pub(super) async fn run_in_context(
    store: &Store,
    ledger_path: &Path,
    ctx: Context,
    opts: &RunOptions,
    runner: &Runner,
    cancel: CancelFlag,
) -> Result<RunReport> {
    let Context {
        r,
        cache,
        pool,
        label,
    } = ctx;
    let task = &r.task;
    let chosen = resolve_proposer(&opts.proposer, task, opts.agent.as_ref())?;
    let ledger = Ledger::open_or_init(ledger_path)?;
    ledger.check_writable()?;
    store
        .upsert_context(
            &task.name,
            &r.context_id,
            &serde_json::to_string(&r.fingerprint)?,
        )
        .await?;
    let (entry, commit) = sync_ledger(store, &ledger, &r).await?;
    let at = start_or_resume(store, &r, &chosen, opts).await?;
    let mut proposer = make_proposer(
        &chosen,
        &r,
        runner,
        cancel.clone(),
        at.seed.wrapping_add(at.done as u64),
        at.done,
        opts,
    )?;
    if opts.warm_start
        && cache.is_none()
        && store
            .candidates_in_context(&task.name, &r.context_id)
            .await?
            == 0
    {
        let warm = warm_start(store, &ledger, &r).await?;
        if !warm.is_empty() && opts.progress {
            eprintln!(
                "new context {}: first re-measuring {} best entries of neighbouring contexts",
                r.context_id,
                warm.len()
            );
        }
        proposer = Box::new(agent::Prepend::new(warm, proposer));
    }
    let outcome = async {
        let exec = match pool {
            Some(pool) => Evaluator::remote(pool, base_job(&r)?, &r, cancel.clone()),
            None => Evaluator::local(harness(
                &r,
                runner,
                cancel.clone(),
                cache.as_ref(),
                at.seed,
            )?),
        };
        let mut lp =
            Loop::start(store, &ledger, &r, exec, cancel.clone(), &at, entry, commit).await?;
        lp.label = label;
        let message = lp.run(opts, at.done, &chosen, proposer.as_mut()).await?;
        anyhow::Ok((message, lp.incumbent_commit, lp.exec))
    }
    .await;
    let (status, message) = match &outcome {
        Ok((m, ..)) if cancel.load(Ordering::SeqCst) => (RunStatus::Interrupted, m.clone()),
        Ok((m, ..)) => (RunStatus::Finished, m.clone()),
        Err(e) if e.downcast_ref::<NoTargetLeft>().is_some() => {
            (RunStatus::Interrupted, Some(format!("{e:#}")))
        }
        Err(e) => (RunStatus::Failed, Some(format!("{e:#}"))),
    };
    store
        .finish_run(at.run_id, status, message.as_deref())
        .await?;
    let (message, best_commit, exec) = outcome?;
    let mut report = report(store, &r, &at, chosen, status, message).await?;
    if status == RunStatus::Finished {
        // The run is over and recorded: a stop during the reference figures costs only them.
        let mut exec = if exec.is_local() {
            Evaluator::local(harness(
                &r,
                runner,
                cancel.clone(),
                cache.as_ref(),
                at.seed.wrapping_add(1),
            )?)
        } else {
            exec
        };
        let measured = final_measurement(&r, &ledger, &mut exec, best_commit, &mut report);
        match measured {
            Err(_) if cancel.load(Ordering::SeqCst) => {
                report.message = Some(
                    "stopped before the final side-by-side measurement; the run itself finished"
                        .into(),
                );
            }
            other => other?,
        }
    }
    Ok(report)
}

async fn report(
    store: &Store,
    r: &Resolved,
    at: &Attempt,
    proposer: RunProposer,
    status: RunStatus,
    message: Option<String>,
) -> Result<RunReport> {
    let run_row = store.run(at.run_id).await?.context("run row vanished")?;
    let counts = run_row.counts;
    let best = store.incumbent(&r.branch).await?;
    Ok(RunReport {
        run_id: at.run_id,
        task: r.task.name.clone(),
        context_id: r.context_id.clone(),
        branch: r.branch.clone(),
        proposer,
        resumed: at.resumed,
        candidates: counts.total() as usize,
        accepted: counts.accepted as usize,
        rejected: counts.rejected as usize,
        held: counts.held as usize,
        failed: counts.failed as usize,
        quarantined: counts.quarantined as usize,
        status,
        message,
        start_score: run_row.start_score,
        best_score: None,
        hand_tuned_score: run_row.hand_tuned_score,
        metric: r.task.metric.name.clone(),
        best_entry: best.as_ref().map(|b| b.id),
        best_commit: best.map(|b| b.commit_sha),
    })
}
