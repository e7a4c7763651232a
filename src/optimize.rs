//! The verified-improvement loop: resolve the context, make sure the ledger branch and runs.db
//! agree, build the incumbent, then propose -> evaluate -> record, one candidate at a time,
//! moving the incumbent forward on each accepted candidate. A killed run resumes where it
//! stopped: evaluations are recorded whole or not at all, and the branch only moves after.

use crate::agent_driver::{AgentProposer, AgentSettings};
use crate::context::{self, Fingerprint, Workload};
use crate::evaluate::{Built, Evaluation, Harness, median_score};
use crate::judge::{Judge, Verdict, pct};
use crate::ledger::{Ledger, branch_name};
use crate::store::{NewEntry, NewEvaluation, Store};
use crate::task::Task;
use agent::{
    Params, ProposalContext, ProposedChange, Proposer, ReplayProposer, SearchProposer, params_key,
};
use anyhow::{Context as _, Result, bail};
use git2::Oid;
use sandbox::{CancelFlag, Runner};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Neighbour entries re-measured when a run starts in a new context.
const WARM_START_MAX: usize = 3;

/// Interleaved rounds used to measure the start, hand-tuned and best trees at the start and end
/// of a run: a reference figure, not a verdict, so a few rounds suffice.
const REFERENCE_ROUNDS: usize = 3;

/// Which proposer a run uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProposerChoice {
    Auto,
    Search,
    Agent,
    Replay(PathBuf),
}

impl ProposerChoice {
    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "auto" => ProposerChoice::Auto,
            "search" => ProposerChoice::Search,
            "agent" => ProposerChoice::Agent,
            other => match other.strip_prefix("replay:") {
                Some(f) if !f.is_empty() => ProposerChoice::Replay(PathBuf::from(f)),
                _ => {
                    bail!("unknown proposer {other:?}: expected auto, search, agent or replay:FILE")
                }
            },
        })
    }
}

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
}

/// What a run did, for the terminal and `--json`.
#[derive(Debug, Serialize)]
pub struct RunReport {
    pub run_id: i64,
    pub task: String,
    pub context_id: String,
    pub branch: String,
    pub proposer: String,
    pub resumed: bool,
    pub candidates: usize,
    pub accepted: usize,
    pub rejected: usize,
    pub failed: usize,
    pub quarantined: usize,
    pub status: String,
    pub message: Option<String>,
    /// Fresh interleaved measurement at the end of the run.
    pub start_score: Option<f64>,
    pub best_score: Option<f64>,
    pub hand_tuned_score: Option<f64>,
    pub metric: String,
    pub best_entry: Option<i64>,
    pub best_commit: Option<String>,
}

/// Everything resolved about where a task's results go.
pub struct Resolved {
    pub task: Task,
    pub source: sandbox::FileTree,
    /// The hand-tuned baseline's tree, read with the source so a run never rereads the task dir.
    pub hand_tuned: Option<sandbox::FileTree>,
    pub workload: Option<Workload>,
    pub fingerprint: Fingerprint,
    pub context_id: String,
    pub branch: String,
}

pub fn resolve(task_dir: &Path, workload: Option<&Path>) -> Result<Resolved> {
    let task = Task::load(task_dir)?;
    let source = task.source_tree()?;
    let hand_tuned = task.hand_tuned_tree(&source)?;
    let workload = Workload::resolve(&task, workload)?;
    let path_var = std::env::var("PATH").unwrap_or_default();
    let fingerprint = context::fingerprint(&task, &source, workload.as_ref(), &path_var)?;
    let context_id = fingerprint.id();
    let branch = branch_name(&task.name, &context_id);
    Ok(Resolved {
        task,
        source,
        hand_tuned,
        workload,
        fingerprint,
        context_id,
        branch,
    })
}

