//! polymorph: makes inference kernels and serving configurations faster, and proves it.
//! A proposer suggests a change, the sandbox builds and checks it, the judge benchmarks it
//! against the incumbent with paired statistics, and only verified improvements reach the git
//! ledger; every attempt is recorded in runs.db.
//!
//! # Layers (every import points down; `tests/it/layers.rs` checks it)
//!
//! ```text
//! main.rs -> cmd/ (the CLI, part of the binary only)
//!              |-> web  (the review page) -> view (read models shared by the CLI and the page)
//!              v
//!           engine  the loop, evaluation, proposers, warm start, agent host, digest, daemon
//!              v
//!           task    task.toml, context, resolving a task      record  runs.db, ledger, review
//!              v                                                 v
//!           measure pure: metric types, statistics, the judge, samples, plots
//! ```
//!
//! - `measure` imports nothing else of the crate and does no I/O.
//! - `task` and `record` import `measure` only; `record` is the only place `sqlx` and `git2`
//!   are named.
//! - `engine` imports `measure`, `task`, `record`; `view` imports those and never `engine`'s
//!   loop; `web` imports `view`, `record`, `measure`, never the CLI.

pub mod engine;
pub mod measure;
pub mod record;
pub mod task;
pub mod view;
pub mod web;
