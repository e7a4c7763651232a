//! The loop itself: propose -> evaluate -> record, one candidate at a time, moving the
//! incumbent forward on each accepted candidate. Evaluations are recorded whole or not at all,
//! and the ledger branch only moves after its entry is in runs.db.

use super::attempt::Attempt;
use super::ledger_sync::sync_ledger;
use super::observations::Observations;
use super::options::RunOptions;
use super::recording::{Provenance, commit_message, record_row};
use super::repeats::judged_before;
use super::report::{Progress, overhead_ms, ratio, references};
use super::standing::Standing;
use crate::engine::evaluate::{Evaluation, Evaluator, HarnessFault};
use crate::measure::{Judge, Verdict};
use crate::record::store::{NewEntry, Superseded};
use crate::record::{CommitId, Ledger, RunProposer, Store};
use crate::task::Resolved;
use anyhow::{Context as _, Result};
use proposers::{Params, Proposal, ProposalContext, Proposer, params_key};
use sandbox::CancelFlag;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// The loop's state: where its processes run and the incumbent, where it is in the ledger, the
/// reference figures and what was already measured.
pub(super) struct Loop<'a> {
    store: &'a Store,
    ledger: &'a Ledger,
    r: &'a Resolved,
    cancel: CancelFlag,
    run_id: i64,
    pub exec: Evaluator<'a>,
    incumbent_entry: i64,
    pub incumbent_commit: CommitId,
    incumbent_params: Option<Params>,
    start_score: Option<f64>,
    hand_score: Option<f64>,
    best_score: Option<f64>,
    tried: HashSet<String>,
    /// Put before each progress line (the context, when several run side by side).
    pub label: String,
    /// What the model-based search has learnt so far (read incrementally).
    observed: Observations,
    /// The incumbent against the floor, case by case, for the per-case guard.
    standing: Standing,
}

