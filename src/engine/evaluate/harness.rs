//! The harness: a task's commands for one context, each tree in a fresh workspace, the hash
//! check of harness-owned files before every command, build -> test, and bench samples one
//! process at a time. What runs the commands is a `Processes` (the task's own, or a recorded
//! cache replayed); the checks and the times are kept here, the same for both.

use super::failure::Failure;
use super::processes::{Processes, RoundSeed};
use super::spawned::Spawned;
use crate::measure::{Sample, same_cases};
use crate::record::Stage;
use crate::task::{Resolved, Task, Workload};
use anyhow::{Context as _, Result, bail};
use sandbox::{FileTree, Limits, Manifest, RelPath, Runner, Snapshot, Workspace};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Where a workload given on the command line is placed inside each tree.
const EXTERNAL_WORKLOAD: &str = ".polymorph/workload.json";

/// A tree built and tested in its own workspace.
pub struct Built {
    pub ws: Workspace,
    pub tree: FileTree,
    /// The workspace right after the build: every later command first checks it is unchanged.
    pub outputs: Snapshot,
}

/// Runs a task's commands for one context.
pub struct Harness<'a> {
    pub task: &'a Task,
    cancel: sandbox::CancelFlag,
    manifest: Manifest,
    /// An external workload's bytes, placed at `EXTERNAL_WORKLOAD` in every workspace.
    external_workload: Option<Vec<u8>>,
    pub(super) limits: Limits,
    processes: Box<dyn Processes + 'a>,
    bench_time: Duration,
    /// Cases of any bench process so far that said it verified none of its timed calls.
    unverified: BTreeSet<String>,
}

impl<'a> Harness<'a> {
    /// The harness that runs the task's own processes through `runner`, in context
    /// `context_id`: a task's reference is computed first where none is kept for it.
    pub fn new(
        task: &'a Task,
        source: &FileTree,
        runner: &'a Runner,
        cancel: sandbox::CancelFlag,
        workload: Option<&Workload>,
        context_id: &str,
    ) -> Result<Self> {
        let (rel, external) = match workload {
            None => (None, None),
            Some(w) => match w.path.strip_prefix(&task.dir) {
                Ok(rel) => (Some(rel.display().to_string()), None),
                Err(_) => {
                    let bytes = std::fs::read(&w.path)
                        .with_context(|| format!("reading workload {}", w.path.display()))?;
                    (Some(EXTERNAL_WORKLOAD.to_string()), Some(bytes))
                }
            },
        };
        let mut spawned = Spawned::new(task, runner, cancel.clone(), rel);
        if task.commands.reference.is_some() {
            // The reference reads the workload where every other command does.
            let mut given = source.clone();
            if let Some(bytes) = &external {
                given.insert(RelPath::new(EXTERNAL_WORKLOAD)?, bytes.clone());
            }
            spawned
                .attach_reference(&given, context_id)
                .with_context(|| format!("computing task {}'s reference", task.name))?;
        }
        let mut h = Harness::with_processes(task, source, cancel, Box::new(spawned));
        h.external_workload = external;
        Ok(h)
    }

    /// The harness for a task resolved for a run: its own tree, workload and context.
    pub fn of(r: &'a Resolved, runner: &'a Runner, cancel: sandbox::CancelFlag) -> Result<Self> {
        Harness::new(
            &r.task,
            &r.source,
            runner,
            cancel,
            r.workload.as_ref(),
            &r.context_id,
        )
    }

    /// The harness over any `Processes` (a replayed cache, a test's script).
    pub fn with_processes(
        task: &'a Task,
        source: &FileTree,
        cancel: sandbox::CancelFlag,
        processes: Box<dyn Processes + 'a>,
    ) -> Self {
        Harness {
            task,
            cancel,
            manifest: Manifest::of(source, |p| !task.is_editable(p)),
            external_workload: None,
            limits: Limits::default(),
            processes,
            bench_time: Duration::ZERO,
            unverified: BTreeSet::new(),
        }
    }

    /// Every command from now on under code layout `layout`, or under none.
    pub(super) fn set_layout(&mut self, layout: Option<u32>) {
        self.processes.set_layout(layout);
    }

    pub(super) fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    /// The cases for which some bench process verified none of its timed calls' outputs.
    pub fn unverified_cases(&self) -> &BTreeSet<String> {
        &self.unverified
    }

    /// Process and bench wall time since the last call, reset.
    pub fn take_times(&mut self) -> (Duration, Duration) {
        (
            self.processes.take_process_time(),
            std::mem::take(&mut self.bench_time),
        )
    }

    /// The built tree's snapshot, settled for quick checks where `check_harness` makes them.
    fn snapshot(&self, dir: &Path) -> Result<Snapshot, Failure> {
        if self.processes.frozen_after_build() {
            Snapshot::of_dir_settling(dir)
        } else {
            Snapshot::of_dir(dir)
        }
        .map_err(|e| Failure::new(Stage::Build, e.to_string()))
    }

