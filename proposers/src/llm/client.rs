//! The model client: chat completions on any OpenAI-compatible server (OpenAI, Together, vLLM,
//! SGLang, llama.cpp, Ollama), streamed (see `stream`), with JSON in and out so servers' small
//! differences (arguments as a string or an object, missing usage) are tolerated. 429 and 5xx
//! answers are retried honouring `Retry-After`; a server silent past the first-byte limit, a
//! stream stalled past the idle limit, a dropped connection or a truncated body are retried with
//! jittered backoff; a request in flight is dropped at once when the run is interrupted.

use super::stream::{self, AttemptError};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Attempts for one request, the first included: enough to ride out a rate limit, a server
/// error and a dropped connection in a row.
const MAX_ATTEMPTS: u32 = 6;
/// First backoff; doubled each retry, plus up to as much again of jitter.
const BACKOFF_START: Duration = Duration::from_millis(200);
/// Characters per token assumed by the estimate: fewer than tokenizers manage on code and
/// prose, so an estimated prompt is never smaller than the real one.
pub const CHARS_PER_TOKEN: usize = 3;
/// The first-byte limit doubles after each attempt that got nothing, up to this many times it.
const MAX_STRETCH: u32 = 8;
/// Longest `Retry-After` honoured; a longer one is waited this long.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("the prompt is longer than the model's context: {0}")]
    ContextLength(String),
    #[error("the model server refused the request: {0}")]
    Refused(String),
    #[error("the model server did not answer usably after {attempts} attempts: {last}")]
    Unavailable { attempts: u32, last: String },
    #[error("interrupted: the model request was abandoned")]
    Cancelled,
}

/// How often a waiting request looks at the cancel flag: Ctrl-C stops it within this.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// Resolves when `cancel` is set.
async fn cancelled(cancel: &super::host::Cancel) {
    while !cancel.load(std::sync::atomic::Ordering::SeqCst) {
        tokio::time::sleep(CANCEL_POLL).await;
    }
}

/// One tool call in a reply.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as JSON text (as the model wrote them, possibly invalid).
    pub arguments: String,
}

/// Why a reply ended before the model finished it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// It reached the reply cap (`finish_reason: "length"`).
    Cap,
    /// It started repeating itself and was cut here.
    Loop,
}

impl Cut {
    /// What happened, for the model and the log.
    pub fn said(self) -> &'static str {
        match self {
            Cut::Cap => "it reached the length cap of one reply",
            Cut::Loop => "it started repeating the same text over and over",
        }
    }
}

/// A reply: text, tool calls, and what it cost.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    /// Set when the reply was cut short.
    pub cut: Option<Cut>,
    /// The assistant message as the server sent it, to append to the conversation.
    pub message: Value,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub latency: Duration,
    pub requests: u64,
}

pub struct ModelClient {
    http: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    limits: stream::Limits,
    pub model: String,
    /// Prompt tokens per second the server last reported (llama.cpp's `timings`): with it,
    /// a long prompt gets the time it needs before its first token.
    prompt_speed: std::sync::Mutex<Option<f64>>,
    /// Set once the server turned out to have no `/tokenize`.
    no_tokenize: std::sync::atomic::AtomicBool,
    /// Set once the server refused a request for its `response_format`: later requests go
    /// without one, their answers checked as before.
    no_schemas: std::sync::atomic::AtomicBool,
}

/// How long a token count may take before the estimate is used instead.
const TOKENIZE_TIMEOUT: Duration = Duration::from_secs(10);

/// A prompt's expected reading time is multiplied by this before it counts as too slow.
const SLOW_PROMPT_SLACK: f64 = 2.0;

/// Fields servers use for a model's context length in `/v1/models`: vLLM, OpenRouter and
/// Together, others, and llama.cpp's `meta`.
const WINDOW_FIELDS: [&str; 5] = [
    "/max_model_len",
    "/context_length",
    "/context_window",
    "/meta/n_ctx",
    "/meta/n_ctx_train",
];

/// The context length `/v1/models` reports for `model` (or for its only model), if any.
fn window_in(models: &Value, model: &str) -> Option<u64> {
    let data = models.get("data")?.as_array()?;
    let entry = data
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (data.len() == 1).then(|| &data[0]))?;
    WINDOW_FIELDS
        .iter()
        .find_map(|f| entry.pointer(f).and_then(Value::as_u64))
}

fn redact(text: &str, secret: Option<&str>) -> String {
    match secret.filter(|s| !s.is_empty()) {
        Some(s) => text.replace(s, "[redacted]"),
        None => text.to_string(),
    }
}

