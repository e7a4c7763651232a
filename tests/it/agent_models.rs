//! The agent against what real models do, served by the scripted loopback server: placeholder
//! tool arguments, empty replies, tool calls written as JSON in the text, SEARCH/REPLACE blocks
//! without SUBMIT or without a path, repeated blocks and replies, a conversation that ends without submitting after a passing
//! build, and SIGTERM while a request is in flight. Each ends in a few requests, not the turn cap.

use crate::common::Env;
use crate::common::model_server::{KEY, serve, text, tool, tool_messages};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn agent(env: &Env, url: &str, task: &std::path::Path, extra: &[&str]) -> Value {
    crate::common::model_server::agent_run(env, url, task, extra)
}

/// The candidate the run recorded: verdict, reason, note, protocol.
fn candidate(env: &Env) -> Value {
    env.json(&["query", "SELECT e.verdict, e.reason, c.note, c.agent_protocol, c.prompt_tokens FROM candidates c JOIN evaluations e ON e.candidate_id = c.id ORDER BY c.id DESC LIMIT 1"])[0].clone()
}

const EDIT: &str = "params.h\n<<<<<<< SEARCH\n#define PAD_PERMILLE 200\n=======\n#define PAD_PERMILLE 0\n>>>>>>> REPLACE\n";

#[test]
fn placeholder_arguments_are_nudged_then_the_focused_protocol_takes_over() {
    let env = Env::new();
    let task = env.task("spin");
    let placeholder = json!({ "path": "kernel.c", "old": "old", "new": "new" });
    let (url, fake) = serve(vec![
        tool("replace_text", placeholder.clone()),
        tool("replace_text", placeholder),
        // In the focused protocol: a real block, and no SUBMIT (as many models answer).
        text(EDIT),
    ]);
    let report = agent(&env, &url, &task, &[]);
    assert_eq!(report["accepted"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 3, "three requests, not the turn cap");
    assert!(
        tool_messages(&seen[1])
            .iter()
            .any(|m| m.contains("placeholder arguments"))
    );
    assert!(
        seen[2].body.get("tools").is_none(),
        "switched to the focused protocol"
    );
    let system = seen[2].body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("PARAMS: {\"PAD_PERMILLE\":200}"),
        "the example is the task's own assignment: {system}"
    );
    assert!(!system.contains("path/of/file"));
    assert!(
        seen[2].body["messages"][2]["content"]
            .as_str()
            .unwrap()
            .contains("simpler format")
    );
    drop(seen);
    let c = candidate(&env);
    assert_eq!(c["agent_protocol"], "focused", "{c}");
    assert!(
        c["note"].as_str().unwrap().contains("built and passed"),
        "{c}"
    );
}

#[test]
fn the_next_proposal_starts_in_the_protocol_the_last_one_ended_in() {
    let env = Env::new();
    let task = env.task("spin");
    let placeholder = json!({ "path": "kernel.c", "old": "old", "new": "new" });
    let second = "params.h\n<<<<<<< SEARCH\n#define PAD_PERMILLE 0\n=======\n#define PAD_PERMILLE 0 /* none */\n>>>>>>> REPLACE\nSUBMIT: a comment\n";
    let (url, fake) = serve(vec![
        tool("replace_text", placeholder.clone()),
        tool("replace_text", placeholder),
        text(EDIT),
        // The second proposal: asked in the focused protocol at once, no tools offered.
        text(second),
    ]);
    let report = agent(&env, &url, &task, &["--budget", "2"]);
    assert_eq!(report["candidates"], 2, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(
        seen.len(),
        4,
        "no request of the second proposal went to tools"
    );
    assert!(seen[3].body.get("tools").is_none());
    let system = seen[3].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("<<<<<<< SEARCH"), "{system}");
    drop(seen);
    assert_eq!(candidate(&env)["agent_protocol"], "focused");
}

