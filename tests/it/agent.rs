//! The LLM coding agent against a real HTTP server on loopback that speaks the chat-completions
//! protocol, scripted turn by turn; the tests assert on what polymorph sent as well as on what
//! it did.

use crate::common::Env;
use crate::common::model_server::{
    Fake, KEY, Turn, agent_run, serve, text, tool, tool_messages, tool_raw,
};
use serde_json::json;
use std::time::Duration;

fn assert_key_only_in_header(fake: &Fake, env: &Env) {
    for s in fake.seen.lock().unwrap().iter() {
        assert_eq!(
            s.authorization.as_deref(),
            Some(format!("Bearer {KEY}").as_str())
        );
        assert!(!s.raw.contains(KEY), "the key is in a request body");
    }
    for f in ["runs.db", "runs.db-wal"] {
        let bytes = std::fs::read(env.path().join(f)).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "the key is in {f}"
        );
    }
}

#[test]
fn the_agent_optimizes_matmul_through_tools_fixing_its_own_compile_error() {
    let env = Env::new();
    let task = env.task("matmul-c");
    let broken = "#define LOOP_ORDER 1;\n#define ROWS 4\n#define BLOCK_K 0\n#define BLOCK_N 0\n";
    let fixed = "#define LOOP_ORDER 1\n#define ROWS 4\n#define BLOCK_K 0\n#define BLOCK_N 0\n";
    let (url, fake) = serve(vec![
        tool("read_file", json!({ "path": "kernel.c" })),
        tool(
            "write_file",
            json!({ "path": "params.h", "content": broken }),
        ),
        tool("build_and_test", json!({})),
        tool(
            "write_file",
            json!({ "path": "params.h", "content": fixed }),
        ),
        tool("build_and_test", json!({})),
        tool(
            "submit",
            json!({ "rationale": "stream rows of B, four rows of C at a time" }),
        ),
    ]);
    let report = agent_run(&env, &url, &task, &[]);
    assert_eq!(report["accepted"], 1, "{report}");
    assert_eq!(report["proposer"], "agent");
    assert_eq!(env.git(&["log", "--all", "--format=%s"]).lines().count(), 2);

    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 6);
    let first = &seen[0].body;
    assert_eq!(first["model"], "fake-coder");
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for t in [
        "list_files",
        "read_file",
        "replace_text",
        "write_file",
        "build_and_test",
        "submit",
        "propose_params",
    ] {
        assert!(tools.contains(&t), "{t} not declared: {tools:?}");
    }
    let prompt = first["messages"][1]["content"].as_str().unwrap();
    assert!(
        prompt.contains("gflops")
            && prompt.contains("--- kernel.c ---")
            && prompt.contains("LOOP_ORDER"),
        "{prompt}"
    );
    // The model saw the file it read, then the compiler's error, then a clean build.
    assert!(
        tool_messages(&seen[1])
            .iter()
            .any(|m| m.contains("void gemm("))
    );
    assert!(
        tool_messages(&seen[3])
            .iter()
            .any(|m| m.contains("build failed") && m.contains("error")),
        "{:?}",
        tool_messages(&seen[3])
    );
    assert!(
        tool_messages(&seen[5])
            .iter()
            .any(|m| m.contains("correctness test passes"))
    );
    drop(seen);
    assert_key_only_in_header(&fake, &env);

    let shown = env.json(&["show", "1"]);
    assert_eq!(shown["note"], "stream rows of B, four rows of C at a time");
    assert!(
        shown["origin"]
            .as_str()
            .unwrap()
            .starts_with("agent(fake-coder)")
    );
    let usage = env.json(&["query", "SELECT model, prompt_tokens, completion_tokens, model_requests, model_latency_ms, e.process_seconds, e.overhead_ms FROM candidates c JOIN evaluations e ON e.candidate_id = c.id"]);
    assert_eq!(usage[0]["prompt_tokens"], 600);
    assert_eq!(usage[0]["model_requests"], 6);
    eprintln!("agent candidate: {}", usage[0]);
    let history = env.json(&["history"]);
    assert_eq!(history[0]["model_tokens"], 720);

    // A later proposal sees what worked: the digest names the accepted entry.
    let (url2, fake2) = serve(vec![
        tool("submit", json!({ "rationale": "nothing yet" })),
        text(""),
        tool(
            "propose_params",
            json!({ "params": { "LOOP_ORDER": 0, "ROWS": 1, "BLOCK_K": 0, "BLOCK_N": 0 }, "rationale": "back to the textbook loop" }),
        ),
    ]);
    let report2 = agent_run(&env, &url2, &task, &[]);
    assert_eq!(report2["rejected"], 1, "{report2}");
    let seen2 = fake2.seen.lock().unwrap();
    let prompt2 = seen2[0].body["messages"][1]["content"].as_str().unwrap();
    assert!(
        prompt2.contains("Accepted improvements") && prompt2.contains("stream rows of B"),
        "{prompt2}"
    );
    assert!(
        tool_messages(&seen2[1])
            .iter()
            .any(|m| m.contains("nothing is changed yet"))
    );
    assert!(tool_messages(&seen2[2]).iter().any(|m| m.contains("empty")));
    let c2 = env.json(&["show", "2"]);
    assert!(c2["reason"].as_str().unwrap().starts_with("slower"), "{c2}");
    assert_eq!(c2["payload"]["params"]["LOOP_ORDER"], 0);
}

