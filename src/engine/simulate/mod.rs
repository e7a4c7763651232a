//! Simulation: a task's parameter space recorded once (`polymorph record`) and replayed instead
//! of its processes (`run --simulate`), so strategies run through the real loop and judge in
//! seconds.

mod cache;
pub mod import;
pub mod kernel_tuner;
pub mod record;
mod replay;
pub mod score;

pub use cache::{
    CACHE_FORMAT, Cache, RecordedSample, RecordedTree, case_means, params_key_of, tree_key,
};
pub use replay::{Replay, harness, simulated};