impl<'a> Loop<'a> {
    /// Sets up the incumbent and measures the reference figures once per run.
    #[allow(clippy::too_many_arguments)]
    pub async fn start(
        store: &'a Store,
        ledger: &'a Ledger,
        r: &'a Resolved,
        mut exec: Evaluator<'a>,
        cancel: CancelFlag,
        at: &Attempt,
        incumbent_entry: i64,
        incumbent_commit: CommitId,
    ) -> Result<Loop<'a>> {
        let task = &r.task;
        let tree = ledger.read_tree(incumbent_commit)?;
        exec.set_incumbent(tree).map_err(|f| {
            // Most often the workload (a new one, or the wrong file given with --workload)
            // or this machine, not the incumbent's code: say which workload it was.
            let with = r
                .workload
                .as_ref()
                .map(|w| format!(" with workload {}", w.label))
                .unwrap_or_default();
            anyhow::anyhow!(
                "the incumbent ({incumbent_commit}) fails here{with}: {}",
                f.reason
            )
        })?;
        let (start_score, hand_score) = references(store, r, &mut exec, at.run_id).await?;
        let standing = Standing::measure(r, &mut exec)?;
        let best_score = store
            .incumbent(&r.branch)
            .await?
            .and_then(|e| e.score)
            .or(start_score);
        let incumbent_params = task.params_of(exec.incumbent_tree());
        // The incumbent the run starts from was measured too (the task as given, at first).
        let mut tried = store.tried_params(&task.name, &r.context_id).await?;
        tried.extend(incumbent_params.iter().map(params_key));
        Ok(Loop {
            store,
            ledger,
            r,
            cancel,
            run_id: at.run_id,
            incumbent_params,
            exec,
            incumbent_entry,
            incumbent_commit,
            start_score,
            hand_score,
            best_score,
            tried,
            label: String::new(),
            observed: Observations::default(),
            standing,
        })
    }

    /// Candidates `done + 1 ..= budget`, `jobs` at a time on remote targets; a message when
    /// it stops early.
    pub async fn run(
        &mut self,
        opts: &RunOptions,
        done: usize,
        chosen: &RunProposer,
        proposer: &mut dyn Proposer,
    ) -> Result<Option<String>> {
        let task = &self.r.task;
        let jobs = opts.targets.as_ref().map_or(1, |(_, o)| o.jobs.max(1));
        // A copy: the loop below needs `self` mutably while the progress lines need the label.
        let label = self.label.clone();
        let progress = Progress {
            enabled: opts.progress,
            budget: opts.budget,
            label: &label,
            best_held: Default::default(),
        };
        let mut k = done + 1;
        while k <= opts.budget {
            let iteration = Instant::now();
            if self.cancel.load(Ordering::SeqCst) {
                return Ok(Some(format!("interrupted after {} candidates", k - 1)));
            }
            if self.store.is_shared() {
                self.rebase(opts.progress).await?;
            }
            let mut ctx = self
                .proposal_context(proposer.wants_history(), proposer.wants_observations())
                .await?;
            // Races of screen-only contenders need one candidate at a time, judged here.
            ctx.can_screen = jobs == 1 && self.exec.is_local() && task.judge.screen_pairs > 0;
            ctx.screen_pairs = task.judge.screen_pairs;
            ctx.pair_spread = self.exec.pair_spread();
            let mut batch = Vec::new();
            while batch.len() < jobs.min(opts.budget + 1 - k) {
                ctx.remaining = Some(opts.budget + 1 - k - batch.len());
                let next = proposer.next(&ctx).await;
                if self.cancel.load(Ordering::SeqCst) {
                    // Whatever the proposer was doing (a model request in flight) was abandoned.
                    return Ok(Some(format!(
                        "interrupted while proposing candidate {}; nothing of it was recorded",
                        k + batch.len()
                    )));
                }
                let Some(proposal) = next? else { break };
                if let proposers::ProposedChange::Params(p) = &proposal.change {
                    ctx.tried_params.insert(params_key(p));
                }
                batch.push(proposal);
            }
            if batch.is_empty() {
                return Ok(Some(format!(
                    "the {} proposer has nothing more to propose",
                    proposer.name()
                )));
            }
            tracing::info!(first = k, candidates = batch.len(), "evaluating");
            let repeats = self.repeats(&batch).await?;
            let judge = Judge {
                metric: &task.metric,
                settings: &task.judge,
                reference: self.hand_score,
                spread: None,
                floor: &self.standing.0,
            };
            let mut evs = with_repeats(&batch, repeats, |fresh| self.exec.evaluate(fresh, &judge))?;
            let slowest = evs.iter().map(|e| e.process_seconds).fold(0.0, f64::max);
            batch_winner(&mut evs, k);
            let shared = batch.len();
            let mut interrupted = None;
            for (proposal, mut ev) in batch.iter().zip(evs) {
                tracing::info!(candidate = k, verdict = ev.verdict.as_str(), reason = %ev.reason, pairs = ev.pairs.len(), "evaluated");
                if ev.cancelled {
                    interrupted.get_or_insert(k);
                    continue;
                }
                if let Some(why) = ev.harness_fault {
                    return Err(HarnessFault { candidate: k, why }.into());
                }
                let why = Provenance {
                    proposal,
                    proposer: proposer.name(),
                    run_id: self.run_id,
                    seq: k,
                };
                let overhead = Overhead {
                    since: iteration,
                    process_seconds: if shared == 1 {
                        ev.process_seconds
                    } else {
                        slowest
                    },
                    shared,
                };
                self.record(&why, chosen, &mut ev, &overhead, opts.progress)
                    .await?;
                let dir = task.metric.direction;
                progress.line(
                    k,
                    &ev,
                    why.proposal.screen_only,
                    (
                        ratio(dir, self.start_score, self.best_score),
                        ratio(dir, self.hand_score, self.best_score),
                    ),
                );
                if ev.verdict == Verdict::Accepted {
                    self.standing.accept(self.r, &ev.pairs);
                    self.exec.accept(&mut ev);
                }
                k += 1;
            }
            if let Some(c) = interrupted {
                return Ok(Some(format!(
                    "interrupted during candidate {c}; it was not recorded"
                )));
            }
        }
        Ok(None)
    }

    /// For each proposal of the batch, the evaluation to record instead of judging it, when its
    /// tree was judged against this incumbent already (repeats.rs).
    async fn repeats(&self, batch: &[Proposal]) -> Result<Vec<Option<Evaluation>>> {
        let mut out = Vec::with_capacity(batch.len());
        for p in batch {
            let incumbent = self.exec.incumbent_tree();
            out.push(judged_before(self.store, self.r, self.incumbent_entry, incumbent, p).await?);
        }
        Ok(out)
    }

    async fn proposal_context(
        &mut self,
        with_history: bool,
        with_observations: bool,
    ) -> Result<ProposalContext> {
        let task = &self.r.task;
        let history = if with_history {
            super::digest::digest(self.store, &task.name).await?
        } else {
            String::new()
        };
        let observations = if with_observations {
            let all = self
                .observed
                .refresh(self.store, &task.name, &self.r.context_id)
                .await?;
            same_space(all, self.incumbent_params.as_ref())
        } else {
            Default::default()
        };
        Ok(ProposalContext {
            knobs: task
                .added_knobs(self.exec.incumbent_tree())
                .unwrap_or_default(),
            incumbent_params: self.incumbent_params.clone(),
            tried_params: self.tried.clone(),
            incumbent_files: self
                .exec
                .incumbent_tree()
                .iter()
                .filter(|(p, _)| task.is_editable(p))
                .map(|(p, b)| (p.to_string(), String::from_utf8_lossy(b).into_owned()))
                .collect(),
            history,
            incumbent_score: self.best_score,
            reference_score: self.hand_score,
            floor: self.standing.0.clone(),
            observations,
            // Set by the caller, which knows where and how many candidates run.
            can_screen: false,
            screen_pairs: 0,
            pair_spread: None,
            remaining: None,
        })
    }

    /// Writes the evaluation (and, when accepted, the ledger commit first and the branch after).
    async fn record(
        &mut self,
        why: &Provenance<'_>,
        chosen: &RunProposer,
        ev: &mut Evaluation,
        overhead: &Overhead,
        progress: bool,
    ) -> Result<()> {
        let (r, task) = (self.r, &self.r.task);
        let mut record = record_row(ev, r, why, chosen, self.incumbent_entry);
        if let Some(key) = &record.params_key {
            self.tried.insert(key.clone());
        }
        let usage = why.proposal.usage.as_ref();
        let accepted = match (&ev.tree, &ev.summary) {
            (Some(tree), Some(summary)) if ev.verdict == Verdict::Accepted => Some((tree, summary)),
            _ => None,
        };
        let Some((tree, summary)) = accepted else {
            record.overhead_ms = overhead.ms(usage);
            self.store.record(&record, None).await?;
            return Ok(());
        };
        let message = commit_message(
            r,
            why,
            &ev.reason,
            summary,
            self.exec.incumbent_tree(),
            tree,
        );
        // The branch head is the incumbent's commit, or a revert commit restoring its tree.
        let parent = self
            .ledger
            .branch_head(&r.branch)?
            .unwrap_or(self.incumbent_commit);
        let oid = self.ledger.write_commit(Some(parent), tree, &message)?;
        record.overhead_ms = overhead.ms(usage);
        let entry = NewEntry {
            branch: r.branch.clone(),
            commit_sha: oid.to_string(),
            score: Some(summary.candidate_score),
            params: task.params_of(tree).map(|p| params_key(&p)),
        };
        let recorded = self.store.record(&record, Some(&entry)).await;
        if let Err(e) = &recorded
            && let Some(moved) = e.downcast_ref::<Superseded>()
        {
            // Another controller landed first: this one's gain was against an older incumbent.
            ev.verdict = Verdict::Rejected;
            ev.reason = format!(
                "{}; but {moved}, so it lost the race and was not committed",
                ev.reason
            );
            ev.tree = None;
            ev.built = None;
            let mut record = record_row(ev, r, why, chosen, self.incumbent_entry);
            record.overhead_ms = overhead.ms(usage);
            self.store.record(&record, None).await?;
            self.rebase(progress).await?;
            return Ok(());
        }
        let (_, entry_id) = recorded?;
        self.ledger.set_branch(&r.branch, oid)?;
        self.incumbent_entry = entry_id.context("accepted entry has no id")?;
        self.incumbent_commit = oid;
        // Scores from different moments are only roughly comparable: the progress line says "~".
        self.best_score = Some(summary.candidate_score);
        self.incumbent_params = task.params_of(tree);
        Ok(())
    }
}