#[test]
fn errors_from_the_server_and_the_model_are_survived_and_recorded() {
    let env = Env::new();
    let task = env.task("spin");
    let rate_limited = Turn {
        status: 429,
        headers: vec![("retry-after", "1")],
        body: json!({ "error": { "message": "slow down", "type": "rate_limit_error", "param": null, "code": null } }).to_string(),
        delay: Duration::ZERO,
    };
    let server_error = Turn {
        status: 500,
        headers: vec![],
        body: json!({ "error": { "message": "boom", "type": "server_error", "param": null, "code": null } }).to_string(),
        delay: Duration::ZERO,
    };
    let truncated = Turn {
        status: 200,
        headers: vec![],
        body: "{\"choices\": [{\"message\": {\"role\": \"assi".into(),
        delay: Duration::ZERO,
    };
    let mut hung = text("too late");
    hung.delay = Duration::from_secs(4);
    let (url, fake) = serve(vec![
        rate_limited,
        server_error,
        truncated,
        hung,
        tool("launch_rockets", json!({})),
        tool_raw("write_file", "{path: params.h"),
        tool(
            "write_file",
            json!({ "path": "bench.c", "content": "int main(void) { return 0; }" }),
        ),
        tool(
            "write_file",
            json!({ "path": "params.h", "content": "#define PAD_PERMILLE 0\n" }),
        ),
        tool("submit", json!({ "rationale": "no wasted steps" })),
    ]);
    let report = agent_run(&env, &url, &task, &["--request-timeout", "1"]);
    assert_eq!(report["candidates"], 1, "{report}");
    assert_eq!(report["accepted"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert!(seen.len() >= 9, "{} requests", seen.len());
    assert!(
        seen[1].at.duration_since(seen[0].at) >= Duration::from_millis(900),
        "Retry-After was not honoured"
    );
    let n = seen.len();
    let feedback: Vec<String> = tool_messages(&seen[n - 1]);
    assert!(
        feedback
            .iter()
            .any(|m| m.contains("no tool named \"launch_rockets\"")),
        "{feedback:?}"
    );
    assert!(
        feedback.iter().any(|m| m.contains("not valid JSON")),
        "{feedback:?}"
    );
    assert!(
        feedback.iter().any(|m| m.contains("bench.c is protected")),
        "{feedback:?}"
    );
    drop(seen);
    assert_key_only_in_header(&fake, &env);
}

#[test]
fn servers_without_tool_calling_use_search_replace_blocks() {
    let env = Env::new();
    let task = env.task("spin");
    let (url, fake) = serve(vec![
        text(
            "params.h\n<<<<<<< SEARCH\n#define PAD_PERMILLE 999\n=======\n#define PAD_PERMILLE 0\n>>>>>>> REPLACE\nBUILD\n",
        ),
        text(
            "params.h\n<<<<<<< SEARCH\n#define PAD_PERMILLE 200\n=======\n#define PAD_PERMILLE 0\n>>>>>>> REPLACE\nBUILD\n",
        ),
        text("SUBMIT: no wasted steps"),
    ]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "text"]);
    assert_eq!(report["accepted"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(|s| s.body.get("tools").is_none()));
    assert!(
        seen[0].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("<<<<<<< SEARCH")
    );
    assert!(
        tool_messages(&seen[1])
            .iter()
            .any(|m| m.contains("was not found in params.h"))
    );
    assert!(
        tool_messages(&seen[2])
            .iter()
            .any(|m| m.contains("correctness test passes"))
    );
}

#[test]
fn several_conversations_run_at_once() {
    let env = Env::new();
    let task = env.task("spin");
    let slow = |mut t: Turn| {
        t.delay = Duration::from_millis(600);
        t
    };
    let (url, fake) = serve(vec![
        slow(tool(
            "write_file",
            json!({ "path": "params.h", "content": "#define PAD_PERMILLE 0\n" }),
        )),
        slow(tool(
            "write_file",
            json!({ "path": "params.h", "content": "#define PAD_PERMILLE 0\n" }),
        )),
        tool("submit", json!({ "rationale": "no waste" })),
        tool("submit", json!({ "rationale": "no waste either" })),
    ]);
    let report = agent_run(
        &env,
        &url,
        &task,
        &["--agent-concurrency", "2", "--budget", "2"],
    );
    assert_eq!(report["candidates"], 2, "{report}");
    assert_eq!(
        report["accepted"], 1,
        "the second is the same change, against the new incumbent: {report}"
    );
    assert!(
        fake.max_in_flight.load(std::sync::atomic::Ordering::SeqCst) >= 2,
        "the two conversations did not overlap"
    );
    // Both were written against the same incumbent; evaluated one after the other, the second
    // no longer changes anything.
    let second = env.json(&["show", "2"]);
    assert!(
        second["reason"]
            .as_str()
            .unwrap()
            .contains("change is empty"),
        "{second}"
    );
}
