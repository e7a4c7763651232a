//! The agent against slow and degenerate real models, streamed by hand from a one-slot server:
//! a server that sends the role at once and then reads its prompt for a while is slow, not hung;
//! a stream that stalls mid-reply is abandoned with its connection closed and retried; a reply
//! that loops is cut and not fed back whole; the same reply again is noticed like the same
//! error again.

use crate::common::Env;
use crate::common::model_server::{KEY, agent_run, serve, text, tool};
use crate::common::raw_server::{HEAD, raw_server, sse};
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// A streamed tool call of `name` with `args`, in two events, with usage, to the end.
fn call(name: &str, args: &str) -> String {
    let events = vec![
        json!({ "choices": [{ "delta": { "tool_calls": [{ "index": 0, "id": "c1", "function": { "name": name, "arguments": "" } }] } }] }),
        json!({ "choices": [{ "delta": { "tool_calls": [{ "index": 0, "function": { "arguments": args } }] } }] }),
        json!({ "choices": [], "usage": { "prompt_tokens": 50, "completion_tokens": 9 } }),
    ];
    sse(&events) + "data: [DONE]\n\n"
}

const WRITE: &str = "{\"path\": \"params.h\", \"content\": \"#define PAD_PERMILLE 0\\n\"}";
const SUBMIT: &str = "{\"rationale\": \"no wasted steps\"}";

/// Told, so that no `/v1/models` request takes one of the server's scripted replies.
const WINDOW: &str = "--context-window";

/// The role chunk servers send before they have read the prompt.
fn role() -> String {
    sse(&[json!({ "choices": [{ "delta": { "role": "assistant" } }] })])
}

/// The run's one candidate is the agent's edit, submitted and judged (accepted or refused: the
/// judge's verdict on a loaded machine is not what these tests are about).
fn assert_submitted(env: &Env, report: &Value) {
    assert_eq!(report["candidates"], 1, "{report}");
    let c = &env.json(&[
        "query",
        "SELECT c.payload, e.verdict FROM candidates c JOIN evaluations e ON e.candidate_id = c.id",
    ])[0];
    assert!(
        c["payload"].as_str().unwrap().contains("PAD_PERMILLE 0"),
        "{c}"
    );
    assert!(
        c["verdict"] == "accepted" || c["verdict"] == "rejected",
        "{c}"
    );
}

fn now(reply: String) -> (String, Duration, String) {
    (format!("{HEAD}{reply}"), Duration::ZERO, String::new())
}

#[test]
fn a_stalled_stream_is_abandoned_with_its_connection_closed_and_retried() {
    let env = Env::new();
    let task = env.task("spin");
    let write = call("write_file", WRITE);
    let (first_half, second_half) = write.split_at(write.len() / 2);
    let (url, raw) = raw_server(vec![
        // Starts, then goes silent past the idle limit: abandoned and sent again.
        (
            format!("{HEAD}{first_half}"),
            Duration::from_secs(5),
            second_half.to_string(),
        ),
        now(write.clone()),
        now(call("submit", SUBMIT)),
    ]);
    let started = Instant::now();
    let report = agent_run(&env, &url, &task, &[WINDOW, "8192", "--idle-timeout", "1"]);
    assert_submitted(&env, &report);
    assert_eq!(raw.requests.load(Ordering::SeqCst), 3);
    assert_eq!(
        raw.hung_up.load(Ordering::SeqCst),
        1,
        "the abandoned request's connection was closed, so the server could stop it"
    );
    let c = &env.json(&["query", "SELECT prompt_tokens FROM candidates"])[0];
    assert_eq!(
        c["prompt_tokens"], 100,
        "usage from the streams' last events"
    );
    assert!(started.elapsed() < Duration::from_secs(120));
}

