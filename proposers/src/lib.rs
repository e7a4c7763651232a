//! Proposers: where candidates come from. A proposer hands out one candidate at a time, seeing
//! the incumbent's parameter assignment and what was already measured in this context; it never
//! builds, runs or measures anything (that is the sandbox's and the judge's job). `search/`
//! holds the seeded parameter searches, `llm/` the LLM coding agent, `replay.rs` replay files.

mod error;
pub mod llm;
mod origin;
mod prepend;
mod replay;
mod search;

pub use error::AgentError;

pub use origin::{Origin, Reach};
pub use prepend::Prepend;
pub use replay::ReplayProposer;
pub use search::model::ModelProposer;
pub use search::scoring::Goal;
pub use search::space::{ParamSpace, SearchProposer, params_key};
pub use search::tpe::TpeProposer;
pub use search::widen::{Build, Widening};

use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

/// A parameter assignment: name -> value.
pub type Params = BTreeMap<String, Value>;

/// What a proposer suggests changing.
#[derive(Debug, Clone, PartialEq)]
pub enum ProposedChange {
    /// A unified diff against the incumbent.
    Diff(String),
    /// Whole files: path -> content.
    Files(BTreeMap<String, String>),
    /// A full parameter assignment for the task's `[params]`.
    Params(Params),
}

/// One candidate as proposed, with its provenance.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub change: ProposedChange,
    /// Why the proposer thinks this might help (free text, optional).
    pub note: Option<String>,
    /// Where it came from.
    pub origin: Origin,
    /// What producing it cost, for proposers that call a model.
    pub usage: Option<Usage>,
    /// Only screen it: a few pairs against the incumbent, never accepted, so that a race of
    /// contenders can be compared before its leader gets the full judgement. Proposers set it
    /// only where `ProposalContext::can_screen` says it is honoured.
    pub screen_only: bool,
}

/// Model usage behind one proposal.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    pub model: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub requests: u64,
    /// Wall time spent waiting for the model.
    pub latency_ms: u64,
    /// Wall time of the processes run for the proposer itself (its build-and-test calls).
    pub process_ms: u64,
    /// The protocol the proposal came from (`tools`, `text`, `whole-file`).
    pub protocol: String,
}

/// One measured assignment in this context: the per-case medians of its samples and of the
/// incumbent's in the same pairs (both empty when it never reached the bench).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observation {
    pub params: Params,
    pub candidate: BTreeMap<String, f64>,
    pub incumbent: BTreeMap<String, f64>,
    /// Measured by a screen-only proposal (`Origin::screen_only`): a contender, not judged.
    pub screened_only: bool,
    /// The pairs it was measured in.
    pub pairs: usize,
    /// Carried from another context (a warm start: a neighbouring context's best), not chosen
    /// by this context's search.
    pub carried: bool,
}

/// What a proposer may look at when choosing the next candidate.
#[derive(Debug, Clone, Default)]
pub struct ProposalContext {
    /// The incumbent's parameter assignment, when the task has `[params]`.
    pub incumbent_params: Option<Params>,
    /// `params_key` of every assignment already measured in this context.
    pub tried_params: HashSet<String>,
    /// The incumbent's editable files: path -> content.
    pub incumbent_files: BTreeMap<String, String>,
    /// A digest of earlier attempts (filled only for proposers that ask for it).
    pub history: String,
    /// The incumbent's score and the hand-tuned baseline's, as last measured.
    pub incumbent_score: Option<f64>,
    pub reference_score: Option<f64>,
    /// Every parameter assignment measured in this context, earlier runs included, oldest
    /// first (filled only for proposers that ask for it; shared, not copied per proposal).
    pub observations: std::sync::Arc<Vec<Observation>>,
    /// Whether screen-only proposals are honoured (screening is on and candidates are
    /// evaluated one at a time here); elsewhere every proposal gets the full judgement.
    pub can_screen: bool,
    /// The pairs the judge's screen takes (`judge.screen_pairs`).
    pub screen_pairs: usize,
    /// The standard deviation of one pair's gain (a log-ratio) against the incumbent, as the
    /// judge pools it, once enough pairs are known.
    pub pair_spread: Option<f64>,
    /// Each case's log gain of the incumbent over the judge's floor (`[judge] floor`); a case
    /// not in it stands at the floor (all of them when the floor is the incumbent).
    pub floor: BTreeMap<String, f64>,
    /// Candidates left in this run, this one included, when the run has a budget.
    pub remaining: Option<usize>,
    /// Knobs the incumbent's parameter file declares beyond the task's `[params]` (a candidate
    /// added them), with their values: the search explores them too.
    pub knobs: BTreeMap<String, Vec<Value>>,
}

/// A source of candidates.
#[async_trait::async_trait]
pub trait Proposer: Send {
    /// Short name recorded with each candidate (`search`, `replay`, `agent`).
    fn name(&self) -> &str;
    /// Whether `ProposalContext::history` should be filled (it costs queries).
    fn wants_history(&self) -> bool {
        false
    }
    /// Whether `ProposalContext::observations` should be filled (it reads every sample).
    fn wants_observations(&self) -> bool {
        false
    }
    /// The next candidate, or `None` when this proposer has nothing left to offer.
    async fn next(&mut self, ctx: &ProposalContext) -> Result<Option<Proposal>, AgentError>;
}
