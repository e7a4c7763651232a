//! What a run is asked to do: the options `run`, `schedule` and the benches set.

use crate::engine::agent_host::AgentSettings;
use crate::engine::remote::{Target, TargetOptions};
use crate::measure::text_enum::text_enum;
use crate::record::ProposerChoice;
use std::path::PathBuf;

/// How a run proposes, how far it goes and where it evaluates.
pub struct RunOptions {
    pub proposer: ProposerChoice,
    pub budget: usize,
    pub seed: Option<u64>,
    pub workload: Option<PathBuf>,
    /// Print one progress line per candidate on stderr.
    pub progress: bool,
    /// In a context never tuned, first re-measure the bests of the nearest tuned contexts.
    pub warm_start: bool,
    /// The LLM agent's settings, for `--proposer agent` (and `auto` when an endpoint is set).
    pub agent: Option<AgentSettings>,
    /// Replay this recorded measurement cache instead of running the task's processes; the
    /// run's context names the cache, so its results never mix with measured ones.
    pub simulate: Option<PathBuf>,
    /// How the search proposer chooses assignments.
    pub strategy: Strategy,
    /// Where evaluations run: here (`None`), or on these remote targets.
    pub targets: Option<(Vec<Target>, TargetOptions)>,
}

text_enum! {
    /// How the search proposer chooses assignments.
    pub enum Strategy {
        /// A surrogate model fitted to every measurement in the context, racing screened
        /// contenders and judging only their leader in full.
        Model = "model",
        /// The tree-structured Parzen estimator (Optuna's defaults), racing screened
        /// contenders and judging only their leader in full.
        Tpe = "tpe",
        /// Local moves around the incumbent with 30% random draws.
        Hill = "hill",
        /// Uniform draws over the untried assignments.
        Random = "random",
    }
}
