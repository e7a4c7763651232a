//! Why a candidate did not get through: the stage it stopped at, a reason a person can read, the
//! output that shows it, and whose doing it was.

use crate::record::Stage;

/// Whose doing a failure was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Blame {
    /// What the candidate's tree (or the incumbent's, measured beside it) did.
    #[default]
    Candidate,
    /// The machine's: the sandbox could not start a command, twice. Nothing of the candidate
    /// ran, so nothing is charged to it: its run stops, resumable, without recording it.
    Harness,
}

/// Why a candidate did not get through, with the output that shows it.
#[derive(Debug, Clone)]
pub struct Failure {
    pub stage: Stage,
    pub reason: String,
    pub log: Option<String>,
    pub blame: Blame,
}

impl Failure {
    pub fn new(stage: Stage, reason: impl Into<String>) -> Self {
        Failure {
            stage,
            reason: reason.into(),
            log: None,
            blame: Blame::Candidate,
        }
    }

    /// The reason, when the machine and not the candidate is to blame.
    pub fn harness_fault(&self) -> Option<String> {
        (self.blame == Blame::Harness).then(|| self.reason.clone())
    }
}

/// A candidate's evaluation that the machine ended (`Blame::Harness`): its run stops as
/// interrupted, resumable, and the candidate is not recorded.
#[derive(Debug)]
pub struct HarnessFault {
    pub candidate: usize,
    pub why: String,
}

impl std::fmt::Display for HarnessFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "candidate {} was not evaluated: {}, on a second try too; that is the machine's doing, not the candidate's, so it was not recorded (run again to resume)",
            self.candidate, self.why
        )
    }
}

impl std::error::Error for HarnessFault {}