/// Makes the git branch agree with runs.db (creating the branch's first commit when new) and
/// returns the incumbent entry (id, commit).
async fn sync_ledger(store: &Store, ledger: &Ledger, r: &Resolved) -> Result<(i64, Oid)> {
    let expected = store.expected_head(&r.branch).await?;
    let head = ledger.branch_head(&r.branch)?;
    match (expected, head) {
        (Some(expected), head) => {
            let oid = Oid::from_str(&expected)?;
            if head != Some(oid) {
                if !ledger.has_commit(oid) {
                    bail!(
                        "runs.db records commit {expected} on {} but the ledger lacks it: is --ledger the ledger of this --db?",
                        r.branch
                    );
                }
                // A process died between recording a commit and moving the branch: finish the move.
                tracing::warn!(branch = %r.branch, commit = %expected, "ledger branch lagged runs.db; moved it forward");
                ledger.set_branch(&r.branch, oid)?;
            }
        }
        (None, Some(head)) => {
            bail!(
                "ledger branch {} (at {head}) has no entries in runs.db: is --db the database of this --ledger?",
                r.branch
            )
        }
        (None, None) => {
            let message = format!(
                "{}: the task as given\n\ncontext {}\n{}\n",
                r.task.name,
                r.context_id,
                serde_json::to_string_pretty(&r.fingerprint)?
            );
            let oid = ledger.write_commit(None, &r.source, &message)?;
            let params = r.task.params_of(&r.source).map(|p| params_key(&p));
            store
                .insert_origin(
                    &r.task.name,
                    &r.context_id,
                    &r.branch,
                    &oid.to_string(),
                    params.as_deref(),
                )
                .await?;
            ledger.set_branch(&r.branch, oid)?;
        }
    }
    let inc = store
        .incumbent(&r.branch)
        .await?
        .context("the ledger branch has no incumbent entry")?;
    Ok((inc.id, Oid::from_str(&inc.commit_sha)?))
}

fn proposer_label(
    choice: &ProposerChoice,
    task: &Task,
    agent: Option<&AgentSettings>,
) -> Result<String> {
    Ok(match choice {
        ProposerChoice::Auto if agent.is_some() && AgentSettings::configured() => {
            "agent".to_string()
        }
        ProposerChoice::Auto | ProposerChoice::Search => {
            if task.params.is_none() {
                bail!(
                    "no proposer for {}: the task declares no [params] for search and no model endpoint is configured \
                     ({} / {}); use --proposer agent with an endpoint, or --proposer replay:FILE",
                    task.name,
                    crate::agent_driver::ENV_BASE_URL,
                    crate::agent_driver::ENV_API_KEY
                );
            }
            "search".to_string()
        }
        ProposerChoice::Agent => {
            if agent.is_none() {
                bail!("--proposer agent needs the agent's settings");
            }
            "agent".to_string()
        }
        ProposerChoice::Replay(f) => {
            let abs = f
                .canonicalize()
                .with_context(|| format!("replay file {} not found", f.display()))?;
            format!("replay:{}", abs.display())
        }
    })
}

/// The proposer for a run; `done` candidates were already evaluated by an earlier attempt.
fn make_proposer<'a>(
    label: &str,
    r: &'a Resolved,
    runner: &'a Runner,
    cancel: CancelFlag,
    seed: u64,
    done: usize,
    agent: Option<&AgentSettings>,
) -> Result<Box<dyn Proposer + 'a>> {
    let task = &r.task;
    if let Some(file) = label.strip_prefix("replay:") {
        // Replay candidates are consumed in order: skip those already evaluated.
        let mut p = ReplayProposer::open(Path::new(file))?;
        p.skip(done);
        return Ok(Box::new(p));
    }
    if label == "agent" {
        let settings = agent.context("the agent's settings are missing")?.clone();
        let f = &r.fingerprint;
        let context = format!(
            "CPU {} ({} cores); GPUs: {}; toolchain: {}; workload: {}; model: {}",
            f.cpu_model,
            f.cpu_cores,
            if f.gpus.is_empty() {
                "none".to_string()
            } else {
                f.gpus.join(", ")
            },
            f.toolchain.join(", "),
            if f.workload.is_empty() {
                "-"
            } else {
                &f.workload
            },
            if f.model.is_empty() { "-" } else { &f.model },
        );
        return Ok(Box::new(AgentProposer::new(
            settings,
            task,
            &r.source,
            runner,
            cancel,
            r.workload.as_ref(),
            context,
        )?));
    }
    let spec = task.params.as_ref().context("task has no [params]")?;
    let space = agent::ParamSpace::new(spec.values.clone(), &spec.constraints)?;
    Ok(Box::new(SearchProposer::new(space, seed)))
}

fn same_hardware(a: &Fingerprint, b: &Fingerprint) -> bool {
    a.cpu_model == b.cpu_model
        && a.cpu_cores == b.cpu_cores
        && a.gpus == b.gpus
        && a.toolchain == b.toolchain
}

