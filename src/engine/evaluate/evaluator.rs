//! Where a run's processes run: here, through the harness, with the incumbent built once and
//! kept; or on remote targets, where each job carries its trees and a node builds, tests and
//! benchmarks them. Either way the verdict is this process's judge's, from the raw samples.

use super::confirm::{confirmed, needs_confirmation};
use super::evaluation::{Evaluation, candidate_tree};
use super::failure::Failure;
use super::harness::{Built, Harness};
use crate::engine::remote::Pool;
use crate::engine::remote::wire::{
    Job, Op, Outcome, PROTOCOL, VERSION, WireEvaluation, WireTree, WireWorkload,
};
use crate::measure::objective::Weights;
use crate::measure::{Decision, Judge, Sample, Spread};
use crate::record::Stage;
use crate::task::Resolved;
use agent::Proposal;
use anyhow::{Context as _, Result, bail};
use sandbox::{CancelFlag, FileTree, Limits};

pub struct Evaluator<'a> {
    incumbent: FileTree,
    place: Place<'a>,
    /// The noise of a pair's gain against the incumbent, for the judge's screens.
    spread: Spread,
    /// The objective's case weights.
    weights: Weights,
}

enum Place<'a> {
    Local {
        harness: Box<Harness<'a>>,
        /// The incumbent built here, once `set_incumbent` has run.
        built: Option<Built>,
    },
    Remote {
        pool: Pool,
        job: Box<Job>,
        r: &'a Resolved,
        cancel: CancelFlag,
    },
}

/// The job every remote call starts from: the task as read here, and its workload.
pub fn base_job(r: &Resolved) -> Result<Job> {
    let workload = match &r.workload {
        None => None,
        Some(w) => Some(match w.path.strip_prefix(&r.task.dir) {
            Ok(rel) => WireWorkload::InTree {
                path: rel.display().to_string(),
                label: w.label.clone(),
            },
            Err(_) => {
                let bytes = std::fs::read(&w.path)
                    .with_context(|| format!("reading workload {}", w.path.display()))?;
                let name = w
                    .path
                    .file_name()
                    .map_or("workload.json".into(), |n| n.to_string_lossy().into_owned());
                WireWorkload::external(&w.label, &name, &bytes)
            }
        }),
    };
    let dir_name = r
        .task
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .context("the task directory has no name")?;
    Ok(Job {
        protocol: PROTOCOL,
        version: VERSION.to_string(),
        task_dir_name: dir_name,
        source: WireTree::from(&r.source),
        workload,
        op: Op::Probe,
    })
}

impl<'a> Evaluator<'a> {
    pub fn local(harness: Harness<'a>) -> Self {
        Evaluator {
            weights: harness.task.metric.weights.clone(),
            incumbent: FileTree::default(),
            place: Place::Local {
                harness: Box::new(harness),
                built: None,
            },
            spread: Spread::default(),
        }
    }

    pub fn remote(pool: Pool, job: Job, r: &'a Resolved, cancel: CancelFlag) -> Self {
        Evaluator {
            weights: r.task.metric.weights.clone(),
            incumbent: r.source.clone(),
            place: Place::Remote {
                pool,
                job: Box::new(job),
                r,
                cancel,
            },
            spread: Spread::default(),
        }
    }

    pub fn is_local(&self) -> bool {
        matches!(self.place, Place::Local { .. })
    }

    /// Makes `tree` the incumbent (built and tested here, for a local run).
    pub fn set_incumbent(&mut self, tree: FileTree) -> Result<(), Failure> {
        if let Place::Local { harness, built } = &mut self.place {
            *built = Some(tokio::task::block_in_place(|| {
                harness.prepare(tree.clone())
            })?);
        }
        self.incumbent = tree;
        self.spread = Spread::default();
        Ok(())
    }

    pub fn incumbent_tree(&self) -> &FileTree {
        &self.incumbent
    }

