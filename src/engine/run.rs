//! The verified-improvement loop: resolve the context, make sure the ledger branch and runs.db
//! agree, build the incumbent, then propose -> evaluate -> record, one candidate at a time,
//! moving the incumbent forward on each accepted candidate. A killed run resumes where it
//! stopped: evaluations are recorded whole or not at all, and the branch only moves after.

use super::agent_host::AgentSettings;
use super::evaluate::Evaluation;
use super::harness::{Built, Harness};
use super::ledger_sync::sync_ledger;
use super::observations::observations;
use super::proposers::{Strategy, make_proposer, resolve_proposer};
use super::report::{
    Progress, Provenance, RunReport, commit_message, final_measurement, overhead_ms, ratio,
    references,
};
use super::simulate::{harness, simulated};
use super::warm_start::warm_start;
use crate::measure::{Judge, Verdict};
use crate::record::store::NewEntry;
use crate::record::{CommitId, Ledger, ProposerChoice, RunProposer, RunStatus, Store};
use crate::task::{Resolved, resolve};
use agent::{Params, ProposalContext, Proposer, params_key};
use anyhow::{Context as _, Result};
use sandbox::{CancelFlag, Runner};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

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
}

/// The run row this attempt works in: new, or an interrupted one resumed.
struct Attempt {
    run_id: i64,
    done: usize,
    seed: u64,
    resumed: bool,
}

async fn start_or_resume(
    store: &Store,
    r: &Resolved,
    proposer: &RunProposer,
    opts: &RunOptions,
) -> Result<Attempt> {
    let task = &r.task;
    if let Some(run) = store
        .resumable_run(&task.name, &r.context_id, proposer)
        .await?
    {
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
        });
    }
    let seed = opts
        .seed
        .unwrap_or_else(|| u64::from(rand::random::<u32>()));
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
    Ok(Attempt {
        run_id,
        done: 0,
        seed,
        resumed: false,
    })
}

/// Runs the loop on a task for `opts.budget` candidates (resuming an interrupted run).
pub async fn run(
    store: &Store,
    ledger_path: &Path,
    task_dir: &Path,
    opts: &RunOptions,
    runner: &Runner,
    cancel: CancelFlag,
) -> Result<RunReport> {
    let mut r = resolve(task_dir, opts.workload.as_deref())?;
    let cache = match &opts.simulate {
        Some(path) => Some(simulated(&mut r, path)?),
        None => {
            r.check_requirements()?;
            None
        }
    };
    let r = r;
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
        let harness = harness(&r, runner, cancel.clone(), cache.as_ref(), at.seed)?;
        let mut lp = Loop::start(
            store,
            &ledger,
            &r,
            harness,
            cancel.clone(),
            &at,
            entry,
            commit,
        )
        .await?;
        let message = lp.run(opts, at.done, &chosen, proposer.as_mut()).await?;
        anyhow::Ok((message, lp.incumbent_commit))
    }
    .await;
    let (status, message) = match &outcome {
        Ok((m, _)) if cancel.load(Ordering::SeqCst) => (RunStatus::Interrupted, m.clone()),
        Ok((m, _)) => (RunStatus::Finished, m.clone()),
        Err(e) => (RunStatus::Failed, Some(format!("{e:#}"))),
    };
    store
        .finish_run(at.run_id, status, message.as_deref())
        .await?;
    let (message, best_commit) = outcome?;
    let mut report = report(store, &r, &at, chosen, status, message).await?;
    if status == RunStatus::Finished {
        // The run is over and recorded: a stop during the reference figures costs only them.
        let h = harness(
            &r,
            runner,
            cancel.clone(),
            cache.as_ref(),
            at.seed.wrapping_add(1),
        )?;
        let measured = final_measurement(&r, &ledger, h, best_commit, &mut report);
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

/// The loop's state: the incumbent (built and verified), where it is in the ledger, the
/// reference figures and what was already measured.
struct Loop<'a> {
    store: &'a Store,
    ledger: &'a Ledger,
    r: &'a Resolved,
    cancel: CancelFlag,
    run_id: i64,
    harness: Harness<'a>,
    incumbent: Built,
    incumbent_entry: i64,
    incumbent_commit: CommitId,
    incumbent_params: Option<Params>,
    start_score: Option<f64>,
    hand_score: Option<f64>,
    best_score: Option<f64>,
    tried: HashSet<String>,
}

