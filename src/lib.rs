//! polymorph: makes inference kernels and serving configurations faster, and proves it.
//! A proposer suggests a change, the sandbox builds and checks it, the judge benchmarks it
//! against the incumbent with paired statistics, and only verified improvements reach the git
//! ledger; every attempt is recorded in runs.db.

pub mod agent_driver;
pub mod bench;
pub mod cli;
pub mod commands;
pub mod context;
pub mod daemon;
pub mod digest;
pub mod evaluate;
pub mod judge;
pub mod ledger;
pub mod lock;
pub mod optimize;
pub mod plot;
pub mod review;
pub mod schedule;
pub mod serve;
pub mod stats;
pub mod store;
pub mod task;