    /// Evaluates proposals against the incumbent: one after the other here, all at once on
    /// remote targets (each its own job). An error means no target could do it.
    pub fn evaluate(
        &mut self,
        proposals: &[Proposal],
        judge: &Judge<'_>,
    ) -> Result<Vec<Evaluation>> {
        let incumbent = &self.incumbent;
        match &mut self.place {
            Place::Local { harness, built } => {
                let Some(inc) = built.as_mut() else {
                    bail!("the incumbent was not built");
                };
                let mut out = Vec::new();
                for p in proposals {
                    keep_intact(harness, inc)?;
                    let judge = Judge {
                        spread: self.spread.sd(),
                        ..*judge
                    };
                    let mut ev = tokio::task::block_in_place(|| harness.evaluate(p, inc, &judge));
                    self.spread.add(&self.weights, &ev.pairs);
                    if let Some(tree) = ev.tree.clone().filter(|_| needs_confirmation(&ev)) {
                        keep_intact(harness, inc)?;
                        let again = tokio::task::block_in_place(|| {
                            harness.evaluate_tree(tree, inc, &judge, false)
                        });
                        self.spread.add(&self.weights, &again.pairs);
                        ev = confirmed(ev, again);
                    }
                    out.push(ev);
                }
                Ok(out)
            }
            Place::Remote {
                pool,
                job,
                r,
                cancel,
            } => {
                let pool: &Pool = pool;
                let calls = proposals.iter().map(|p| {
                    candidate_tree(&r.task, &Limits::default(), p, incumbent).map(|(tree, diff)| {
                        let mut job = (**job).clone();
                        job.op = Op::Evaluate {
                            incumbent: WireTree::from(incumbent),
                            candidate: WireTree::from(&tree),
                            reference: judge.reference,
                            floor: judge.floor.clone(),
                        };
                        (job, tree, diff)
                    })
                });
                let calls: Vec<_> = calls.collect();
                tokio::task::block_in_place(|| {
                    std::thread::scope(|scope| {
                        let handles: Vec<_> = calls
                            .into_iter()
                            .map(|c| {
                                let cancel = cancel.clone();
                                scope.spawn(move || match c {
                                    Err(f) => Ok(Evaluation::failed(f)),
                                    Ok((job, tree, diff)) => {
                                        let call = |tree, diff| {
                                            remote_evaluation(
                                                pool, &job, &cancel, tree, diff, judge,
                                            )
                                        };
                                        let first = call(tree.clone(), diff.clone())?;
                                        if !needs_confirmation(&first) {
                                            return Ok(first);
                                        }
                                        Ok(confirmed(first, call(tree, diff)?))
                                    }
                                })
                            })
                            .collect();
                        handles
                            .into_iter()
                            .map(|h| {
                                h.join()
                                    .unwrap_or_else(|_| bail!("an evaluation thread panicked"))
                            })
                            .collect()
                    })
                })
            }
        }
    }

    /// An accepted candidate becomes the incumbent.
    pub fn accept(&mut self, ev: &mut Evaluation) {
        if let Some(t) = &ev.tree {
            self.incumbent = t.clone();
        }
        self.spread.restart(&self.weights, &ev.pairs);
        if let Place::Local { built, .. } = &mut self.place
            && let Some(b) = ev.built.take()
        {
            *built = Some(b);
        }
    }

    /// Builds and tests each tree, then `rounds` interleaved samples of each.
    pub fn measure(
        &mut self,
        trees: Vec<(&str, FileTree)>,
        rounds: usize,
    ) -> Result<Vec<Vec<Sample>>> {
        match &mut self.place {
            Place::Local { harness, .. } => {
                let mut built = Vec::new();
                for (name, tree) in trees {
                    built.push(
                        tokio::task::block_in_place(|| harness.prepare(tree))
                            .map_err(|f| anyhow::anyhow!("{name} does not pass: {}", f.reason))?,
                    );
                }
                let refs: Vec<&Built> = built.iter().collect();
                tokio::task::block_in_place(|| harness.measure(&refs, rounds))
            }
            Place::Remote {
                pool, job, cancel, ..
            } => {
                let names: Vec<String> = trees.iter().map(|(n, _)| n.to_string()).collect();
                job.op = Op::Measure {
                    trees: trees.iter().map(|(_, t)| WireTree::from(t)).collect(),
                    rounds,
                };
                match tokio::task::block_in_place(|| pool.call(job, cancel))? {
                    None => bail!("cancelled"),
                    Some(reply) => match reply.result {
                        Outcome::Measured(s) if s.len() == names.len() => Ok(s
                            .into_iter()
                            .map(|v| v.into_iter().map(Sample::from).collect())
                            .collect()),
                        Outcome::TaskError(why) => {
                            bail!("on {} ({}): {why}", reply.node, names.join(", "))
                        }
                        _ => bail!("{} answered another question", reply.node),
                    },
                }
            }
        }
    }
}

