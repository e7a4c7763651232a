//! One chat-completions request over HTTP, streamed. With `"stream": true` a server sends the
//! reply as it generates it (server-sent events), so a hung server is told from a slow one: the
//! first token (content or a tool call: a server that sends the role at once and then reads a
//! cold prompt for a minute has not started) must come within the first-byte limit, and each
//! later event within the idle limit. A reply that starts looping (the same stretch of text over
//! and over) is cut there: the connection is closed, which tells the server to stop. A server
//! that answers with plain JSON instead is read whole under the first-byte limit. The events are
//! assembled into the JSON a non-streamed reply would have been (`finish_reason` "repetition"
//! for a cut one), so the rest of the agent sees one shape.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::timeout;

/// Why one attempt failed.
#[derive(Debug)]
pub enum AttemptError {
    /// The server answered with an error status.
    Status {
        code: u16,
        /// `Retry-After` in seconds, when given.
        retry_after: Option<u64>,
        message: String,
    },
    /// A dropped connection, a stalled stream, a truncated or unreadable body.
    Transient(String),
    /// Nothing generated within the first-byte limit: a hung server, or a slow one reading a
    /// long prompt (or writing a whole reply before it sends any of it).
    Silent(String),
}

/// The time limits of one attempt.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub first_byte: Duration,
    pub idle: Duration,
}

/// The error message of an error body (`{"error": {"message": ...}}`), else the text itself.
fn error_message(text: &str) -> String {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("error"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| text.chars().take(500).collect())
}

/// Sends `body` and returns the reply as non-streamed JSON.
pub async fn attempt(
    http: &reqwest::Client,
    url: &str,
    api_key: Option<&str>,
    body: &Value,
    limits: Limits,
) -> Result<Value, AttemptError> {
    let mut req = http
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string());
    if let Some(key) = api_key.filter(|k| !k.is_empty()) {
        req = req.bearer_auth(key);
    }
    let no_answer = || {
        AttemptError::Silent(format!(
            "no answer within {}s",
            limits.first_byte.as_secs_f64()
        ))
    };
    let started = tokio::time::Instant::now();
    let mut resp = timeout(limits.first_byte, req.send())
        .await
        .map_err(|_| no_answer())?
        .map_err(|e| AttemptError::Transient(format!("sending the request: {e}")))?;
    let status = resp.status();
    let event_stream = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    if !status.is_success() || !event_stream {
        let left = limits.first_byte.saturating_sub(started.elapsed());
        return read_whole(resp, left).await;
    }
    let mut events = Events::default();
    let mut buf = String::new();
    loop {
        let limit = if events.generating {
            limits.idle
        } else {
            limits.first_byte.saturating_sub(started.elapsed())
        };
        let chunk = timeout(limit, resp.chunk()).await.map_err(|_| {
            if events.generating {
                AttemptError::Transient(format!(
                    "the stream stalled for {}s",
                    limits.idle.as_secs_f64()
                ))
            } else {
                AttemptError::Silent(format!(
                    "no token within {}s",
                    limits.first_byte.as_secs_f64()
                ))
            }
        })?;
        let chunk =
            chunk.map_err(|e| AttemptError::Transient(format!("reading the stream: {e}")))?;
        let Some(bytes) = chunk else {
            return Err(AttemptError::Transient(
                "the stream ended before [DONE]".into(),
            ));
        };
        buf.push_str(&String::from_utf8_lossy(&bytes));
        while let Some(n) = buf.find('\n') {
            let line: String = buf.drain(..=n).collect();
            if let Some(done) = events.line(line.trim()) {
                return Ok(done);
            }
        }
        if events.looping() {
            // Returning drops the response: the connection closes and the server stops.
            return Ok(events.reply());
        }
    }
}

/// A reply that is not a stream (an error, or a server that ignores `"stream"`), read whole
/// within `left`.
async fn read_whole(resp: reqwest::Response, left: Duration) -> Result<Value, AttemptError> {
    let status = resp.status();
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok());
    let text = timeout(left, resp.text())
        .await
        .map_err(|_| AttemptError::Transient("no whole answer in time".into()))?
        .map_err(|e| AttemptError::Transient(format!("reading the reply: {e}")))?;
    if !status.is_success() {
        return Err(AttemptError::Status {
            code: status.as_u16(),
            retry_after,
            message: error_message(&text),
        });
    }
    serde_json::from_str(&text).map_err(|e| {
        AttemptError::Transient(format!(
            "the reply is not JSON ({e}): {}",
            text.chars().take(200).collect::<String>()
        ))
    })
}

/// A stretch of text repeated this many times in a row at the end of a reply is a loop.
const LOOP_REPEATS: usize = 6;
/// The shortest and longest stretch looked for, in characters: from a repeated short line to a
/// repeated paragraph.
const LOOP_PERIODS: std::ops::RangeInclusive<usize> = 8..=400;
/// The tail is looked at each time the reply grew by this much.
const LOOP_CHECK_EVERY: usize = 64;

/// The reply assembled from its events.
#[derive(Default)]
struct Events {
    /// A content or tool-call token has come: the model is generating.
    generating: bool,
    content: String,
    /// Characters of content when the tail was last looked at for a loop.
    checked_at: usize,
    /// Why the server stopped (`stop`, `length`, `tool_calls`), or `repetition` when cut here.
    finish_reason: Option<String>,
    /// Prompt tokens per second, as llama.cpp reports it (`timings`).
    prompt_per_second: Option<f64>,
    /// By index: id, name, arguments.
    calls: BTreeMap<u64, (String, String, String)>,
    usage: Option<Value>,
}

