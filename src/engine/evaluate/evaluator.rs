//! Where a run's processes run: here, through the harness, with the incumbent built once and
//! kept; or on remote targets, where each job carries its trees and a node builds, tests and
//! benchmarks them (`remote_series.rs`). Either way the verdict is this process's judge's, from
//! the raw samples.

use super::confirm::{confirmed, needs_confirmation};
use super::evaluation::{Evaluation, candidate_tree};
use super::failure::Failure;
use super::harness::{Built, Harness};
use super::remote_series::{Here, on_nodes};
use crate::engine::remote::wire::{Job, Op, Outcome, PROTOCOL, VERSION, WireTree, WireWorkload};
use crate::engine::remote::{Pool, VerifyOn};
use crate::measure::objective::Weights;
use crate::measure::{Judge, Sample, Spread};
use crate::task::Resolved;
use anyhow::{Context as _, Result, bail};
use proposers::Proposal;
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
        /// Where an accepted candidate is confirmed.
        verify: VerifyOn,
        /// The controller's harness, for `VerifyOn::Controller`.
        here: Option<Here<'a>>,
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

    /// Evaluations on `pool`'s targets, each accepted candidate confirmed where `verify` says;
    /// `here` is the controller's own harness, which `VerifyOn::Controller` needs.
    pub fn remote(
        pool: Pool,
        job: Job,
        r: &'a Resolved,
        cancel: CancelFlag,
        (verify, here): (VerifyOn, Option<Harness<'a>>),
    ) -> Result<Self> {
        if verify == VerifyOn::Controller && here.is_none() {
            bail!("--verify-on controller needs this machine's harness");
        }
        Ok(Evaluator {
            weights: r.task.metric.weights.clone(),
            incumbent: r.source.clone(),
            place: Place::Remote {
                pool,
                job: Box::new(job),
                r,
                cancel,
                verify,
                here: here.map(Here::new),
            },
            spread: Spread::default(),
        })
    }

    /// The standard deviation of a pair's gain against the incumbent, once the judge knows it.
    pub fn pair_spread(&self) -> Option<f64> {
        self.spread.sd()
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
                    harness.keep_intact(inc)?;
                    let judge = Judge {
                        spread: self.spread.sd(),
                        ..*judge
                    };
                    let mut ev = tokio::task::block_in_place(|| harness.evaluate(p, inc, &judge));
                    self.spread.add(&self.weights, &ev.pairs);
                    if let Some(tree) = ev.tree.clone().filter(|_| needs_confirmation(&ev)) {
                        harness.keep_intact(inc)?;
                        let again = tokio::task::block_in_place(|| {
                            harness.confirm_tree(tree, &inc.tree, &judge)
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
                verify,
                here,
            } => {
                let (pool, verify): (&Pool, VerifyOn) = (pool, *verify);
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
                let on_nodes: Vec<Evaluation> = tokio::task::block_in_place(|| {
                    std::thread::scope(|scope| {
                        let handles: Vec<_> = calls
                            .into_iter()
                            .map(|c| {
                                let cancel = cancel.clone();
                                scope.spawn(move || match c {
                                    Err(f) => Ok(Evaluation::failed(f)),
                                    Ok((job, tree, diff)) => {
                                        on_nodes(pool, &job, &cancel, (tree, diff), judge, verify)
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
                            .collect::<Result<_>>()
                    })
                })?;
                // Confirmations here run one at a time, after the nodes' series: benchmarks on
                // one machine would contend.
                match here {
                    None => Ok(on_nodes),
                    Some(here) => on_nodes
                        .into_iter()
                        .map(|ev| here.confirm(incumbent, ev, judge))
                        .collect(),
                }
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
