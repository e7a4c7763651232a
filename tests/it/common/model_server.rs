//! A real HTTP server on loopback that speaks the chat-completions protocol, scripted turn by
//! turn (tool calls, plain text, errors, delays), recording what polymorph sent, and the call
//! that runs the agent against it.

use super::Env;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const KEY: &str = "sk-polymorph-test-key-7f3a";

/// One scripted answer.
pub struct Turn {
    pub status: u16,
    pub headers: Vec<(&'static str, &'static str)>,
    pub body: String,
    pub delay: Duration,
}

/// What the server saw.
pub struct Seen {
    pub at: Instant,
    pub authorization: Option<String>,
    pub body: Value,
    pub raw: String,
}

#[derive(Default)]
pub struct Fake {
    pub script: Mutex<VecDeque<Turn>>,
    pub seen: Mutex<Vec<Seen>>,
    pub in_flight: std::sync::atomic::AtomicUsize,
    pub max_in_flight: std::sync::atomic::AtomicUsize,
}

async fn chat(State(fake): State<Arc<Fake>>, headers: HeaderMap, body: Bytes) -> Response {
    let raw = String::from_utf8_lossy(&body).into_owned();
    fake.seen.lock().unwrap().push(Seen {
        at: Instant::now(),
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        body: serde_json::from_str(&raw).unwrap_or(Value::Null),
        raw,
    });
    let turn = fake.script.lock().unwrap().pop_front();
    let Some(turn) = turn else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "script exhausted").into_response();
    };
    use std::sync::atomic::Ordering::SeqCst;
    let now = fake.in_flight.fetch_add(1, SeqCst) + 1;
    fake.max_in_flight.fetch_max(now, SeqCst);
    tokio::time::sleep(turn.delay).await;
    fake.in_flight.fetch_sub(1, SeqCst);
    let mut resp = (StatusCode::from_u16(turn.status).unwrap(), turn.body).into_response();
    resp.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    for (k, v) in turn.headers {
        resp.headers_mut().insert(k, v.parse().unwrap());
    }
    resp
}

/// Starts the server on 127.0.0.1 in a thread of its own; returns its base URL.
pub fn serve(script: Vec<Turn>) -> (String, Arc<Fake>) {
    let fake = Arc::new(Fake {
        script: Mutex::new(script.into()),
        ..Fake::default()
    });
    let app = Router::new()
        .route("/v1/chat/completions", axum::routing::post(chat))
        .with_state(Arc::clone(&fake));
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    std_listener.set_nonblocking(true).unwrap();
    let port = std_listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    (format!("http://127.0.0.1:{port}/v1"), fake)
}

pub fn ok(body: Value) -> Turn {
    Turn {
        status: 200,
        headers: vec![],
        body: body.to_string(),
        delay: Duration::ZERO,
    }
}

pub fn tool(name: &str, args: Value) -> Turn {
    tool_raw(name, &args.to_string())
}

pub fn tool_raw(name: &str, arguments: &str) -> Turn {
    ok(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "fake",
        "choices": [{ "index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{ "id": format!("call-{name}"), "type": "function", "function": { "name": name, "arguments": arguments } }]
        } }],
        "usage": { "prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120 }
    }))
}

pub fn text(content: &str) -> Turn {
    ok(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "fake",
        "choices": [{ "index": 0, "finish_reason": "stop", "message": { "role": "assistant", "content": content } }],
        "usage": { "prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120 }
    }))
}

pub fn agent_run(env: &Env, url: &str, task: &std::path::Path, extra: &[&str]) -> Value {
    let out = env
        .cmd()
        .env("OPENAI_BASE_URL", url)
        .env("OPENAI_API_KEY", KEY)
        .env("POLYMORPH_MODEL", "fake-coder")
        .args([
            "run",
            task.to_str().unwrap(),
            "--proposer",
            "agent",
            "--json",
        ])
        .args(if extra.contains(&"--budget") {
            &[][..]
        } else {
            &["--budget", "1"][..]
        })
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains(KEY), "the key reached stderr");
    serde_json::from_slice(&out.stdout).unwrap()
}

pub fn tool_messages(seen: &Seen) -> Vec<String> {
    seen.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool" || m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}
