//! Recording a simulation cache: every valid assignment of a task's `[params]`, the task as given
//! and its hand-tuned baseline, each built and tested once and benchmarked several times through
//! the real harness. The file is rewritten after every tree, and a recording that stopped
//! resumes from it.

use super::cache::{Cache, RecordedSample, RecordedTree, tree_key};
use crate::engine::evaluate::{Harness, RoundSeed};
use crate::task::Resolved;
use anyhow::{Context as _, Result, bail};
use sandbox::{CancelFlag, FileTree, Runner};
use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Largest space `record` enumerates: beyond it, a cache is no longer "small enough to commit".
pub const MAX_RECORDED_TREES: usize = 5_000;

/// What a recording did.
pub struct Recorded {
    pub trees: usize,
    pub newly_measured: usize,
    pub failed: usize,
    pub seconds: f64,
}

/// The trees to record, labelled: start, hand-tuned, then every valid assignment in order.
fn trees(r: &Resolved) -> Result<Vec<(String, Option<proposers::Params>, FileTree)>> {
    let task = &r.task;
    let spec = task
        .params
        .as_ref()
        .with_context(|| format!("task {} declares no [params] to record", task.name))?;
    let space = proposers::ParamSpace::new(spec.values.clone(), &spec.constraints)?;
    if space.size() > MAX_RECORDED_TREES * 10 {
        bail!(
            "task {}: {} assignments before constraints is too many to record (at most {MAX_RECORDED_TREES} valid ones)",
            task.name,
            space.size()
        );
    }
    let all = space.all_valid();
    if all.len() > MAX_RECORDED_TREES {
        bail!(
            "task {}: {} valid assignments; a cache records at most {MAX_RECORDED_TREES}",
            task.name,
            all.len()
        );
    }
    let mut out = vec![("start".to_string(), None, r.source.clone())];
    if let Some(h) = &r.hand_tuned {
        out.push(("hand_tuned".to_string(), None, h.clone()));
    }
    for p in all {
        let mut tree = r.source.clone();
        tree.insert(
            spec.file.clone(),
            sandbox::render_params(spec.format, &p).into_bytes(),
        );
        out.push(("params".to_string(), Some(p), tree));
    }
    Ok(out)
}

/// Records `samples` bench processes of every tree into `out` (resuming a partial file).
pub fn record(
    r: &Resolved,
    runner: &Runner,
    cancel: CancelFlag,
    samples: usize,
    out: &Path,
    progress: bool,
) -> Result<Recorded> {
    let started = Instant::now();
    let mut cache = if out.exists() {
        let c = Cache::load(out)?;
        c.check_matches(r, out)?;
        if c.samples_per_tree != samples {
            bail!(
                "{} holds {} samples per tree, not {samples}: give --samples {} to resume it, or another --out",
                out.display(),
                c.samples_per_tree,
                c.samples_per_tree
            );
        }
        c
    } else {
        Cache::for_task(r, samples)
    };
    let done: HashSet<String> = cache.trees.iter().map(|t| t.key.clone()).collect();
    let todo = trees(r)?;
    let total = todo.len();
    let interrupted = |done: usize| {
        anyhow::anyhow!(
            "interrupted after {done} of {total} trees; run the same command again to resume"
        )
    };
    let mut h = Harness::of(r, runner, cancel.clone())?;
    let mut newly = 0;
    for (i, (label, params, tree)) in todo.into_iter().enumerate() {
        let key = tree_key(&r.task, &tree);
        if done.contains(&key) {
            continue;
        }
        if cancel.load(Ordering::SeqCst) {
            return Err(interrupted(cache.trees.len()));
        }
        let name = params
            .as_ref()
            .map(proposers::params_key)
            .unwrap_or_else(|| label.clone());
        let mut recorded = RecordedTree {
            key,
            label,
            params,
            failed: None,
            samples: Vec::new(),
            truth: None,
        };
        let mut score = None;
        match h.prepare(tree) {
            // A build or test stopped by the interrupt says nothing of the tree: it is left
            // for the resumed recording, not kept as a tree that fails.
            Err(_) if cancel.load(Ordering::SeqCst) => return Err(interrupted(cache.trees.len())),
            Err(f) => recorded.failed = Some(f.reason),
            Ok(built) => {
                let mut benched = Vec::new();
                for _ in 0..samples {
                    h.take_times();
                    let s = h.bench(&built, RoundSeed::fresh()).map_err(|f| {
                        anyhow::anyhow!("{name}: {} (the cache keeps what was recorded)", f.reason)
                    })?;
                    let (_, bench) = h.take_times();
                    recorded.samples.push(RecordedSample {
                        seconds: bench.as_secs_f64(),
                        cases: s.cases.clone(),
                        limit: s.limit,
                    });
                    benched.push(s);
                }
                score = Some(r.task.metric.weights.median_score(&benched));
            }
        }
        if progress {
            let how = match (&recorded.failed, score) {
                (Some(why), _) => format!("failed: {why}"),
                (None, s) => format!("{:.4} {}", s.unwrap_or(f64::NAN), r.task.metric.name),
            };
            eprintln!("[{}/{total}] {name}: {how}", i + 1);
        }
        cache.trees.push(recorded);
        cache.save(out)?;
        newly += 1;
    }
    Ok(Recorded {
        trees: cache.trees.len(),
        newly_measured: newly,
        failed: cache.trees.iter().filter(|t| t.failed.is_some()).count(),
        seconds: started.elapsed().as_secs_f64(),
    })
}