impl Loop<'_> {
    /// Moves onto the branch's incumbent when another controller sharing the database (or a
    /// reviewer) moved it: the next candidates are proposed and judged against that one.
    async fn rebase(&mut self, progress: bool) -> Result<()> {
        let r = self.r;
        let now = self.store.incumbent(&r.branch).await?;
        if now.as_ref().map(|e| e.id) == Some(self.incumbent_entry) {
            return Ok(());
        }
        let (entry, commit) = sync_ledger(self.store, self.ledger, r).await?;
        let tree = self.ledger.read_tree(commit)?;
        self.exec.set_incumbent(tree).map_err(|f| {
            anyhow::anyhow!(
                "the new incumbent e{entry} ({commit}) does not pass here: {}",
                f.reason
            )
        })?;
        if progress {
            eprintln!(
                "the incumbent of {} moved to e{entry} (another controller, or a review); continuing from it",
                r.branch
            );
        }
        self.incumbent_entry = entry;
        self.incumbent_commit = commit;
        self.incumbent_params = r.task.params_of(self.exec.incumbent_tree());
        self.standing = Standing::measure(r, &mut self.exec)?;
        self.best_score = now.and_then(|e| e.score).or(self.best_score);
        Ok(())
    }
}

/// What of a batch's wall time was polymorph's own, shared out over its candidates.
struct Overhead {
    since: Instant,
    /// The task processes' time: the candidate's own, or the slowest of a parallel batch.
    process_seconds: f64,
    shared: usize,
}