/// The best entries of the nearest tuned contexts of the same task and harness (same hardware
/// first, then same workload), as candidates to measure here: their old numbers are not trusted.
async fn warm_start(store: &Store, ledger: &Ledger, r: &Resolved) -> Result<Vec<agent::Proposal>> {
    let here = &r.fingerprint;
    let mut found = Vec::new();
    for (id, fp) in store.contexts(&r.task.name).await? {
        let Ok(fp) = serde_json::from_str::<Fingerprint>(&fp) else {
            continue;
        };
        if id == r.context_id || fp.harness_sha256 != here.harness_sha256 {
            continue;
        }
        let Some(best) = store
            .incumbent(&branch_name(&r.task.name, &id))
            .await?
            .filter(|e| e.kind == "accepted")
        else {
            continue;
        };
        let rank = if same_hardware(&fp, here) {
            0
        } else if fp.workload_sha256 == here.workload_sha256 {
            1
        } else {
            2
        };
        found.push((rank, id, best));
    }
    found.sort_by_key(|(rank, _, e)| (*rank, -e.id));
    let mut out = Vec::new();
    for (_, id, e) in found.into_iter().take(WARM_START_MAX) {
        let origin = format!("warm-start({id}:e{})", e.id);
        let note = Some(format!("best entry e{} of neighbouring context {id}", e.id));
        let params: Option<Params> = e
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str(p).ok());
        let change = match params.filter(|_| r.task.params.is_some()) {
            Some(p) => ProposedChange::Params(p),
            None => {
                let tree = ledger.read_tree(Oid::from_str(&e.commit_sha)?)?;
                let files = tree
                    .iter()
                    .filter(|(p, b)| r.task.is_editable(p) && r.source.get(p) != Some(b.as_slice()))
                    .map(|(p, b)| (p.to_string(), String::from_utf8_lossy(b).into_owned()))
                    .collect();
                ProposedChange::Files(files)
            }
        };
        out.push(agent::Proposal {
            change,
            note,
            origin,
            usage: None,
        });
    }
    Ok(out)
}

fn ratio(metric_dir: crate::task::Direction, base: Option<f64>, x: Option<f64>) -> Option<f64> {
    let (b, x) = (base?, x?);
    Some(crate::judge::log_gain(metric_dir, b, x).exp())
}

struct Progress {
    enabled: bool,
    budget: usize,
}

impl Progress {
    fn line(
        &self,
        k: usize,
        ev: &Evaluation,
        best_vs_start: Option<f64>,
        best_vs_hand: Option<f64>,
    ) {
        if !self.enabled {
            return;
        }
        let fmt = |r: Option<f64>| r.map_or("?".to_string(), |r| format!("{r:.2}x"));
        eprintln!(
            "[{k:>3}/{}] {:<11} {} | best ~{} start, ~{} hand-tuned",
            self.budget,
            ev.verdict.as_str(),
            ev.reason,
            fmt(best_vs_start),
            fmt(best_vs_hand)
        );
    }
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
    let r = resolve(task_dir, opts.workload.as_deref())?;
    let task = &r.task;
    let label = proposer_label(&opts.proposer, task, opts.agent.as_ref())?;
    let ledger = Ledger::open_or_init(ledger_path)?;
    ledger.check_writable()?;
    store
        .upsert_context(
            &task.name,
            &r.context_id,
            &serde_json::to_string(&r.fingerprint)?,
        )
        .await?;
    let (mut incumbent_entry, mut incumbent_commit) = sync_ledger(store, &ledger, &r).await?;

    let (run_id, done, seed, resumed) = match store
        .resumable_run(&task.name, &r.context_id, &label)
        .await?
    {
        Some(run) => {
            let done = store.candidates_in_run(run.id).await? as usize;
            store.mark_running(run.id).await?;
            if opts.progress {
                eprintln!(
                    "resuming run {} ({done} of {} candidates already evaluated)",
                    run.id,
                    opts.budget.max(run.budget as usize)
                );
            }
            (run.id, done, run.seed as u64, true)
        }
        None => {
            let seed = opts
                .seed
                .unwrap_or_else(|| u64::from(rand::random::<u32>()));
            let id = store
                .create_run(
                    &task.name,
                    &task.dir.display().to_string(),
                    &r.context_id,
                    &label,
                    opts.budget as i64,
                    seed as i64,
                )
                .await?;
            (id, 0, seed, false)
        }
    };
    let mut proposer = make_proposer(
        &label,
        &r,
        runner,
        cancel.clone(),
        seed.wrapping_add(done as u64),
        done,
        opts.agent.as_ref(),
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
        proposer = Box::new(agent::Prepend::new(warm, proposer));
    }