#[test]
fn empty_replies_end_the_proposal_early_after_every_protocol() {
    let env = Env::new();
    let task = env.task("spin");
    let (url, fake) = serve((0..24).map(|_| text("")).collect());
    let report = agent(&env, &url, &task, &[]);
    assert_eq!(report["candidates"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    // Two empty replies in tools, then the focused request and the request for values alone,
    // each with its repair; then it gives up.
    assert_eq!(seen.len(), 6, "{} requests", seen.len());
    drop(seen);
    let c = candidate(&env);
    assert_eq!(c["verdict"], "failed");
    assert!(
        c["note"].as_str().unwrap().contains("focused request"),
        "{c}"
    );
    assert_eq!(c["agent_protocol"], "focused");
}

#[test]
fn tool_calls_written_as_json_in_the_text_are_taken() {
    let env = Env::new();
    let task = env.task("spin");
    let (url, fake) = serve(vec![
        text(
            "I will remove the padding.\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"params.h\", \"content\": \"#define PAD_PERMILLE 0\\n\"}}\n</tool_call>",
        ),
        text(
            "```json\n{\"name\": \"submit\", \"arguments\": {\"rationale\": \"no wasted steps\"}}\n```",
        ),
    ]);
    let report = agent(&env, &url, &task, &[]);
    assert_eq!(report["accepted"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert!(
        tool_messages(&seen[1])
            .iter()
            .any(|m| m.contains("write_file: wrote params.h"))
    );
}

#[test]
fn repeated_and_identical_blocks_are_feedback_and_paths_are_matched_by_name() {
    let env = Env::new();
    let task = env.task("spin");
    let same = "params.h\n<<<<<<< SEARCH\n#define PAD_PERMILLE 200\n=======\n#define PAD_PERMILLE 200\n>>>>>>> REPLACE\nBUILD\n";
    let (url, fake) = serve(vec![
        text(same),
        // A path copied from an example, and then the same block again after it applied.
        text(&format!("path/of/{EDIT}BUILD\n")),
        text(&format!("{EDIT}SUBMIT: no wasted steps\n")),
    ]);
    let report = agent(&env, &url, &task, &["--agent-protocol", "text"]);
    assert_eq!(report["accepted"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert!(
        tool_messages(&seen[1])
            .iter()
            .any(|m| m.contains("identical"))
    );
    let third = tool_messages(&seen[2]);
    assert!(
        third.iter().any(|m| m.contains("correctness test passes")),
        "{third:?}"
    );
}

#[test]
fn a_passing_version_is_submitted_when_the_conversation_ends_without_a_submission() {
    let env = Env::new();
    let task = env.task("spin");
    let mut script = vec![
        tool(
            "write_file",
            json!({ "path": "params.h", "content": "#define PAD_PERMILLE 0\n" }),
        ),
        tool("build_and_test", json!({})),
    ];
    script.extend((0..24).map(|_| text("")));
    let (url, _fake) = serve(script);
    let report = agent(&env, &url, &task, &[]);
    assert_eq!(report["accepted"], 1, "{report}");
    let c = candidate(&env);
    assert!(
        c["note"].as_str().unwrap().contains("last passing version"),
        "{c}"
    );
    let history = env.json(&["history"]);
    assert!(
        history[0]["prompt_tokens_per_accepted"].as_i64().unwrap() > 0,
        "{history}"
    );
}

#[test]
fn sigterm_abandons_a_request_in_flight_and_the_run_resumes() {
    let env = Env::new();
    let task = env.task("spin");
    let mut slow = text(EDIT);
    let reply_after = Duration::from_secs(60);
    slow.delay = reply_after;
    let (url, fake) = serve(vec![slow]);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("polymorph"))
        .current_dir(env.path())
        .env("OPENAI_BASE_URL", &url)
        .env("OPENAI_API_KEY", KEY)
        .args([
            "--db",
            env.db().to_str().unwrap(),
            "--ledger",
            env.ledger().to_str().unwrap(),
        ])
        .args([
            "run",
            task.to_str().unwrap(),
            "--proposer",
            "agent",
            "--budget",
            "1",
            "--request-timeout",
            "300",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while fake.seen.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "no request came");
        std::thread::sleep(Duration::from_millis(50));
    }
    let sent = Instant::now();
    // SAFETY: kill(2) on the child we spawned.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let status = child.wait().unwrap();
    // Well before the reply could have come: the request was abandoned, not waited out (a
    // bound of seconds read the load of the machine as much as the run).
    let waited = sent.elapsed();
    assert!(waited < reply_after / 2, "took {waited:?}");
    assert_eq!(status.code(), Some(130));
    let counts = env.json(&[
        "query",
        "SELECT (SELECT COUNT(*) FROM candidates) AS c, (SELECT status FROM runs) AS s",
    ]);
    assert_eq!(counts[0]["c"], 0, "nothing half-done was recorded");
    assert_eq!(counts[0]["s"], "interrupted");
}

#[test]
fn a_whole_file_reply_without_its_path_line_is_the_file_its_fence_names() {
    let env = Env::new();
    let task = env.task("spin");
    // A habit of the 0.5B model: the file in a fenced block, no path line before it.
    let (url, fake) = serve(vec![text("```h\n#define PAD_PERMILLE 0\n```\n")]);
    let report = agent(&env, &url, &task, &["--agent-protocol", "whole-file"]);
    assert_eq!(report["candidates"], 1, "{report}");
    assert_eq!(fake.seen.lock().unwrap().len(), 1);
    let c = candidate(&env);
    assert_eq!(c["agent_protocol"], "whole-file");
    // Built, passed and submitted; the judge's verdict on a busy machine is not the point.
    assert_ne!(c["verdict"], "failed", "{c}");
    assert!(
        c["note"].as_str().unwrap().contains("built and passed"),
        "{c}"
    );
}

#[test]
fn a_search_block_without_a_path_edits_the_one_editable_file_holding_its_text() {
    let env = Env::new();
    let task = env.task("spin");
    // A 0.5B model's block: an untagged fence and no path line.
    let pathless = "```\n<<<<<<< SEARCH\n#define PAD_PERMILLE 200\n=======\n#define PAD_PERMILLE 0\n>>>>>>> REPLACE\n```\nSUBMIT: no padding\n";
    // SEARCH text that no editable file holds keeps its error, naming the path it was given.
    let nowhere = "```\n<<<<<<< SEARCH\nint unheard_of;\n=======\nint x;\n>>>>>>> REPLACE\n```\n";
    let (url, fake) = serve(vec![text(nowhere), text(pathless)]);
    let report = agent(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["candidates"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    let repair = seen[1].body["messages"].as_array().unwrap();
    let last = repair.last().unwrap()["content"].as_str().unwrap();
    assert!(last.contains("empty path"), "{last}");
    drop(seen);
    let c = candidate(&env);
    assert_eq!(c["note"], "no padding", "{c}");
    assert_ne!(c["verdict"], "failed", "{c}");
}

#[test]
fn values_the_task_does_not_declare_are_refused_before_submission() {
    let env = Env::new();
    let task = env.task("spin");
    let (url, fake) = serve(vec![
        tool(
            "propose_params",
            json!({ "params": { "PAD_PERMILLE": 7 }, "rationale": "less padding" }),
        ),
        tool(
            "propose_params",
            json!({ "params": { "PAD_PERMILLE": 0 }, "rationale": "no padding" }),
        ),
    ]);
    let report = agent(&env, &url, &task, &[]);
    assert_eq!(report["accepted"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    // The tool declares the values too, for a server that holds tool calls to their schema.
    let propose = seen[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "propose_params")
        .unwrap()
        .clone();
    assert_eq!(
        propose["function"]["parameters"]["properties"]["params"]["properties"]["PAD_PERMILLE"]["enum"],
        json!([0, 25, 50, 100, 200]),
        "{propose}"
    );
    assert!(
        tool_messages(&seen[1]).iter().any(|m| m.contains(
            "those values cannot be used: PAD_PERMILLE = 7 is not one of the declared values (0, 25, 50, 100, 200)"
        )),
        "{:?}",
        tool_messages(&seen[1])
    );
    drop(seen);
    assert_eq!(candidate(&env)["note"], "no padding");
}
