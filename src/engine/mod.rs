//! The engine: the loop and everything that drives it. Imports `measure`, `task` and `record`;
//! inside, one folder per concept, each importing only those listed after it:
//!
//! - `daemon/`: schedules and the daemon that runs them.
//! - `run/`: a run: its options, the run row, the loop, proposer choice, warm start, ledger
//!   sync, the history digest, side by side on a mixed cluster, the report.
//! - `agent_host/`: the LLM agent's settings, prompts and scratch tree.
//! - `simulate/`: recorded caches, recorded (`record`) and replayed as a `Processes`.
//! - `worker`: `polymorph worker`, the node side of a remote target.
//! - `evaluate/`: a proposal verified, built, tested and judged; the harness and its
//!   `Processes` seam (real processes or a replay), here or through `remote/`.
//! - `remote/`: the controller side of remote targets (ssh, Slurm) and the wire format.
//! - `runner`: the sandbox runner every task command goes through.
//!
//! No file imports another that imports it back (`tests/it/cycles.rs`).

pub mod agent_host;
pub mod daemon;
pub mod evaluate;
pub mod remote;
pub mod run;
pub mod runner;
pub mod simulate;
pub mod worker;

pub use evaluate::{Built, Evaluation, Failure, Harness, tree_diff};
pub use run::{RunOptions, RunReport, Strategy, run};
pub use runner::runner;
