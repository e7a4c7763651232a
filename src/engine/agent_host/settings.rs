//! The agent's settings: the endpoint, key and model from the environment as every
//! OpenAI-compatible client names them, and the flags of `run` and `schedule`.

use anyhow::{Result, bail};
use proposers::llm::Protocol;
use std::sync::OnceLock;
use std::time::Duration;

/// Environment variables, as every OpenAI-compatible client names them.
pub const ENV_BASE_URL: &str = "OPENAI_BASE_URL";
pub const ENV_API_KEY: &str = "OPENAI_API_KEY";
pub const ENV_MODEL: &str = "POLYMORPH_MODEL";

/// Model used when none is named: any server maps or rejects it with a clear message.
const DEFAULT_MODEL: &str = "gpt-4o-mini";
/// Base URL when only a key is configured.
const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// A streaming server that sends nothing for this long has hung: even a CPU server produces a
/// token every fraction of a second once it has started.
const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// One proposal's wall-clock limit: a small model on a CPU gets a few requests and builds in it,
/// and a run of five candidates stays within the hour.
const DEFAULT_PROPOSAL_TIME: Duration = Duration::from_secs(600);

#[derive(Debug, Clone)]
pub struct AgentSettings {
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    pub protocol: Protocol,
    /// How long a request may wait for the model's first token.
    pub request_timeout: Duration,
    /// The longest pause in a streamed reply before the server counts as hung.
    pub idle_timeout: Duration,
    /// Wall-clock time one proposal may take; a conversation cut by it submits the last
    /// version that built and passed.
    pub proposal_time: Duration,
    pub max_turns: usize,
    pub max_tokens_per_proposal: u64,
    /// Tokens for the whole run; the agent stops proposing past it.
    pub token_budget: u64,
    pub temperature: f64,
    /// Conversations run at once when the agent needs new proposals.
    pub concurrency: usize,
    /// The model's context window in tokens (`--context-window`, else what the server's
    /// /v1/models says); a small one gets a compact first prompt.
    pub context_window: Option<u64>,
}

/// The API key, once the binary has taken it out of its own environment (`keep_api_key`), so
/// that no process polymorph starts can read it there or in `/proc/PID/environ`.
static API_KEY: OnceLock<Option<String>> = OnceLock::new();

/// Keeps the API key the binary took out of its environment; the first call wins.
pub fn keep_api_key(key: Option<String>) {
    let _ = API_KEY.set(key);
}

/// The API key: the one kept, else (in a library user that kept none) the environment's.
fn api_key() -> Option<String> {
    match API_KEY.get() {
        Some(kept) => kept.clone(),
        None => std::env::var(ENV_API_KEY).ok().filter(|v| !v.is_empty()),
    }
}

impl AgentSettings {
    /// Whether an endpoint is configured (what `--proposer auto` checks).
    pub fn configured() -> bool {
        api_key().is_some() || std::env::var(ENV_BASE_URL).is_ok_and(|v| !v.is_empty())
    }

    pub fn from_env(
        model: Option<String>,
        protocol: &str,
        request_timeout_s: u64,
        token_budget: u64,
        concurrency: usize,
    ) -> Result<Self> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let base_url = env(ENV_BASE_URL).unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        let Some(protocol) = Protocol::parse(protocol) else {
            bail!("--agent-protocol {protocol:?}: expected tools, text, whole-file or focused");
        };
        if request_timeout_s == 0 {
            bail!("--request-timeout must be at least 1 second");
        }
        Ok(AgentSettings {
            base_url,
            api_key: api_key(),
            model: model
                .or_else(|| env(ENV_MODEL))
                .unwrap_or_else(|| DEFAULT_MODEL.to_string()),
            protocol,
            request_timeout: Duration::from_secs(request_timeout_s),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            proposal_time: DEFAULT_PROPOSAL_TIME,
            max_turns: 24,
            max_tokens_per_proposal: 200_000,
            token_budget,
            temperature: 0.2,
            concurrency: concurrency.max(1),
            context_window: None,
        })
    }
}
