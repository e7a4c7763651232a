//! One run in one context: proposer, ledger branch, run row, the loop, and the final
//! side-by-side measurement of start, best and hand-tuned.

use super::attempt::{Attempt, start_or_resume};
use super::ledger_sync::sync_ledger;
use super::options::RunOptions;
use super::proposal_loop::Loop;
use super::proposers::{make_proposer, resolve_proposer};
use super::report::{ModelUse, RunReport, final_measurement};
use super::warm_start::warm_start;
use crate::engine::evaluate::{Evaluator, HarnessFault, base_job};
use crate::engine::remote::{NoTargetLeft, Pool, VerifyOn};
use crate::engine::simulate::{Cache, harness};
use crate::record::{Ledger, RunProposer, RunStatus, Store};
use crate::task::Resolved;
use anyhow::{Context as _, Result, bail};
use sandbox::{CancelFlag, Runner};
use std::path::Path;
use std::sync::atomic::Ordering;

/// A resolved task in one context and where its evaluations run.
pub struct Context {
    pub r: Resolved,
    /// A recorded cache replayed instead of the task's processes (`--simulate`).
    pub cache: Option<Cache>,
    /// The remote targets of this context; `None`: here.
    pub pool: Option<Pool>,
    /// Put before each progress line when several contexts run side by side.
    pub label: String,
}

/// One run in one context: proposer, ledger branch, run row, loop, final measurement.
pub async fn run_in_context(
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
        proposer = Box::new(proposers::Prepend::new(warm, proposer));
    }
    let outcome = async {
        let exec = match pool {
            Some(pool) => {
                let verify = verification(opts, &pool)?;
                let here = match verify {
                    VerifyOn::Controller => {
                        r.check_requirements()
                            .context("--verify-on controller: this machine cannot run the task")?;
                        Some(harness(&r, runner, cancel.clone(), None, at.seed)?)
                    }
                    _ => None,
                };
                Evaluator::remote(pool, base_job(&r)?, &r, cancel.clone(), (verify, here))?
            }
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
        Err(e)
            if e.downcast_ref::<NoTargetLeft>().is_some()
                || e.downcast_ref::<HarnessFault>().is_some() =>
        {
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
        limit: None,
        metric: r.task.metric.name.clone(),
        best_entry: best.as_ref().map(|b| b.id),
        best_commit: best.map(|b| b.commit_sha),
        simulation: Some(r.fingerprint.simulation.clone()).filter(|s| !s.is_empty()),
        model: match run_row.usage.requests {
            0 => None,
            requests => Some(ModelUse {
                requests,
                tokens: run_row.usage.tokens,
                minutes: store.model_minutes(at.run_id).await?,
            }),
        },
    })
}

/// Where a run on remote targets confirms what a node's series accepted: as the user said, or
/// a second target when there are two or more, else the same one (said on stderr: that node is
/// then trusted with its samples).
fn verification(opts: &RunOptions, pool: &Pool) -> Result<VerifyOn> {
    let chosen = opts.targets.as_ref().and_then(|(_, o)| o.verify_on);
    let targets = pool.targets_left();
    let verify = match chosen {
        Some(VerifyOn::OtherNode) if targets < 2 => bail!(
            "--verify-on other-node: only one target of this context answered; --verify-on controller confirms here"
        ),
        Some(v) => v,
        None if targets >= 2 => VerifyOn::OtherNode,
        None => VerifyOn::SameNode,
    };
    if opts.progress {
        eprintln!(
            "accepted candidates are confirmed {}",
            match verify {
                VerifyOn::OtherNode => "by a fresh series on a second target",
                VerifyOn::Controller => "by a fresh series here, on the controller",
                VerifyOn::SameNode =>
                    "by a fresh series on the same target, which is trusted with its samples (--verify-on controller confirms here)",
            }
        );
    }
    Ok(verify)
}
