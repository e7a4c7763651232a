//! The model client: chat completions on any OpenAI-compatible server (OpenAI, Together, vLLM,
//! SGLang, llama.cpp, Ollama) through async-openai with JSON in and out, so servers' small
//! differences (arguments as a string or an object, missing usage) are tolerated. async-openai
//! retries 429 and 5xx honouring Retry-After; this layer adds a request timeout and retries, with
//! jittered backoff, what that does not: timeouts, dropped connections and truncated bodies.

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Retries after a timeout, a transport error or an unreadable body.
const TRANSIENT_RETRIES: u32 = 3;
/// First backoff; doubled each retry, plus up to as much again of jitter.
const BACKOFF_START: Duration = Duration::from_millis(200);

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("the prompt is longer than the model's context: {0}")]
    ContextLength(String),
    #[error("the model server refused the request: {0}")]
    Refused(String),
    #[error("the model server did not answer usably after {attempts} attempts: {last}")]
    Unavailable { attempts: u32, last: String },
}

/// One tool call in a reply.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as JSON text (as the model wrote them, possibly invalid).
    pub arguments: String,
}

/// A reply: text, tool calls, and what it cost.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    /// The assistant message as the server sent it, to append to the conversation.
    pub message: Value,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub latency: Duration,
    pub requests: u64,
}

pub struct ModelClient {
    client: Client<OpenAIConfig>,
    pub model: String,
}

fn redact(text: &str, secret: Option<&str>) -> String {
    match secret.filter(|s| !s.is_empty()) {
        Some(s) => text.replace(s, "[redacted]"),
        None => text.to_string(),
    }
}

impl ModelClient {
    /// `base_url` like `http://127.0.0.1:8000/v1`; the key goes only into the Authorization header.
    pub fn new(
        base_url: &str,
        api_key: Option<&str>,
        model: &str,
        timeout: Duration,
    ) -> Result<Self, ModelError> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| ModelError::Refused(format!("building the HTTP client: {e}")))?;
        let mut config = OpenAIConfig::new().with_api_base(base_url.trim_end_matches('/'));
        config = config.with_api_key(api_key.unwrap_or_default());
        Ok(ModelClient {
            client: Client::with_config(config).with_http_client(http),
            model: model.to_string(),
        })
    }

    /// Sends one chat-completions request (`body` without "model"; it is added here).
    pub async fn chat(&self, body: &Value, api_key: Option<&str>) -> Result<Reply, ModelError> {
        let mut body = body.clone();
        body["model"] = Value::from(self.model.clone());
        body["stream"] = Value::from(false);
        let started = Instant::now();
        let mut last = String::new();
        let mut backoff = BACKOFF_START;
        for attempt in 1..=TRANSIENT_RETRIES + 1 {
            let result: Result<Value, OpenAIError> = self.client.chat().create_byot(&body).await;
            match result {
                Ok(v) => match parse_reply(&v) {
                    Some(mut reply) => {
                        reply.latency = started.elapsed();
                        reply.requests = u64::from(attempt);
                        return Ok(reply);
                    }
                    None => {
                        last = format!("no choices in the reply: {}", truncate(&v.to_string(), 200))
                    }
                },
                Err(OpenAIError::ApiError(e)) => {
                    let msg = redact(&e.to_string(), api_key);
                    let lower = msg.to_ascii_lowercase();
                    if lower.contains("context_length")
                        || lower.contains("context length")
                        || lower.contains("maximum context")
                    {
                        return Err(ModelError::ContextLength(msg));
                    }
                    // 429 and 5xx were already retried by async-openai; other statuses are final.
                    return Err(ModelError::Refused(msg));
                }
                Err(OpenAIError::InvalidArgument(m)) => {
                    return Err(ModelError::Refused(redact(&m, api_key)));
                }
                Err(e) => last = redact(&e.to_string(), api_key),
            }
            if attempt <= TRANSIENT_RETRIES {
                let jitter =
                    Duration::from_millis(rand::random::<u64>() % (backoff.as_millis() as u64 + 1));
                tracing::warn!(attempt, error = %last, "model request failed; retrying");
                tokio::time::sleep(backoff + jitter).await;
                backoff *= 2;
            }
        }
        Err(ModelError::Unavailable {
            attempts: TRANSIENT_RETRIES + 1,
            last,
        })
    }
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// Reads the first choice of a chat-completions response.
fn parse_reply(v: &Value) -> Option<Reply> {
    let message = v.get("choices")?.get(0)?.get("message")?.clone();
    let content = message
        .get("content")
        .and_then(Value::as_str)
        .map(str::to_string);
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .enumerate()
                .map(|(i, c)| ToolCall {
                    id: c
                        .get("id")
                        .and_then(Value::as_str)
                        .map_or_else(|| format!("call_{i}"), str::to_string),
                    name: c
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    arguments: match c.pointer("/function/arguments") {
                        Some(Value::String(s)) => s.clone(),
                        Some(other) => other.to_string(),
                        None => String::new(),
                    },
                })
                .collect()
        })
        .unwrap_or_default();
    let usage = v.get("usage");
    let tokens = |k: &str| usage.and_then(|u| u.get(k)).and_then(Value::as_u64);
    let estimate = (content.as_deref().map_or(0, str::len) / 4) as u64;
    Some(Reply {
        content,
        tool_calls,
        message,
        prompt_tokens: tokens("prompt_tokens").unwrap_or(0),
        completion_tokens: tokens("completion_tokens").unwrap_or(estimate),
        latency: Duration::ZERO,
        requests: 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tool_calls_with_string_or_object_arguments() {
        let v = serde_json::json!({
            "choices": [{ "message": { "role": "assistant", "content": null, "tool_calls": [
                { "id": "a", "type": "function", "function": { "name": "read_file", "arguments": "{\"path\": \"k.c\"}" } },
                { "id": "b", "type": "function", "function": { "name": "submit", "arguments": { "rationale": "x" } } }
            ] } }],
            "usage": { "prompt_tokens": 10, "completion_tokens": 5 }
        });
        let r = parse_reply(&v).unwrap_or_default();
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[1].arguments, "{\"rationale\":\"x\"}");
        assert_eq!((r.prompt_tokens, r.completion_tokens), (10, 5));
        assert!(parse_reply(&serde_json::json!({ "choices": [] })).is_none());
    }

    #[test]
    fn secrets_are_redacted() {
        assert_eq!(
            redact("bad key sk-123", Some("sk-123")),
            "bad key [redacted]"
        );
    }
}