    /// Before every command: up to the build, the harness-owned files hash as the task's; after
    /// it, the workspace is exactly as the build left it (its snapshot was taken only once the
    /// harness files were verified again, so it covers them too).
    fn check_harness(
        &self,
        dir: &Path,
        outputs: Option<&Snapshot>,
        stage: Stage,
    ) -> Result<(), Failure> {
        match outputs {
            None => self.manifest.verify(dir),
            Some(o) if self.processes.frozen_after_build() => o.verify_stamps(dir),
            Some(o) => o.verify(dir),
        }
        .map_err(|e| Failure::new(stage, e.to_string()))
    }

    /// Whether `built` is still exactly what was built and tested.
    pub fn intact(&self, built: &Built) -> Result<(), Failure> {
        self.check_harness(built.ws.path(), Some(&built.outputs), Stage::Bench)
    }

    /// A candidate's processes may have reached the incumbent's workspace (without bwrap they
    /// can): each candidate is measured against the tree that was verified, rebuilt if need be.
    pub fn keep_intact(&mut self, incumbent: &mut Built) -> anyhow::Result<()> {
        let Err(f) = self.intact(incumbent) else {
            return Ok(());
        };
        tracing::warn!(
            "the incumbent's workspace was altered ({}); rebuilding it",
            f.reason
        );
        let tree = incumbent.tree.clone();
        *incumbent = tokio::task::block_in_place(|| self.prepare(tree))
            .map_err(|f| anyhow::anyhow!("the incumbent does not pass any more: {}", f.reason))?;
        Ok(())
    }

    /// Writes `tree` into a fresh workspace, builds it and runs the test once.
    pub fn prepare(&mut self, tree: FileTree) -> Result<Built, Failure> {
        let ws = Workspace::create(&tree, None)
            .map_err(|e| Failure::new(Stage::Build, e.to_string()))?;
        // An external workload goes into the workspace only: it is not part of the tree that
        // reaches the ledger.
        if let Some(bytes) = &self.external_workload {
            let mut extra = FileTree::default();
            extra.insert(
                RelPath::new(EXTERNAL_WORKLOAD)
                    .map_err(|e| Failure::new(Stage::Verify, e.to_string()))?,
                bytes.clone(),
            );
            extra
                .write_to(ws.path())
                .map_err(|e| Failure::new(Stage::Build, e.to_string()))?;
        }
        self.check_harness(ws.path(), None, Stage::Build)?;
        self.processes.build(&tree, ws.path())?;
        // The build may not have touched the harness; from here on the tree is frozen:
        // read-only under bwrap, and checked against this snapshot before every command.
        self.check_harness(ws.path(), None, Stage::Test)?;
        let outputs = self.snapshot(ws.path())?;
        let built = Built { ws, tree, outputs };
        self.test(&built, Stage::Test)?;
        Ok(built)
    }

    /// The task's test on `built`, after checking it is unchanged.
    pub(super) fn test(&mut self, built: &Built, stage: Stage) -> Result<(), Failure> {
        self.check_harness(built.ws.path(), Some(&built.outputs), stage)?;
        self.processes.test(&built.tree, built.ws.path(), stage)
    }

    /// One bench process on `built` in round `round`: one sample.
    pub fn bench(&mut self, built: &Built, round: RoundSeed) -> Result<Sample, Failure> {
        self.check_harness(built.ws.path(), Some(&built.outputs), Stage::Bench)?;
        let b = self.processes.bench(&built.tree, built.ws.path(), round)?;
        self.bench_time += b.seconds;
        self.unverified.extend(b.unverified);
        self.task
            .metric
            .weights
            .check(&b.sample)
            .map_err(|why| Failure::new(Stage::Bench, format!("bench output invalid: {why}")))?;
        Ok(b.sample)
    }

    /// Interleaved samples of several built trees, `rounds` each, in rotating order.
    pub fn measure(&mut self, trees: &[&Built], rounds: usize) -> Result<Vec<Vec<Sample>>> {
        let mut out = vec![Vec::new(); trees.len()];
        for round in 0..rounds {
            let seed = RoundSeed::fresh();
            for k in 0..trees.len() {
                let i = (k + round) % trees.len();
                if self.cancelled() {
                    bail!("cancelled");
                }
                let s = self
                    .bench(trees[i], seed)
                    .map_err(|f| anyhow::anyhow!("{}", f.reason))?;
                if let Some(first) = out[i].first() {
                    same_cases(first, &s).map_err(|e| anyhow::anyhow!(e))?;
                }
                out[i].push(s);
            }
        }
        Ok(out)
    }
}