impl Overhead {
    fn ms(&self, usage: Option<&proposers::Usage>) -> f64 {
        overhead_ms(self.since, self.process_seconds, usage) / self.shared as f64
    }
}

/// The batch's evaluations in order: the repeats as given, the rest judged by `judge` (called
/// once, and only when something is left to judge).
fn with_repeats(
    batch: &[Proposal],
    repeats: Vec<Option<Evaluation>>,
    judge: impl FnOnce(&[Proposal]) -> Result<Vec<Evaluation>>,
) -> Result<Vec<Evaluation>> {
    let fresh: Vec<Proposal> = batch
        .iter()
        .zip(&repeats)
        .filter(|(_, r)| r.is_none())
        .map(|(p, _)| p.clone())
        .collect();
    let mut judged = if fresh.is_empty() {
        Vec::new()
    } else {
        judge(&fresh)?
    }
    .into_iter();
    repeats
        .into_iter()
        .map(|r| {
            r.or_else(|| judged.next())
                .context("an evaluation went missing")
        })
        .collect()
}

/// Candidates of one batch were all judged against the same incumbent: when several were
/// accepted, only the one with the largest gain is; the others are recorded as rejected, with
/// why.
fn batch_winner(evs: &mut [Evaluation], first: usize) {
    let gain = |e: &Evaluation| {
        e.summary
            .as_ref()
            .map_or(f64::NEG_INFINITY, |s| s.gain.estimate)
    };
    let best = evs
        .iter()
        .enumerate()
        .filter(|(_, e)| e.verdict == Verdict::Accepted)
        .max_by(|a, b| gain(a.1).total_cmp(&gain(b.1)))
        .map(|(i, _)| i);
    let Some(best) = best else { return };
    let best_gain = gain(&evs[best]);
    for (i, ev) in evs.iter_mut().enumerate() {
        if i != best && ev.verdict == Verdict::Accepted {
            ev.verdict = Verdict::Rejected;
            ev.reason = format!(
                "{}; but candidate {} of the same batch, judged against the same incumbent, gained more ({:+.1}% vs {:+.1}%)",
                ev.reason,
                first + best,
                best_gain.exp_m1() * 100.0,
                gain(ev).exp_m1() * 100.0
            );
            ev.tree = None;
            ev.built = None;
        }
    }
}

/// The observations made in the incumbent's space: assignments of other knobs (before a
/// candidate added one) are of another landscape. Shared, not copied, when all are.
fn same_space(
    all: std::sync::Arc<Vec<proposers::Observation>>,
    incumbent: Option<&proposers::Params>,
) -> std::sync::Arc<Vec<proposers::Observation>> {
    let Some(inc) = incumbent else {
        return all;
    };
    let same = |o: &proposers::Observation| o.params.keys().eq(inc.keys());
    if all.iter().all(same) {
        return all;
    }
    std::sync::Arc::new(all.iter().filter(|o| same(o)).cloned().collect())
}
