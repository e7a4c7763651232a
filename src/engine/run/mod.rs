//! A run: resolve the context (here, or on the remote targets' nodes), then one run in each
//! context (`in_context.rs`): the ledger branch and runs.db made to agree, the run row started
//! or resumed, the loop (`proposal_loop.rs`) handed the proposer and where to evaluate, and
//! start, best and hand-tuned measured side by side at the end. A killed run resumes where it
//! stopped.

mod attempt;
mod digest;
mod in_context;
mod ledger_sync;
mod observations;
mod options;
mod proposal_loop;
mod proposers;
mod recording;
mod repeats;
mod report;
mod side_by_side;
mod standing;
mod warm_start;

pub use options::{RunOptions, Strategy};
pub use report::RunReport;

use crate::engine::simulate::simulated;
use crate::record::Store;
use crate::task::resolve;
use anyhow::{Result, bail};
use in_context::{Context, run_in_context};
use sandbox::{CancelFlag, Runner};
use side_by_side::{probe_targets, side_by_side};
use std::path::Path;

/// Runs the loop on a task for `opts.budget` candidates (resuming an interrupted run). One
/// report per context: one, unless the remote targets span several contexts (a mixed
/// cluster), where each context's targets get a run and a branch of their own, side by side.
pub async fn run(
    store: &Store,
    ledger_path: &Path,
    task_dir: &Path,
    opts: &RunOptions,
    runner: &Runner,
    cancel: CancelFlag,
) -> Result<Vec<RunReport>> {
    let mut r = resolve(task_dir, opts.workload.as_deref())?;
    let here = |r, cache| Context {
        r,
        cache,
        pool: None,
        label: String::new(),
    };
    let one = match (&opts.simulate, &opts.targets) {
        (Some(_), Some(_)) => bail!("--simulate replays a cache here; it takes no --target"),
        (Some(path), None) => {
            let cache = simulated(&mut r, path)?;
            here(r, Some(cache))
        }
        (None, None) => {
            r.check_requirements()?;
            here(r, None)
        }
        (None, Some((targets, options))) => {
            let mut groups = probe_targets(&r, targets, options, &cancel)?;
            if groups.len() > 1 {
                return side_by_side(store, ledger_path, groups, opts, runner, cancel);
            }
            groups.remove(0)
        }
    };
    Ok(vec![
        run_in_context(store, ledger_path, one, opts, runner, cancel).await?,
    ])
}

#[cfg(test)]
mod tests;
