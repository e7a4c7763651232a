//! Errors of the proposers crate.

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("{file}:{line}: {why}")]
    Replay {
        file: String,
        line: usize,
        why: String,
    },
    #[error("reading {file}: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("parameter space: {0}")]
    Space(String),
    #[error("the model: {0}")]
    Model(String),
}
