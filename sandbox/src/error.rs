//! Errors of the sandbox crate: each says what was refused and why, in words a person can act on.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("path {path:?} is not allowed: {why}")]
    BadPath { path: String, why: &'static str },
    #[error("touches protected file {0}")]
    Protected(String),
    #[error("{path}: {why}")]
    TooLarge { path: String, why: String },
    #[error("{0}: binary content is not accepted")]
    Binary(String),
    #[error(
        "{path}: line {line} holds {what}, a character a reviewer does not see as it runs (control and invisible format characters are refused)"
    )]
    Hidden {
        path: String,
        line: usize,
        what: String,
    },
    #[error("diff is malformed: {0}")]
    MalformedDiff(String),
    #[error("diff does not apply to {path}: {why}")]
    DoesNotApply { path: String, why: String },
    #[error("change is empty: it touches no file")]
    Empty,
    #[error("protected file {0} changed on disk (hash mismatch)")]
    HashMismatch(String),
    #[error("the built tree changed after the build: {0}")]
    Tampered(String),
    #[error("protected file {0} is missing")]
    Missing(String),
    #[error("{path}: {why}")]
    SpecialFile { path: PathBuf, why: &'static str },
    #[error("{path} is not an object file polymorph can read: {why}")]
    BadObject { path: String, why: String },
    #[error("parameter {name}: {why}")]
    Param { name: String, why: String },
    /// bwrap gave up before the command ran: the machine's doing, not the command's.
    #[error("the sandbox could not start the command (bwrap: {0})")]
    NotStarted(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl SandboxError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        SandboxError::Io {
            context: context.into(),
            source,
        }
    }
}