    let outcome = run_loop(
        store,
        &ledger,
        &r,
        opts,
        runner,
        cancel.clone(),
        run_id,
        done,
        proposer.as_mut(),
        &mut incumbent_entry,
        &mut incumbent_commit,
    )
    .await;
    let (status, message) = match &outcome {
        Ok(msg) if cancel.load(Ordering::SeqCst) => ("interrupted", msg.clone()),
        Ok(msg) => ("finished", msg.clone()),
        Err(e) => ("failed", Some(format!("{e:#}"))),
    };
    store.finish_run(run_id, status, message.as_deref()).await?;
    let finals = outcome?;
    let counts = store.verdict_counts(run_id).await?;
    let count = |v: &str| {
        counts
            .iter()
            .find(|(k, _)| k == v)
            .map_or(0, |(_, n)| *n as usize)
    };
    let run_row = store.run(run_id).await?.context("run row vanished")?;
    let best = store.incumbent(&r.branch).await?;
    let mut report = RunReport {
        run_id,
        task: task.name.clone(),
        context_id: r.context_id.clone(),
        branch: r.branch.clone(),
        proposer: label,
        resumed,
        candidates: counts.iter().map(|(_, n)| *n as usize).sum(),
        accepted: count("accepted"),
        rejected: count("rejected"),
        failed: count("failed"),
        quarantined: count("quarantined"),
        status: status.to_string(),
        message: finals,
        start_score: run_row.start_score,
        best_score: None,
        hand_tuned_score: run_row.hand_tuned_score,
        metric: task.metric.name.clone(),
        best_entry: best.as_ref().map(|b| b.id),
        best_commit: best.map(|b| b.commit_sha),
    };
    if status == "finished" {
        final_measurement(&r, &ledger, runner, cancel, incumbent_commit, &mut report)?;
    }
    Ok(report)
}

