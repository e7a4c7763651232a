//! Tasks: task.toml loaded and validated, the context a result holds for (hardware, toolchain,
//! workload, model, harness), and a task resolved for a run. Imports `measure` only.

mod commands;
pub mod context;
mod files;
pub mod installs;
pub mod interface;
pub mod join;
mod judging;
pub mod knobs;
pub mod node;
pub mod params;
pub mod python;
pub mod requires;
pub mod resolve;
pub mod spec;

pub use commands::Commands;
pub use context::{Fingerprint, Workload};
pub use installs::Install;
pub use node::NodeEnv;
pub use params::ParamsSpec;
pub use python::PythonEnv;
pub use requires::Requirement;
pub use resolve::{Resolved, branch_name, resolve};
pub use spec::Task;
