//! The rows of runs.db as Rust types: what queries return (`*Row`) and what an evaluation
//! writes (`NewEvaluation`, `NewEntry`). States are enums, a gain is an `Interval`.

use crate::measure::{Interval, SampleSide, Series, Verdict};
use crate::record::kinds::{
    ChangeKind, EntryKind, ProposerChoice, ProposerKind, ReviewState, RunProposer, RunStatus, Stage,
};
use crate::record::ledger::CommitId;
use serde_json::Value;
use sqlx::FromRow;

#[derive(Debug, Clone, FromRow)]
pub struct RunRow {
    pub id: i64,
    pub task: String,
    pub task_dir: String,
    pub context_id: String,
    pub proposer: RunProposer,
    pub budget: i64,
    pub seed: i64,
    pub status: RunStatus,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub start_score: Option<f64>,
    pub hand_tuned_score: Option<f64>,
    pub message: Option<String>,
    /// Kept by triggers as the run's candidates are recorded (migration 0008).
    #[sqlx(flatten)]
    pub counts: VerdictCounts,
    #[sqlx(flatten)]
    pub usage: RunUsage,
}

/// The simulated contexts of a store: (task, context id) -> the replayed cache's sha256.
#[derive(Debug, Default)]
pub struct Simulations(pub(super) std::collections::HashMap<(String, String), String>);

impl Simulations {
    /// The cache `task`'s context `context_id` replays; `None` for a measured context.
    pub fn of(&self, task: &str, context_id: &str) -> Option<&str> {
        self.0
            .get(&(task.to_string(), context_id.to_string()))
            .map(String::as_str)
    }

    /// `"simulated": true/false` and `"simulation"` (the cache's sha256, or null), added to a
    /// JSON object describing something of `task` in `context_id`.
    pub fn label(&self, task: &str, context_id: &str, obj: &mut Value) {
        let sha = self.of(task, context_id);
        obj["simulated"] = sha.is_some().into();
        obj["simulation"] = sha.into();
    }

    /// Rows with a `task` and a `context_id` as JSON objects, each labelled.
    pub fn labelled<T: serde::Serialize>(&self, rows: &[T]) -> serde_json::Result<Vec<Value>> {
        rows.iter()
            .map(|r| {
                let mut v = serde_json::to_value(r)?;
                let key = |k: &str| v[k].as_str().unwrap_or_default().to_string();
                let (task, context) = (key("task"), key("context_id"));
                self.label(&task, &context, &mut v);
                Ok(v)
            })
            .collect()
    }
}

/// What a person reads first about a simulated result.
pub const SIMULATED: &str =
    "SIMULATED: replayed from a recorded cache (run --simulate); no task process ran";

#[derive(Debug, Clone, FromRow)]
pub struct EntryRow {
    pub id: i64,
    pub kind: EntryKind,
    pub candidate_id: Option<i64>,
    pub task: String,
    pub context_id: String,
    pub branch: String,
    pub commit_sha: String,
    pub parent_entry_id: Option<i64>,
    pub score: Option<f64>,
    pub params: Option<String>,
    pub review_state: ReviewState,
    pub created_at: String,
    pub reviewed_by: Option<String>,
    pub reviewed_at: Option<String>,
    pub review_reason: Option<String>,
}

impl EntryRow {
    /// The entry's ledger commit.
    pub fn commit(&self) -> anyhow::Result<CommitId> {
        CommitId::parse(&self.commit_sha)
    }
}

/// An accepted entry with its review state and the numbers that got it accepted.
#[derive(Debug, Clone, FromRow, serde::Serialize)]
pub struct ReviewRow {
    pub entry: i64,
    pub review_state: ReviewState,
    pub reviewed_by: Option<String>,
    pub task: String,
    pub context_id: String,
    pub commit_sha: String,
    pub created_at: String,
    pub candidate: i64,
    pub proposer: ProposerKind,
    pub origin: String,
    pub reason: String,
    pub gain: Option<f64>,
    pub gain_low: Option<f64>,
    pub gain_high: Option<f64>,
}

#[derive(Debug, Clone, FromRow)]
pub struct CandidateRow {
    pub id: i64,
    pub run_id: i64,
    pub seq: i64,
    pub task: String,
    pub context_id: String,
    pub proposer: ProposerKind,
    pub origin: String,
    pub note: Option<String>,
    pub kind: ChangeKind,
    pub payload: String,
    pub diff: Option<String>,
    pub parent_entry_id: Option<i64>,
    pub created_at: String,
    pub verdict: Verdict,
    pub reason: String,
    pub stage: Stage,
    pub gain: Option<f64>,
    pub gain_low: Option<f64>,
    pub gain_high: Option<f64>,
    pub confidence: Option<f64>,
    pub incumbent_score: Option<f64>,
    pub candidate_score: Option<f64>,
    pub pairs: i64,
    pub bench_seconds: f64,
    pub process_seconds: f64,
    pub overhead_ms: f64,
    pub log: Option<String>,
    pub model: Option<String>,
    pub prompt_tokens: Option<i64>,
    pub completion_tokens: Option<i64>,
    pub agent_protocol: Option<String>,
}

