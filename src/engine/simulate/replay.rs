//! A cache replayed instead of the task's processes (`run --simulate`): the recorded build and
//! test outcome of each tree, and bench samples drawn at random (seeded) from its recorded ones,
//! so strategies run through the real loop and judge in seconds.

use super::cache::{Cache, RecordedTree, tree_key};
use crate::engine::evaluate::{Benched, Failure, Harness, Processes, RoundSeed};
use crate::measure::Sample;
use crate::record::Stage;
use crate::task::{Resolved, Task, branch_name};
use anyhow::Result;
use proposers::params_key;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sandbox::{CancelFlag, FileTree, Runner};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// A cache being replayed: samples drawn at random (seeded) from each tree's recorded ones.
pub struct Replay<'a> {
    task: &'a Task,
    trees: BTreeMap<String, RecordedTree>,
    rng: ChaCha8Rng,
}

impl<'a> Replay<'a> {
    pub fn new(task: &'a Task, cache: Cache, seed: u64) -> Self {
        Replay {
            task,
            trees: cache
                .trees
                .into_iter()
                .map(|t| (t.key.clone(), t))
                .collect(),
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_cace),
        }
    }
}

impl Processes for Replay<'_> {
    /// What the build and test of `tree` did when the cache was recorded (a recorded test
    /// failure is reported here too: the recording ran both at once).
    fn build(&mut self, tree: &FileTree, _dir: &Path) -> Result<(), Failure> {
        let t = find(&self.trees, self.task, tree, Stage::Build)?;
        match &t.failed {
            Some(why) => {
                let stage = if why.starts_with("build failed") {
                    Stage::Build
                } else {
                    Stage::Test
                };
                Err(Failure::new(stage, format!("{why} (recorded)")))
            }
            None => Ok(()),
        }
    }

    /// The recorded test passed, or `build` refused the tree.
    fn test(&mut self, _tree: &FileTree, _dir: &Path, _stage: Stage) -> Result<(), Failure> {
        Ok(())
    }

    /// One recorded sample of `tree`, drawn at random. The recorded seconds count as bench
    /// time, never as process time: polymorph's own overhead stays what it really was.
    fn bench(&mut self, tree: &FileTree, _dir: &Path, _: RoundSeed) -> Result<Benched, Failure> {
        let t = find(&self.trees, self.task, tree, Stage::Bench)?;
        if t.samples.is_empty() {
            return Err(Failure::new(
                Stage::Bench,
                "simulation: no samples recorded for this tree",
            ));
        }
        let s = &t.samples[self.rng.random_range(0..t.samples.len())];
        Ok(Benched {
            sample: Sample {
                cases: s.cases.clone(),
                limit: s.limit,
                state: None,
            },
            seconds: Duration::from_secs_f64(s.seconds),
            unverified: Vec::new(),
        })
    }

    fn take_process_time(&mut self) -> Duration {
        Duration::ZERO
    }

    /// No process runs at all.
    fn frozen_after_build(&self) -> bool {
        true
    }
}

/// The recorded tree whose editable files are `tree`'s.
fn find<'a>(
    trees: &'a BTreeMap<String, RecordedTree>,
    task: &Task,
    tree: &FileTree,
    stage: Stage,
) -> Result<&'a RecordedTree, Failure> {
    let recorded_as = || {
        // `record` renders each assignment whole (sorted), where a run rewrites only the lines
        // that change: the same assignment, other bytes. Look it up as `record` wrote it.
        let spec = task.params.as_ref()?;
        let p = task.params_of(tree)?;
        let mut t = tree.clone();
        t.insert(
            spec.file.clone(),
            sandbox::render_params(spec.format, &p).into_bytes(),
        );
        trees.get(&tree_key(task, &t))
    };
    let found = trees.get(&tree_key(task, tree)).or_else(recorded_as);
    found.ok_or_else(|| {
        let what = task
            .params_of(tree)
            .map(|p| format!(" (params {})", params_key(&p)))
            .unwrap_or_default();
        Failure::new(
            stage,
            format!("simulation: the cache holds no measurements of this tree{what}"),
        )
    })
}

/// Loads the cache a simulated run replays, checks it fits the task, and moves the run into
/// the cache's own context.
pub fn simulated(r: &mut Resolved, path: &Path) -> Result<Cache> {
    let cache = Cache::load(path)?;
    cache.check_matches(r, path)?;
    r.fingerprint.simulation = Cache::digest(path)?;
    r.context_id = r.fingerprint.id();
    r.branch = branch_name(&r.task.name, &r.context_id);
    Ok(cache)
}

/// The harness for the run's commands, replaying `cache` when the run is simulated.
pub fn harness<'a>(
    r: &'a Resolved,
    runner: &'a Runner,
    cancel: CancelFlag,
    cache: Option<&Cache>,
    seed: u64,
) -> Result<Harness<'a>> {
    Ok(match cache {
        Some(c) => Harness::with_processes(
            &r.task,
            &r.source,
            cancel,
            Box::new(Replay::new(&r.task, c.clone(), seed)),
        ),
        None => Harness::of(r, runner, cancel)?,
    })
}