#[test]
fn a_server_reading_its_prompt_after_the_role_chunk_is_slow_not_hung() {
    let env = Env::new();
    let task = env.task("spin");
    // The role at once, then three seconds of reading the prompt: three times the idle limit,
    // well within the first-token limit.
    let (url, raw) = raw_server(vec![
        (
            format!("{HEAD}{}", role()),
            Duration::from_secs(3),
            call("write_file", WRITE),
        ),
        now(call("submit", SUBMIT)),
    ]);
    let report = agent_run(&env, &url, &task, &[WINDOW, "8192", "--idle-timeout", "1"]);
    assert_submitted(&env, &report);
    assert_eq!(
        raw.requests.load(Ordering::SeqCst),
        2,
        "nothing was retried"
    );
    assert_eq!(raw.hung_up.load(Ordering::SeqCst), 0);
}

#[test]
fn a_looping_reply_is_cut_and_goes_back_as_its_first_lines_and_a_sentence() {
    let env = Env::new();
    let task = env.task("spin");
    let mut events = vec![json!({ "choices": [{ "delta": { "role": "assistant" } }] })];
    events.push(json!({ "choices": [{ "delta": { "content": "Let me look at the kernel.\n" } }] }));
    for _ in 0..60 {
        events.push(json!({ "choices": [{ "delta": { "content": "obj['kernel_c']\n" } }] }));
    }
    // The loop would go on for a minute: it is cut long before.
    let (url, raw) = raw_server(vec![
        (
            format!("{HEAD}{}", sse(&events)),
            Duration::from_secs(60),
            "data: [DONE]\n\n".into(),
        ),
        now(call("write_file", WRITE)),
        now(call("submit", SUBMIT)),
    ]);
    let started = Instant::now();
    let report = agent_run(&env, &url, &task, &[WINDOW, "8192"]);
    assert_submitted(&env, &report);
    assert!(
        started.elapsed() < Duration::from_secs(50),
        "the loop was not cut"
    );
    assert_eq!(raw.hung_up.load(Ordering::SeqCst), 1);
    let bodies = raw.bodies.lock().unwrap();
    let messages = bodies[1]["messages"].as_array().unwrap();
    let said: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    let cut = said
        .iter()
        .find(|c| c.contains("[polymorph cut this reply here"))
        .expect("the cut reply, shortened");
    assert!(cut.matches("obj['kernel_c']").count() <= 20, "{cut}");
    assert!(said.iter().any(|c| c.contains("Your reply was cut short")));
}

#[test]
fn the_same_whole_file_reply_again_is_nudged_then_falls_back_to_one_focused_repair() {
    let env = Env::new();
    let task = env.task("spin");
    // A real habit of a 1.5B model in the whole-file protocol: a path and a block holding one
    // line, which does not build, again and again.
    let broken = "params.h\n```\nobj['kernel_c']\n```\n";
    let (url, fake) = serve((0..13).map(|_| text(broken)).collect());
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "whole-file"]);
    let seen = fake.seen.lock().unwrap();
    assert_eq!(
        seen.len(),
        7,
        "built once, nudged once, then the focused request and the one for values, a repair each: {report}"
    );
    let note = &env.json(&["query", "SELECT note FROM candidates"])[0]["note"];
    let note = note.as_str().unwrap();
    assert!(note.contains("focused request"), "{note}");
    assert!(note.contains("the same reply again"), "{note}");
    assert!(!seen[2].raw.contains(KEY));
    let switched: &Value = &seen[3].body["messages"];
    assert!(switched.to_string().contains("same reply"), "{switched}");
    let repair = seen[4].body["messages"].to_string();
    assert!(repair.contains("one chance to correct it"), "{repair}");
    assert!(
        repair.contains("obj['kernel_c']"),
        "the files as they are: {repair}"
    );
}

