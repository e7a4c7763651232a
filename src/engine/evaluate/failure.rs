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

/// The last `cap` bytes of `text` (cut at a character boundary).
pub fn tail(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    let mut start = text.len() - cap;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}
