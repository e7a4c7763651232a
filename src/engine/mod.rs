//! The engine: the loop and everything that drives it: evaluation through the harness,
//! proposer selection, warm starts, the agent's host, the history digest, schedules and the
//! daemon. Imports `measure`, `task` and `record`.

pub mod agent_host;
mod agent_prompts;
mod agent_scratch;
pub mod daemon;
pub mod digest;
pub mod evaluate;
pub mod evaluator;
pub mod harness;
pub mod ledger_sync;
mod observations;
pub mod proposers;
pub mod record_cache;
pub mod remote;
pub mod report;
pub mod run;
mod run_loop;
pub mod schedule;
mod side_by_side;
pub mod simulate;
pub mod warm_start;

pub use evaluate::{Evaluation, tree_diff};
pub use harness::{Built, Failure, Harness};
pub use proposers::Strategy;
pub use report::RunReport;
pub use run::{RunOptions, run};

use sandbox::{Isolation, Runner};

/// The runner for task commands: bwrap where it works, else plain process isolation (said once).
pub fn runner() -> Runner {
    let isolation = Isolation::detect(&std::env::var("PATH").unwrap_or_default());
    if let Isolation::Plain(why) = &isolation {
        tracing::warn!(
            "task commands run without bwrap isolation ({why}): no network or filesystem confinement"
        );
    }
    Runner::new(isolation)
}