impl CandidateRow {
    /// The measured gain with its interval, when the candidate got as far as the judge.
    pub fn gain(&self) -> Option<Interval> {
        Some(Interval {
            estimate: self.gain?,
            low: self.gain_low?,
            high: self.gain_high?,
            confidence: self.confidence.unwrap_or(0.0),
        })
    }
}

#[derive(Debug, Clone, FromRow, serde::Serialize)]
pub struct ScheduleRow {
    pub id: i64,
    pub task: String,
    pub task_dir: String,
    pub every_s: Option<i64>,
    pub cron: Option<String>,
    pub budget: i64,
    pub proposer: ProposerChoice,
    pub workload: Option<String>,
    pub created_at: String,
    pub last_run_at: Option<String>,
    pub last_context: Option<String>,
    pub last_fingerprint: Option<String>,
    /// `running`, a run's final status, or `failed: why` / `error: why`.
    pub last_status: Option<String>,
    pub last_reason: Option<String>,
    /// Remote targets as JSON (`RemoteSpec`); `None`: the runs evaluate here.
    pub remote: Option<String>,
}

#[derive(Debug, Clone, FromRow)]
pub struct SampleRow {
    pub round: i64,
    /// `None` for a sample recorded before runs.db named the series.
    pub series: Option<Series>,
    pub side: SampleSide,
    pub case_name: String,
    pub value: f64,
}

/// The machine's state when one bench process started.
#[derive(Debug, Clone, FromRow, PartialEq)]
pub struct StateRow {
    pub round: i64,
    pub side: SampleSide,
    pub state: String,
}

/// One sample of a parameter assignment, for the model-based search (`Store::params_samples`).
#[derive(Debug, Clone, FromRow)]
pub struct ParamsSampleRow {
    pub id: i64,
    pub payload: String,
    pub origin: String,
    pub side: Option<SampleSide>,
    pub case_name: Option<String>,
    pub value: Option<f64>,
}

/// An accepted entry as the history digest quotes it.
#[derive(Debug, Clone, FromRow)]
pub struct WinRow {
    pub id: i64,
    pub context_id: String,
    pub gain: f64,
    pub gain_low: f64,
    pub gain_high: f64,
    pub origin: String,
    pub note: Option<String>,
    pub diff: Option<String>,
}

/// A recent candidate that did not get in, as the history digest quotes it.
#[derive(Debug, Clone, FromRow)]
pub struct LossRow {
    pub id: i64,
    pub verdict: Verdict,
    pub stage: Stage,
    pub reason: String,
    pub origin: String,
}

/// One sample of an evaluation: which pair, which side, which case, the value.
#[derive(Debug, Clone)]
pub struct NewSample {
    pub round: i64,
    pub series: Series,
    pub side: SampleSide,
    pub case: String,
    pub value: f64,
}

/// A candidate and its evaluation, as written in one transaction.
#[derive(Debug, Clone)]
pub struct NewEvaluation {
    pub run_id: i64,
    pub seq: i64,
    pub task: String,
    pub context_id: String,
    pub proposer: ProposerKind,
    pub origin: String,
    pub note: Option<String>,
    pub kind: ChangeKind,
    pub payload: String,
    pub params_key: Option<String>,
    pub diff: Option<String>,
    pub parent_entry_id: Option<i64>,
    pub verdict: Verdict,
    pub reason: String,
    pub stage: Stage,
    pub gain: Option<Interval>,
    pub incumbent_score: Option<f64>,
    pub candidate_score: Option<f64>,
    pub pairs: i64,
    pub bench_seconds: f64,
    pub process_seconds: f64,
    pub overhead_ms: f64,
    pub log: Option<String>,
    pub samples: Vec<NewSample>,
    /// The machine's state at each bench process that recorded one: (round, side, state).
    pub states: Vec<StateRow>,
    pub usage: Option<proposers::Usage>,
}

/// The ledger entry of an accepted candidate, written with its evaluation.
#[derive(Debug, Clone)]
pub struct NewEntry {
    pub branch: String,
    pub commit_sha: String,
    pub score: Option<f64>,
    pub params: Option<String>,
}

/// How many candidates of a run got each verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, FromRow)]
pub struct VerdictCounts {
    #[sqlx(rename = "n_accepted")]
    pub accepted: i64,
    #[sqlx(rename = "n_rejected")]
    pub rejected: i64,
    #[sqlx(rename = "n_failed")]
    pub failed: i64,
    #[sqlx(rename = "n_quarantined")]
    pub quarantined: i64,
    /// The contenders the model search's race held after their screen.
    #[sqlx(rename = "n_held")]
    pub held: i64,
}

impl VerdictCounts {
    pub fn get(&self, verdict: Verdict) -> i64 {
        match verdict {
            Verdict::Accepted => self.accepted,
            Verdict::Rejected => self.rejected,
            Verdict::Held => self.held,
            Verdict::Failed => self.failed,
            Verdict::Quarantined => self.quarantined,
        }
    }

    pub fn total(&self) -> i64 {
        self.accepted + self.rejected + self.held + self.failed + self.quarantined
    }
}

/// What the model cost a run.
#[derive(Debug, Clone, Copy, Default, FromRow)]
pub struct RunUsage {
    /// Prompt and completion tokens.
    #[sqlx(rename = "model_tokens")]
    pub tokens: i64,
    #[sqlx(rename = "model_requests")]
    pub requests: i64,
    pub prompt_tokens: i64,
}