/// A candidate's processes may have reached the incumbent's workspace (without bwrap they
/// can): each candidate is measured against the tree that was verified, rebuilt if need be.
fn keep_intact(harness: &mut Harness<'_>, incumbent: &mut Built) -> Result<()> {
    let Err(f) = harness.intact(incumbent) else {
        return Ok(());
    };
    tracing::warn!(
        "the incumbent's workspace was altered ({}); rebuilding it",
        f.reason
    );
    let tree = incumbent.tree.clone();
    *incumbent = tokio::task::block_in_place(|| harness.prepare(tree))
        .map_err(|f| anyhow::anyhow!("the incumbent does not pass any more: {}", f.reason))?;
    Ok(())
}

/// One candidate evaluated on a node and judged here.
fn remote_evaluation(
    pool: &Pool,
    job: &Job,
    cancel: &CancelFlag,
    tree: FileTree,
    diff: String,
    judge: &Judge<'_>,
) -> Result<Evaluation> {
    let mut ev = match pool.call(job, cancel)? {
        None => {
            let mut ev = Evaluation::failed(Failure::new(Stage::Bench, "cancelled"));
            ev.cancelled = true;
            ev
        }
        Some(reply) => match reply.result {
            Outcome::Evaluated(w) => judged(w, tree, judge)?,
            Outcome::TaskError(why) => bail!("on {}: {why}", reply.node),
            _ => bail!("{} answered another question", reply.node),
        },
    };
    ev.diff = Some(diff);
    Ok(ev)
}

/// A node's evaluation, judged here from its samples.
fn judged(w: WireEvaluation, tree: FileTree, judge: &Judge<'_>) -> Result<Evaluation> {
    let mut pairs: Vec<(Sample, Sample)> = w
        .pairs
        .into_iter()
        .map(|(a, b)| (Sample::from(a), Sample::from(b)))
        .collect();
    // Every prefix is judged as the local loop judges it, pair by pair: the verdict is the
    // first prefix's that decides, and pairs a node measured past it count for nothing (a node
    // cannot pick the moment its series looks best).
    let decided = (1..=pairs.len()).find_map(|n| match judge.decide(&pairs[..n]) {
        Decision::Continue => None,
        d => Some((n, d)),
    });
    let decision = match decided {
        Some((n, d)) => {
            pairs.truncate(n);
            Some(d)
        }
        None => (!pairs.is_empty()).then_some(Decision::Continue),
    };
    let mut ev = Evaluation::failed(Failure::new(Stage::Verify, ""));
    ev.bench_seconds = w.bench_seconds;
    ev.process_seconds = w.process_seconds;
    ev.cancelled = w.cancelled;
    match (w.failure, decision) {
        (Some((stage, reason, log)), decision) => {
            ev.stage = stage;
            ev.reason = reason;
            ev.log = log;
            if let (Stage::Retest, Some(Decision::Done { summary, .. })) = (stage, decision) {
                ev.summary = Some(summary);
            }
        }
        (
            None,
            Some(Decision::Done {
                verdict,
                reason,
                summary,
            }),
        ) => {
            ev.verdict = verdict;
            ev.stage = Stage::Judge;
            ev.reason = reason;
            ev.summary = Some(summary);
            ev.tree = Some(tree);
        }
        (None, _) if ev.cancelled => ev.reason = "cancelled".into(),
        (None, _) => bail!("a node sent a series its judge had not finished"),
    }
    ev.pairs = pairs;
    Ok(ev)
}
