//! Resolving a task for a run: load and validate task.toml, read its trees once, probe the
//! context on this machine, and name the ledger branch its results go to.

use super::context::{self, Fingerprint, Workload};
use super::requires::missing;
use super::spec::Task;
use anyhow::{Result, bail};
use sandbox::FileTree;
use std::path::Path;

/// Everything resolved about where a task's results go.
#[derive(Clone)]
pub struct Resolved {
    pub task: Task,
    pub source: FileTree,
    /// The hand-tuned baseline's tree, read with the source so a run never rereads the task dir.
    pub hand_tuned: Option<FileTree>,
    pub workload: Option<Workload>,
    pub fingerprint: Fingerprint,
    pub context_id: String,
    pub branch: String,
}

impl Resolved {
    /// Fails, naming each one, when this machine lacks what the task requires (first: no setup
    /// helps there), or when the task's packages are not installed yet.
    pub fn check_requirements(&self) -> Result<()> {
        let path_var = std::env::var("PATH").unwrap_or_default();
        let lacking = missing(&self.task.requires, &path_var, Path::new("/dev"));
        if !lacking.is_empty() {
            bail!(
                "task {} needs what this machine lacks: {}; run it on a machine that has them",
                self.task.name,
                lacking.join(", ")
            );
        }
        if let Some(i) = self.task.installs().into_iter().find(|i| !i.ready()) {
            bail!(
                "task {} needs its {} ({}): run `polymorph setup {}` once to install them into {}",
                self.task.name,
                i.what(),
                i.pins().join(", "),
                self.task.dir.display(),
                i.dir().display()
            );
        }
        Ok(())
    }
}

/// The ledger branch of a task in a context: `<task>/<context-id>`.
pub fn branch_name(task: &str, context_id: &str) -> String {
    format!("{task}/{context_id}")
}

/// Loads the task in `task_dir` and probes its context here, with `workload` instead of the
/// task's own when given.
pub fn resolve(task_dir: &Path, workload: Option<&Path>) -> Result<Resolved> {
    let task = Task::load(task_dir)?;
    let workload = Workload::resolve(&task, workload)?;
    resolve_with(task, workload)
}

/// Reads a loaded task's trees and probes its context here for `workload` (a worker resolves a
/// task it was sent this way, with the workload named as its controller names it).
pub fn resolve_with(mut task: Task, workload: Option<Workload>) -> Result<Resolved> {
    if let Some(w) = &workload {
        task.metric.weights = w.weights()?;
    }
    let source = task.source_tree()?;
    // A knob the task's own parameter file declares must be well formed, as a candidate's is
    // at verification: the search reads both the same way.
    task.added_knobs(&source)
        .map_err(|e| anyhow::anyhow!("task {}: {e}", task.name))?;
    let hand_tuned = task.hand_tuned_tree(&source)?;
    let path_var = task.path_var(&std::env::var("PATH").unwrap_or_default());
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