impl Events {
    /// Takes one line of the stream; the whole reply at `[DONE]`.
    fn line(&mut self, line: &str) -> Option<Value> {
        let data = line.strip_prefix("data:")?.trim();
        if data == "[DONE]" {
            return Some(self.reply());
        }
        let Ok(v) = serde_json::from_str::<Value>(data) else {
            return None;
        };
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            self.usage = Some(u.clone());
        }
        if let Some(s) = v
            .pointer("/timings/prompt_per_second")
            .and_then(Value::as_f64)
        {
            self.prompt_per_second = Some(s);
        }
        if let Some(r) = v
            .pointer("/choices/0/finish_reason")
            .and_then(Value::as_str)
        {
            self.finish_reason = Some(r.to_string());
        }
        let delta = v.pointer("/choices/0/delta")?;
        if let Some(t) = delta.get("content").and_then(Value::as_str) {
            self.generating |= !t.is_empty();
            self.content.push_str(t);
        }
        self.generating |= delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty());
        for (k, c) in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let index = c.get("index").and_then(Value::as_u64).unwrap_or(k as u64);
            let slot = self.calls.entry(index).or_default();
            if let Some(id) = c.get("id").and_then(Value::as_str) {
                slot.0 = id.to_string();
            }
            if let Some(name) = c.pointer("/function/name").and_then(Value::as_str) {
                slot.1.push_str(name);
            }
            match c.pointer("/function/arguments") {
                Some(Value::String(a)) => slot.2.push_str(a),
                Some(other) if !other.is_null() => slot.2.push_str(&other.to_string()),
                _ => {}
            }
        }
        None
    }

    /// Whether the content ends in a loop: its last stretch of some length repeated
    /// `LOOP_REPEATS` times in a row. Marks the reply as cut when it does.
    fn looping(&mut self) -> bool {
        if self.content.len() < self.checked_at + LOOP_CHECK_EVERY {
            return false;
        }
        self.checked_at = self.content.len();
        let tail = self.content.as_bytes();
        let looped = LOOP_PERIODS.into_iter().any(|p| {
            let span = p * LOOP_REPEATS;
            span <= tail.len() && {
                let end = &tail[tail.len() - span..];
                end.chunks(p).all(|c| c == &end[..p])
            }
        });
        if looped {
            self.finish_reason = Some("repetition".into());
        }
        looped
    }

    fn reply(&self) -> Value {
        let mut message = json!({ "role": "assistant", "content": (!self.content.is_empty()).then(|| self.content.clone()) });
        if !self.calls.is_empty() {
            message["tool_calls"] = self
                .calls
                .iter()
                .map(|(i, (id, name, args))| {
                    let id = if id.is_empty() { format!("call_{i}") } else { id.clone() };
                    json!({ "id": id, "type": "function", "function": { "name": name, "arguments": args } })
                })
                .collect();
        }
        let mut reply = json!({ "choices": [{ "index": 0, "message": message, "finish_reason": self.finish_reason }] });
        if let Some(u) = &self.usage {
            reply["usage"] = u.clone();
        }
        if let Some(s) = self.prompt_per_second {
            reply["timings"] = json!({ "prompt_per_second": s });
        }
        reply
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_assemble_content_and_tool_calls() {
        let mut e = Events::default();
        let lines = [
            r#"data: {"choices":[{"delta":{"role":"assistant","content":"Reading "}}]}"#,
            r#"data: {"choices":[{"delta":{"content":"first."}}]}"#,
            r#"data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}"#,
            r#"data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\": \"k.c\"}"}}]}}]}"#,
            r#"data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}"#,
            ": a comment line",
        ];
        for l in lines {
            assert!(e.line(l).is_none());
        }
        let v = e.line("data: [DONE]").unwrap_or_default();
        assert_eq!(
            v.pointer("/choices/0/message/content"),
            Some(&json!("Reading first."))
        );
        assert_eq!(
            v.pointer("/choices/0/message/tool_calls/0/function/arguments"),
            Some(&json!("{\"path\": \"k.c\"}"))
        );
        assert_eq!(v.pointer("/usage/prompt_tokens"), Some(&json!(7)));
    }

    #[test]
    fn the_role_alone_starts_nothing_and_a_loop_is_cut() {
        let mut e = Events::default();
        e.line(r#"data: {"choices":[{"delta":{"role":"assistant"}}]}"#);
        assert!(!e.generating, "a role chunk is not a token");
        e.line(r#"data: {"choices":[{"delta":{"content":"I will read params.h first.\n"}}]}"#);
        assert!(e.generating);
        assert!(!e.looping());
        for _ in 0..12 {
            e.line(r#"data: {"choices":[{"delta":{"content":"obj['kernel_c']\n"}}]}"#);
        }
        assert!(e.looping());
        let v = e.reply();
        assert_eq!(
            v.pointer("/choices/0/finish_reason"),
            Some(&json!("repetition"))
        );
        // Prose that varies is never cut, however long.
        let mut prose = Events::default();
        for k in 0..200 {
            prose
                .content
                .push_str(&format!("step {k}: tile the loop by {} ", k * 7 % 13));
            assert!(!prose.looping(), "{}", prose.content);
        }
    }

    #[test]
    fn error_bodies_give_their_message() {
        assert_eq!(
            error_message(r#"{"error": {"message": "slow down"}}"#),
            "slow down"
        );
        assert_eq!(error_message("plain"), "plain");
    }
}