impl ModelClient {
    /// `base_url` like `http://127.0.0.1:8000/v1`; the key goes only into the Authorization
    /// header. `first_byte`: how long a request may wait for the first token; `idle`: the
    /// longest pause in a streamed reply.
    pub fn new(
        base_url: &str,
        api_key: Option<&str>,
        model: &str,
        first_byte: Duration,
        idle: Duration,
    ) -> Result<Self, ModelError> {
        let http = reqwest::Client::builder()
            .connect_timeout(first_byte)
            .build()
            .map_err(|e| ModelError::Refused(format!("building the HTTP client: {e}")))?;
        Ok(ModelClient {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: api_key.map(str::to_string),
            limits: stream::Limits { first_byte, idle },
            model: model.to_string(),
            prompt_speed: std::sync::Mutex::new(None),
            no_tokenize: std::sync::atomic::AtomicBool::new(false),
            no_schemas: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The server's own count of `text`'s tokens (llama.cpp's `/tokenize`, beside `/v1`);
    /// `None` where it has none (asked once per run) or does not answer in time.
    pub async fn count_tokens(&self, text: &str) -> Option<u64> {
        use std::sync::atomic::Ordering::Relaxed;
        if self.no_tokenize.load(Relaxed) {
            return None;
        }
        let root = self.base_url.trim_end_matches("/v1");
        let mut req = self
            .http
            .post(format!("{root}/tokenize"))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(serde_json::json!({ "content": text }).to_string());
        if let Some(key) = self.api_key.as_deref().filter(|k| !k.is_empty()) {
            req = req.bearer_auth(key);
        }
        let counted = async {
            let resp = req.send().await.ok()?;
            if !resp.status().is_success() {
                self.no_tokenize.store(true, Relaxed);
                return None;
            }
            let v: Value = serde_json::from_str(&resp.text().await.ok()?).ok()?;
            let n = v.get("tokens").and_then(Value::as_array).map(Vec::len);
            if n.is_none() {
                self.no_tokenize.store(true, Relaxed);
            }
            n.map(|n| n as u64)
        };
        tokio::time::timeout(TOKENIZE_TIMEOUT, counted)
            .await
            .ok()
            .flatten()
    }

    /// The limits for one request: the first-byte limit stretched to twice the time the
    /// server's last reported speed says the prompt takes to read.
    fn limits_for(&self, body: &Value) -> stream::Limits {
        let speed = *self.prompt_speed.lock().unwrap_or_else(|p| p.into_inner());
        let Some(speed) = speed.filter(|s| *s > 0.0) else {
            return self.limits;
        };
        // Fewer characters a token than tokenizers manage: the wait errs long.
        let tokens = body.to_string().len() as f64 / CHARS_PER_TOKEN as f64;
        let reading = Duration::from_secs_f64((tokens / speed * SLOW_PROMPT_SLACK).min(86_400.0));
        stream::Limits {
            first_byte: self.limits.first_byte.max(reading),
            ..self.limits
        }
    }

    /// The model's context window as the server's `/v1/models` reports it; `None` when it
    /// says nothing (OpenAI, Ollama) or does not answer.
    pub async fn context_window(&self) -> Option<u64> {
        let mut req = self.http.get(format!("{}/models", self.base_url));
        if let Some(key) = self.api_key.as_deref().filter(|k| !k.is_empty()) {
            req = req.bearer_auth(key);
        }
        let text = req.send().await.ok()?.text().await.ok()?;
        window_in(&serde_json::from_str(&text).ok()?, &self.model)
    }

    /// Sends one chat-completions request (`body` without "model"; it is added here).
    /// Sends one chat-completions request (`body` without "model"; it is added here). Dropped
    /// at once when `cancel` is set: nothing half-done comes back.
    pub async fn chat(
        &self,
        body: &Value,
        api_key: Option<&str>,
        cancel: &super::host::Cancel,
    ) -> Result<Reply, ModelError> {
        let mut body = body.clone();
        body["model"] = Value::from(self.model.clone());
        body["stream"] = Value::from(true);
        body["stream_options"] = serde_json::json!({ "include_usage": true });
        if self.no_schemas.load(std::sync::atomic::Ordering::Relaxed) {
            drop_schema(&mut body);
        }
        let url = format!("{}/chat/completions", self.base_url);
        let started = Instant::now();
        let mut last = String::new();
        let mut backoff = BACKOFF_START;
        let mut stretch = 1;
        for attempt in 1..=MAX_ATTEMPTS {
            let mut limits = self.limits_for(&body);
            limits.first_byte *= stretch;
            let sent = stream::attempt(&self.http, &url, api_key, &body, limits);
            let result = tokio::select! {
                r = sent => r,
                () = cancelled(cancel) => return Err(ModelError::Cancelled),
            };
            let jitter =
                Duration::from_millis(rand::random::<u64>() % (backoff.as_millis() as u64 + 1));
            let mut wait = backoff + jitter;
            match result {
                Ok(v) => match parse_reply(&v) {
                    Some(mut reply) => {
                        if let Some(s) = v
                            .pointer("/timings/prompt_per_second")
                            .and_then(Value::as_f64)
                        {
                            *self.prompt_speed.lock().unwrap_or_else(|p| p.into_inner()) = Some(s);
                        }
                        reply.latency = started.elapsed();
                        reply.requests = u64::from(attempt);
                        return Ok(reply);
                    }
                    None => {
                        last = format!("no choices in the reply: {}", truncate(&v.to_string(), 200))
                    }
                },
                Err(AttemptError::Status {
                    code,
                    retry_after,
                    message,
                }) => {
                    let msg = redact(&message, api_key);
                    let lower = msg.to_ascii_lowercase();
                    if lower.contains("context_length")
                        || lower.contains("context length")
                        || lower.contains("maximum context")
                    {
                        return Err(ModelError::ContextLength(msg));
                    }
                    if code != 429 && code < 500 {
                        // A server that takes no `response_format` (or not this one) says so
                        // with a 400 or 422: asked again at once without it.
                        if drop_schema(&mut body) {
                            tracing::warn!(code, error = %msg, "the model server refused response_format; asking without it");
                            self.no_schemas
                                .store(true, std::sync::atomic::Ordering::Relaxed);
                            last = format!("{code}: {msg}");
                            continue;
                        }
                        return Err(ModelError::Refused(format!("{code}: {msg}")));
                    }
                    if let Some(s) = retry_after {
                        wait = Duration::from_secs(s).min(MAX_RETRY_AFTER);
                    }
                    last = format!("{code}: {msg}");
                }
                Err(AttemptError::Transient(e)) => last = redact(&e, api_key),
                Err(AttemptError::Silent(e)) => {
                    // A server that says nothing may be slow rather than hung (a one-slot CPU
                    // server still busy with the abandoned request, a reply buffered whole):
                    // the next attempt waits twice as long.
                    stretch = (stretch * 2).min(MAX_STRETCH);
                    last = redact(&e, api_key);
                }
            }
            if attempt < MAX_ATTEMPTS {
                tracing::warn!(attempt, error = %last, "model request failed; retrying");
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = cancelled(cancel) => return Err(ModelError::Cancelled),
                }
                backoff *= 2;
            }
        }
        Err(ModelError::Unavailable {
            attempts: MAX_ATTEMPTS,
            last,
        })
    }
}

/// Takes `response_format` out of a request body; whether it had one.
fn drop_schema(body: &mut Value) -> bool {
    body.as_object_mut()
        .and_then(|o| o.remove("response_format"))
        .is_some()
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// Reads the first choice of a chat-completions response.
fn parse_reply(v: &Value) -> Option<Reply> {
    let choice = v.get("choices")?.get(0)?;
    let message = choice.get("message")?.clone();
    let cut = match choice.get("finish_reason").and_then(Value::as_str) {
        Some("length") => Some(Cut::Cap),
        Some("repetition") => Some(Cut::Loop),
        _ => None,
    };
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
        cut,
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
    fn context_windows_as_servers_report_them() {
        let vllm = serde_json::json!({ "data": [{ "id": "m", "max_model_len": 32768 }] });
        assert_eq!(window_in(&vllm, "m"), Some(32768));
        let llama =
            serde_json::json!({ "data": [{ "id": "x.gguf", "meta": { "n_ctx_train": 8192 } }] });
        assert_eq!(window_in(&llama, "other"), Some(8192), "the only model");
        let openai = serde_json::json!({ "data": [{ "id": "a" }, { "id": "b" }] });
        assert_eq!(window_in(&openai, "a"), None);
    }

    #[test]
    fn a_long_prompt_gets_the_time_the_server_s_speed_says_it_needs() {
        let c = ModelClient::new(
            "http://127.0.0.1:1/v1",
            None,
            "m",
            Duration::from_secs(60),
            Duration::from_secs(60),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let body = serde_json::json!({ "messages": [{ "content": "x".repeat(30_000) }] });
        assert_eq!(c.limits_for(&body).first_byte, Duration::from_secs(60));
        // 10,000 tokens at 50 a second: 200 s before the first token, doubled.
        *c.prompt_speed.lock().unwrap_or_else(|p| p.into_inner()) = Some(50.0);
        let waits = c.limits_for(&body).first_byte.as_secs();
        assert!((400..=402).contains(&waits), "{waits}");
    }

    #[test]
    fn secrets_are_redacted() {
        assert_eq!(
            redact("bad key sk-123", Some("sk-123")),
            "bad key [redacted]"
        );
    }
}