/// Builds and measures start, best and hand-tuned side by side, so the summary compares
/// figures taken under the same conditions.
fn final_measurement(
    r: &Resolved,
    ledger: &Ledger,
    runner: &Runner,
    cancel: CancelFlag,
    best: Oid,
    report: &mut RunReport,
) -> Result<()> {
    let mut h = Harness::new(&r.task, &r.source, runner, cancel, r.workload.as_ref())?;
    let best_tree = ledger.read_tree(best)?;
    let mut built = vec![
        tokio::task::block_in_place(|| h.prepare(r.source.clone()))
            .map_err(|f| anyhow::anyhow!("start: {}", f.reason))?,
    ];
    built.push(
        tokio::task::block_in_place(|| h.prepare(best_tree))
            .map_err(|f| anyhow::anyhow!("best: {}", f.reason))?,
    );
    if let Some(hand) = r.hand_tuned.clone() {
        built.push(
            tokio::task::block_in_place(|| h.prepare(hand))
                .map_err(|f| anyhow::anyhow!("hand-tuned: {}", f.reason))?,
        );
    }
    let refs: Vec<&Built> = built.iter().collect();
    let samples = tokio::task::block_in_place(|| h.measure(&refs, REFERENCE_ROUNDS))?;
    report.start_score = Some(median_score(&samples[0]));
    report.best_score = Some(median_score(&samples[1]));
    report.hand_tuned_score = samples.get(2).map(|s| median_score(s));
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn run_loop(
    store: &Store,
    ledger: &Ledger,
    r: &Resolved,
    opts: &RunOptions,
    runner: &Runner,
    cancel: CancelFlag,
    run_id: i64,
    done: usize,
    proposer: &mut dyn Proposer,
    incumbent_entry: &mut i64,
    incumbent_commit: &mut Oid,
) -> Result<Option<String>> {
    let task = &r.task;
    let mut harness = Harness::new(task, &r.source, runner, cancel.clone(), r.workload.as_ref())?;
    let incumbent_tree = ledger.read_tree(*incumbent_commit)?;
    let mut incumbent =
        tokio::task::block_in_place(|| harness.prepare(incumbent_tree)).map_err(|f| {
            anyhow::anyhow!(
                "the incumbent ({}) does not pass any more: {}",
                incumbent_commit,
                f.reason
            )
        })?;

    // Reference figures: the task as given and the hand-tuned baseline, measured once per run.
    let run_row = store.run(run_id).await?.context("run row vanished")?;
    let (start_score, hand_score) = match (run_row.start_score, run_row.hand_tuned_score) {
        (Some(s), h) if h.is_some() || task.hand_tuned.is_none() => (Some(s), h),
        _ => {
            let start = tokio::task::block_in_place(|| harness.prepare(r.source.clone()))
                .map_err(|f| anyhow::anyhow!("the task as given does not pass: {}", f.reason))?;
            let hand = match r.hand_tuned.clone() {
                Some(t) => Some(tokio::task::block_in_place(|| harness.prepare(t)).map_err(
                    |f| anyhow::anyhow!("the hand-tuned baseline does not pass: {}", f.reason),
                )?),
                None => None,
            };
            let mut trees = vec![&start];
            trees.extend(hand.as_ref());
            let samples =
                tokio::task::block_in_place(|| harness.measure(&trees, REFERENCE_ROUNDS))?;
            let s = Some(median_score(&samples[0]));
            let h = samples.get(1).map(|x| median_score(x));
            store.set_references(run_id, s, h).await?;
            (s, h)
        }
    };
    let judge = Judge {
        metric: &task.metric,
        settings: &task.judge,
        reference: hand_score,
    };
    let dir = task.metric.direction;
    let mut best_score: Option<f64> = store
        .incumbent(&r.branch)
        .await?
        .and_then(|e| e.score)
        .or(start_score);
    let mut tried = store.tried_params(&task.name, &r.context_id).await?;
    let mut incumbent_params: Option<Params> = task.params_of(&incumbent.tree);
    let progress = Progress {
        enabled: opts.progress,
        budget: opts.budget,
    };

    for k in (done + 1)..=opts.budget {
        let iteration = Instant::now();
        if cancel.load(Ordering::SeqCst) {
            return Ok(Some(format!("interrupted after {} candidates", k - 1)));
        }
        let history = if proposer.wants_history() {
            crate::digest::digest(store, &task.name).await?
        } else {
            String::new()
        };
        let ctx = ProposalContext {
            incumbent_params: incumbent_params.clone(),
            tried_params: tried.clone(),
            incumbent_files: incumbent
                .tree
                .iter()
                .filter(|(p, _)| task.is_editable(p))
                .map(|(p, b)| (p.to_string(), String::from_utf8_lossy(b).into_owned()))
                .collect(),
            history,
            incumbent_score: best_score,
            reference_score: hand_score,
        };
        let Some(proposal) = proposer.next(&ctx).await? else {
            return Ok(Some(format!(
                "the {} proposer has nothing more to propose",
                proposer.name()
            )));
        };
        tracing::info!(candidate = k, origin = %proposal.origin, "evaluating");
        let ev = tokio::task::block_in_place(|| harness.evaluate(&proposal, &incumbent, &judge));
        tracing::info!(candidate = k, verdict = ev.verdict.as_str(), reason = %ev.reason, pairs = ev.pairs.len(), "evaluated");
        if ev.cancelled {
            return Ok(Some(format!(
                "interrupted during candidate {k}; it was not recorded"
            )));
        }
        let (kind, payload, pkey) = match &proposal.change {
            ProposedChange::Diff(d) => ("diff", serde_json::json!({ "diff": d }), None),
            ProposedChange::Files(f) => ("files", serde_json::json!({ "files": f }), None),
            ProposedChange::Params(p) => (
                "params",
                serde_json::json!({ "params": p }),
                Some(params_key(p)),
            ),
        };
        let mut samples = Vec::new();
        for (round, (a, b)) in ev.pairs.iter().enumerate() {
            for (side, s) in [("incumbent", a), ("candidate", b)] {
                for (case, v) in &s.cases {
                    samples.push((round as i64, side, case.clone(), *v));
                }
            }
        }
        let mut record = NewEvaluation {
            run_id,
            seq: k as i64,
            task: task.name.clone(),
            context_id: r.context_id.clone(),
            proposer: proposer.name().to_string(),
            origin: proposal.origin.clone(),
            note: proposal.note.clone(),
            kind,
            payload: payload.to_string(),
            params_key: pkey.clone(),
            diff: ev.diff.clone(),
            parent_entry_id: Some(*incumbent_entry),
            verdict: ev.verdict.as_str(),
            reason: ev.reason.clone(),
            stage: ev.stage.as_str(),
            gain: ev
                .summary
                .as_ref()
                .map(|s| (s.gain.estimate, s.gain.low, s.gain.high, s.gain.confidence)),
            incumbent_score: ev.summary.as_ref().map(|s| s.incumbent_score),
            candidate_score: ev.summary.as_ref().map(|s| s.candidate_score),
            pairs: ev.pairs.len() as i64,
            bench_seconds: ev.bench_seconds,
            process_seconds: ev.process_seconds,
            overhead_ms: 0.0,
            log: ev.log.clone(),
            samples,
            usage: proposal.usage.clone(),
        };
        if let Some(key) = pkey {
            tried.insert(key);
        }
        let accepted = match (&ev.built, &ev.summary) {
            (Some(built), Some(summary)) if ev.verdict == Verdict::Accepted => {
                Some((built, summary))
            }
            _ => None,
        };
        if let Some((built, summary)) = accepted {
            let message = commit_message(
                task,
                r,
                &proposal,
                &ev.reason,
                summary,
                run_id,
                k,
                proposer.name(),
            );
            // The branch head is the incumbent's commit, or a revert commit restoring its tree.
            let parent = ledger.branch_head(&r.branch)?.unwrap_or(*incumbent_commit);
            let oid = ledger.write_commit(Some(parent), &built.tree, &message)?;
            record.overhead_ms =
                overhead_ms(iteration, ev.process_seconds, proposal.usage.as_ref());
            let entry = NewEntry {
                branch: r.branch.clone(),
                commit_sha: oid.to_string(),
                score: Some(summary.candidate_score),
                params: task.params_of(&built.tree).map(|p| params_key(&p)),
            };
            let (_, entry_id) = store.record(&record, Some(&entry)).await?;
            ledger.set_branch(&r.branch, oid)?;
            *incumbent_entry = entry_id.context("accepted entry has no id")?;
            *incumbent_commit = oid;
            // Scores from different moments are only roughly comparable: the progress line says "~".
            best_score = Some(summary.candidate_score);
            incumbent_params = task.params_of(&built.tree);
        } else {
            record.overhead_ms =
                overhead_ms(iteration, ev.process_seconds, proposal.usage.as_ref());
            store.record(&record, None).await?;
        }
        progress.line(
            k,
            &ev,
            ratio(dir, start_score, best_score),
            ratio(dir, hand_score, best_score),
        );
        if ev.verdict == Verdict::Accepted
            && let Some(built) = ev.built
        {
            incumbent = built;
        }
    }
    Ok(None)
}

/// polymorph's own time in an iteration so far: its wall time less the task's processes and,
/// for a model-driven proposer, less the model's latency and the processes it ran (the final
/// write of the evaluation itself is not included).
fn overhead_ms(iteration: Instant, process_seconds: f64, usage: Option<&agent::Usage>) -> f64 {
    let outside = usage.map_or(0.0, |u| (u.latency_ms + u.process_ms) as f64 / 1000.0);
    (iteration.elapsed().as_secs_f64() - process_seconds - outside).max(0.0) * 1000.0
}

#[allow(clippy::too_many_arguments)]
fn commit_message(
    task: &Task,
    r: &Resolved,
    proposal: &agent::Proposal,
    reason: &str,
    summary: &crate::judge::Summary,
    run_id: i64,
    k: usize,
    proposer: &str,
) -> String {
    let mut m = format!(
        "{}: {} {:.4} -> {:.4} ({})\n\n{reason}\nproposer: {proposer} ({})\nrun {run_id}, candidate {k}\ncontext: {}\n",
        task.name,
        task.metric.name,
        summary.incumbent_score,
        summary.candidate_score,
        pct(summary.gain.estimate),
        proposal.origin,
        r.context_id,
    );
    if let Some(note) = &proposal.note {
        m.push_str(&format!("note: {note}\n"));
    }
    m
}