impl<'a> Loop<'a> {
    /// Builds the incumbent and measures the reference figures once per run.
    #[allow(clippy::too_many_arguments)]
    async fn start(
        store: &'a Store,
        ledger: &'a Ledger,
        r: &'a Resolved,
        mut harness: Harness<'a>,
        cancel: CancelFlag,
        at: &Attempt,
        incumbent_entry: i64,
        incumbent_commit: CommitId,
    ) -> Result<Loop<'a>> {
        let task = &r.task;
        let tree = ledger.read_tree(incumbent_commit)?;
        let incumbent = tokio::task::block_in_place(|| harness.prepare(tree)).map_err(|f| {
            anyhow::anyhow!(
                "the incumbent ({incumbent_commit}) does not pass any more: {}",
                f.reason
            )
        })?;
        let (start_score, hand_score) = references(store, r, &mut harness, at.run_id).await?;
        let best_score = store
            .incumbent(&r.branch)
            .await?
            .and_then(|e| e.score)
            .or(start_score);
        Ok(Loop {
            store,
            ledger,
            r,
            cancel,
            run_id: at.run_id,
            incumbent_params: task.params_of(&incumbent.tree),
            harness,
            incumbent,
            incumbent_entry,
            incumbent_commit,
            start_score,
            hand_score,
            best_score,
            tried: store.tried_params(&task.name, &r.context_id).await?,
        })
    }

    /// Candidates `done + 1 ..= budget`; a message when it stops early.
    async fn run(
        &mut self,
        opts: &RunOptions,
        done: usize,
        chosen: &RunProposer,
        proposer: &mut dyn Proposer,
    ) -> Result<Option<String>> {
        let task = &self.r.task;
        let progress = Progress {
            enabled: opts.progress,
            budget: opts.budget,
        };
        for k in (done + 1)..=opts.budget {
            let iteration = Instant::now();
            if self.cancel.load(Ordering::SeqCst) {
                return Ok(Some(format!("interrupted after {} candidates", k - 1)));
            }
            let ctx = self
                .proposal_context(proposer.wants_history(), proposer.wants_observations())
                .await?;
            let next = proposer.next(&ctx).await;
            if self.cancel.load(Ordering::SeqCst) {
                // Whatever the proposer was doing (a model request in flight) was abandoned.
                return Ok(Some(format!(
                    "interrupted while proposing candidate {k}; nothing of it was recorded"
                )));
            }
            let Some(proposal) = next? else {
                return Ok(Some(format!(
                    "the {} proposer has nothing more to propose",
                    proposer.name()
                )));
            };
            self.keep_incumbent_intact()?;
            tracing::info!(candidate = k, origin = %proposal.origin, "evaluating");
            let judge = Judge {
                metric: &task.metric,
                settings: &task.judge,
                reference: self.hand_score,
            };
            let harness = &mut self.harness;
            let incumbent = &self.incumbent;
            let ev = tokio::task::block_in_place(|| harness.evaluate(&proposal, incumbent, &judge));
            tracing::info!(candidate = k, verdict = ev.verdict.as_str(), reason = %ev.reason, pairs = ev.pairs.len(), "evaluated");
            if ev.cancelled {
                return Ok(Some(format!(
                    "interrupted during candidate {k}; it was not recorded"
                )));
            }
            let why = Provenance {
                proposal: &proposal,
                proposer: proposer.name(),
                run_id: self.run_id,
                seq: k,
            };
            self.record(&why, chosen, &ev, iteration).await?;
            let dir = task.metric.direction;
            progress.line(
                k,
                &ev,
                ratio(dir, self.start_score, self.best_score),
                ratio(dir, self.hand_score, self.best_score),
            );
            if ev.verdict == Verdict::Accepted
                && let Some(built) = ev.built
            {
                self.incumbent = built;
            }
        }
        Ok(None)
    }

    /// A candidate's processes may have reached the incumbent's workspace (without bwrap they
    /// can): each candidate is measured against the tree that was verified, rebuilt if need be.
    fn keep_incumbent_intact(&mut self) -> Result<()> {
        let Err(f) = self.harness.intact(&self.incumbent) else {
            return Ok(());
        };
        tracing::warn!(
            "the incumbent's workspace was altered ({}); rebuilding it",
            f.reason
        );
        let tree = self.incumbent.tree.clone();
        let harness = &mut self.harness;
        self.incumbent = tokio::task::block_in_place(|| harness.prepare(tree))
            .map_err(|f| anyhow::anyhow!("the incumbent does not pass any more: {}", f.reason))?;
        Ok(())
    }

    async fn proposal_context(
        &self,
        with_history: bool,
        with_observations: bool,
    ) -> Result<ProposalContext> {
        let task = &self.r.task;
        let history = if with_history {
            super::digest::digest(self.store, &task.name).await?
        } else {
            String::new()
        };
        Ok(ProposalContext {
            incumbent_params: self.incumbent_params.clone(),
            tried_params: self.tried.clone(),
            incumbent_files: self
                .incumbent
                .tree
                .iter()
                .filter(|(p, _)| task.is_editable(p))
                .map(|(p, b)| (p.to_string(), String::from_utf8_lossy(b).into_owned()))
                .collect(),
            history,
            incumbent_score: self.best_score,
            reference_score: self.hand_score,
            observations: if with_observations {
                observations(self.store, &task.name, &self.r.context_id).await?
            } else {
                Vec::new()
            },
        })
    }

    /// Writes the evaluation (and, when accepted, the ledger commit first and the branch after).
    async fn record(
        &mut self,
        why: &Provenance<'_>,
        chosen: &RunProposer,
        ev: &Evaluation,
        iteration: Instant,
    ) -> Result<()> {
        let (r, task) = (self.r, &self.r.task);
        let mut record = ev.record_row(r, why, chosen, self.incumbent_entry);
        if let Some(key) = &record.params_key {
            self.tried.insert(key.clone());
        }
        let usage = why.proposal.usage.as_ref();
        let accepted = match (&ev.built, &ev.summary) {
            (Some(built), Some(summary)) if ev.verdict == Verdict::Accepted => {
                Some((built, summary))
            }
            _ => None,
        };
        let Some((built, summary)) = accepted else {
            record.overhead_ms = overhead_ms(iteration, ev.process_seconds, usage);
            self.store.record(&record, None).await?;
            return Ok(());
        };
        let message = commit_message(r, why, &ev.reason, summary);
        // The branch head is the incumbent's commit, or a revert commit restoring its tree.
        let parent = self
            .ledger
            .branch_head(&r.branch)?
            .unwrap_or(self.incumbent_commit);
        let oid = self
            .ledger
            .write_commit(Some(parent), &built.tree, &message)?;
        record.overhead_ms = overhead_ms(iteration, ev.process_seconds, usage);
        let entry = NewEntry {
            branch: r.branch.clone(),
            commit_sha: oid.to_string(),
            score: Some(summary.candidate_score),
            params: task.params_of(&built.tree).map(|p| params_key(&p)),
        };
        let (_, entry_id) = self.store.record(&record, Some(&entry)).await?;
        self.ledger.set_branch(&r.branch, oid)?;
        self.incumbent_entry = entry_id.context("accepted entry has no id")?;
        self.incumbent_commit = oid;
        // Scores from different moments are only roughly comparable: the progress line says "~".
        self.best_score = Some(summary.candidate_score);
        self.incumbent_params = task.params_of(&built.tree);
        Ok(())
    }
}
