//! Why a candidate did not get through: the stage it stopped at, a reason a person can read, and
//! the output that shows it.

use crate::record::Stage;

/// Why a candidate did not get through, with the output that shows it.
#[derive(Debug, Clone)]
pub struct Failure {
    pub stage: Stage,
    pub reason: String,
    pub log: Option<String>,
}

impl Failure {
    pub fn new(stage: Stage, reason: impl Into<String>) -> Self {
        Failure {
            stage,
            reason: reason.into(),
            log: None,
        }
    }
}
