//! Evaluation: a proposal verified, applied, built, tested and judged against the incumbent
//! through the harness, here or on remote targets. The harness runs commands through the
//! `Processes` seam, which the task's real processes and a replayed cache both implement.

mod branches;
mod confirm;
mod evaluation;
mod evaluator;
mod failure;
mod harness;
mod processes;
mod reference;
mod remote_series;
mod spawned;

pub(crate) use branches::directive;
pub use evaluation::{Evaluation, candidate_tree, tree_diff};
pub use evaluator::{Evaluator, base_job};
pub use failure::{Blame, Failure, HarnessFault};
pub use harness::{Built, Harness};
pub use processes::{Benched, Processes, RoundSeed};

#[cfg(test)]
pub(crate) mod scripted;
#[cfg(test)]
mod tests;