#[test]
fn a_proposal_cut_by_its_wall_clock_limit_submits_the_last_passing_version() {
    let env = Env::new();
    let task = env.task("spin");
    let reply_after = Duration::from_secs(60);
    let mut slow = tool("read_file", json!({ "path": "kernel.c" }));
    slow.delay = reply_after;
    let (url, fake) = serve(vec![
        tool(
            "write_file",
            json!({ "path": "params.h", "content": "#define PAD_PERMILLE 0\n" }),
        ),
        tool("build_and_test", json!({})),
        // A reply that takes longer than the proposal has left.
        slow,
    ]);
    let report = agent_run(&env, &url, &task, &["--proposal-minutes", "0.1"]);
    // The run ended before the slow reply could have come, so the limit cut it. (Measured from
    // that request, not from the start: the evaluation after the cut takes what the machine's
    // load makes it, and a bound on the whole run failed under `./test.sh` on 2 cores.)
    let waited = fake.seen.lock().unwrap()[2].at.elapsed();
    assert!(
        waited < reply_after,
        "the limit did not cut: the run waited {waited:?} on the slow reply"
    );
    assert_submitted(&env, &report);
    assert_eq!(fake.seen.lock().unwrap().len(), 3);
    let note = &env.json(&["query", "SELECT note FROM candidates"])[0]["note"];
    assert!(
        note.as_str()
            .unwrap()
            .contains("wall-clock limit of one proposal (6 s)"),
        "{note}"
    );
    // What the model cost (the replies that came), in the run's summary and in history, per
    // candidate (and per accepted one, when the judge accepted it).
    assert_eq!(report["model"]["requests"], 2, "{report}");
    assert_eq!(report["model"]["tokens"], 240, "{report}");
    let history = env.json(&["history"]);
    assert_eq!(history[0]["model_tokens"], 240, "{history}");
    assert!(history[0]["model_minutes_per_candidate"].as_f64().unwrap() > 0.0);
    if report["accepted"] == 1 {
        assert_eq!(history[0]["model_tokens_per_accepted"], 240.0, "{history}");
    }
}

#[test]
fn no_prompt_passes_the_window_older_turns_are_summarised_before_it() {
    let env = Env::new();
    let task = env.task("spin");
    let read = || tool("read_file", json!({ "path": "kernel.c" }));
    let mut script: Vec<_> = (0..8).map(|_| read()).collect();
    script.push(tool(
        "write_file",
        json!({ "path": "params.h", "content": "#define PAD_PERMILLE 0\n" }),
    ));
    script.push(tool("submit", json!({ "rationale": "no wasted steps" })));
    let (url, fake) = serve(script);
    let report = agent_run(&env, &url, &task, &[WINDOW, "3500"]);
    assert_submitted(&env, &report);
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 10);
    // The JSON body sent, at 3 characters a token, within the window less a tenth and the
    // reply's room (1,024 tokens); the 100 tokens the agent keeps for the server's chat
    // template are not in the body.
    let most = (3_150 - 1_024) * 3;
    for (k, s) in seen.iter().enumerate() {
        let sent = s.body.to_string().len();
        assert!(sent <= most, "request {k}: {sent} chars");
        assert_eq!(s.body["max_tokens"], 1024);
    }
    assert!(
        seen.iter()
            .any(|s| s.raw.contains("were summarised to keep the prompt within")),
        "older turns were never summarised"
    );
}

#[test]
fn a_server_silent_past_the_first_token_limit_gets_twice_as_long_on_the_retry() {
    let env = Env::new();
    let task = env.task("spin");
    // Three seconds before anything, against a two-second limit: the retry waits four.
    let silent = |reply: String| (HEAD.to_string(), Duration::from_secs(3), reply);
    let (url, raw) = raw_server(vec![
        silent(call("write_file", WRITE)),
        silent(call("write_file", WRITE)),
        now(call("submit", SUBMIT)),
    ]);
    let report = agent_run(
        &env,
        &url,
        &task,
        &[WINDOW, "8192", "--request-timeout", "2"],
    );
    assert_submitted(&env, &report);
    assert_eq!(raw.requests.load(Ordering::SeqCst), 3);
    assert_eq!(
        raw.hung_up.load(Ordering::SeqCst),
        1,
        "only the first wait was too short"
    );
}
