//! The focused protocol, what small models can follow: one request answered by one change,
//! built and tested at once, and one repair turn with the error; two requests, and on a task
//! with parameters a third and last, for values alone, after two replies that changed nothing
//! or a change whose repair failed too.

use crate::common::Env;
use crate::common::model_server::{Seen, Turn, agent_run, ok, serve, text};
use serde_json::{Value, json};

fn candidate(env: &Env) -> Value {
    env.json(&["query", "SELECT e.verdict, c.note, c.agent_protocol, c.model_requests FROM candidates c JOIN evaluations e ON e.candidate_id = c.id ORDER BY c.id DESC LIMIT 1"])[0].clone()
}

const BROKEN: &str = "params.h\n<<<<<<< SEARCH\n#define PAD_PERMILLE 200\n=======\n#define PAD_PERMILLE 0 +\n>>>>>>> REPLACE\nSUBMIT: no padding\n";
const FIXED: &str = "params.h\n<<<<<<< SEARCH\n#define PAD_PERMILLE 0 +\n=======\n#define PAD_PERMILLE 0\n>>>>>>> REPLACE\nSUBMIT: no wasted steps\n";
/// The format's example copied back word for word (a 0.5B model's habit).
const ECHO: &str = "params.h\n<<<<<<< SEARCH\nthe exact lines to find, copied from the file\n=======\nthe lines to put in their place\n>>>>>>> REPLACE\n";
/// The parameter file sent back as it is (a 1.5B model's habit).
const SAME: &str = "params.h\n```c\n#define PAD_PERMILLE 200\n```\nSUBMIT: tidier\n";
const VALUES: &str = "PARAMS: {\"PAD_PERMILLE\": 0}\nSUBMIT: no padding\n";

/// The last message of a request the model server saw.
fn last_message(seen: &Seen) -> String {
    let messages = seen.body["messages"].as_array().unwrap();
    messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The run's one candidate is `VALUES`, submitted after `requests` requests, and not failed.
fn values_submitted_after(env: &Env, requests: u64) {
    let c = candidate(env);
    assert_eq!(c["note"], "no padding", "{c}");
    assert_eq!(c["model_requests"], requests, "{c}");
    assert_ne!(c["verdict"], "failed", "{c}");
}

#[test]
fn a_change_that_fails_gets_one_repair_with_its_error_and_then_is_submitted() {
    let env = Env::new();
    let task = env.task("spin");
    let (url, fake) = serve(vec![text(BROKEN), text(FIXED)]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["candidates"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert!(seen[0].body.get("tools").is_none(), "no tools are offered");
    let system = seen[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("one chance to correct it"), "{system}");
    let task_prompt = seen[0].body["messages"][1]["content"].as_str().unwrap();
    assert!(
        task_prompt
            .contains("to add a knob, declare it in params.h as `#define NAME VALUE // values:"),
        "{task_prompt}"
    );
    let last = last_message(&seen[1]);
    assert!(last.contains("did not pass"), "{last}");
    assert!(last.contains("error"), "the build's error: {last}");
    assert!(
        last.contains("#define PAD_PERMILLE 0 +"),
        "the files as they are: {last}"
    );
    drop(seen);
    let c = candidate(&env);
    assert_eq!(c["agent_protocol"], "focused", "{c}");
    assert_eq!(c["note"], "no wasted steps", "{c}");
    assert_ne!(c["verdict"], "failed", "it built and passed: {c}");
}

/// Takes spin's parameters away: its kernel and params.h stay, as files to edit.
fn without_params(task: &std::path::Path) {
    let toml = std::fs::read_to_string(task.join("task.toml")).unwrap();
    let params = "[params]\nPAD_PERMILLE = [0, 25, 50, 100, 200]\n\n[params.render]\nfile = \"params.h\"\nformat = \"c-define\"\n\n";
    assert!(toml.contains(params), "{toml}");
    std::fs::write(task.join("task.toml"), toml.replace(params, "")).unwrap();
}

#[test]
fn two_replies_without_a_passing_change_end_the_proposal() {
    let env = Env::new();
    let task = env.task("spin");
    without_params(&task);
    // A reply cut at the cap before any change, then a change whose SEARCH is not in the file.
    let cut = ok(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "fake",
        "choices": [{ "index": 0, "finish_reason": "length", "message": { "role": "assistant", "content": "Let me think about the loop order. First," } }],
        "usage": { "prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120 }
    }));
    let missing = "kernel.c\n<<<<<<< SEARCH\nfor (int i = 0; i < n; i++)\n=======\nfor (long i = 0; i < n; i += 2)\n>>>>>>> REPLACE\n";
    let (url, fake) = serve(vec![cut, text(missing), text(FIXED), text(FIXED)]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["accepted"], 0, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "the change and its one repair, no more");
    let said = seen[1].body["messages"].to_string();
    assert!(said.contains("cut short"), "{said}");
    drop(seen);
    let c = candidate(&env);
    assert_eq!(c["verdict"], "failed", "{c}");
    let note = c["note"].as_str().unwrap();
    assert!(note.contains("focused request and its repair"), "{note}");
    assert_eq!(c["model_requests"], 2, "{c}");
}

#[test]
fn the_format_example_copied_back_is_named_as_such() {
    let env = Env::new();
    let task = env.task("spin");
    // A 0.5B model's habit: the prompt's example block, word for word.
    let edit = "params.h\n<<<<<<< SEARCH\n#define PAD_PERMILLE 200\n=======\n#define PAD_PERMILLE 0\n>>>>>>> REPLACE\n";
    let (url, fake) = serve(vec![text(ECHO), text(edit)]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["candidates"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    let repair = seen[1].body["messages"].to_string();
    assert!(repair.contains("the format's example"), "{repair}");
    drop(seen);
    let c = candidate(&env);
    assert_ne!(c["verdict"], "failed", "the repair built and passed: {c}");
}

#[test]
fn a_whole_file_with_its_path_inside_the_fence_is_taken() {
    let env = Env::new();
    let task = env.task("spin");
    // A 1.5B model's habits: a block holding one line of nothing, then the file with its path
    // as the block's first line.
    let nothing = "```\nobj['file_path']\n```\n";
    let inside = "```\nparams.h\n#define PAD_PERMILLE 0\n```\n";
    let (url, fake) = serve(vec![text(nothing), text(inside)]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["candidates"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    let repair = seen[1].body["messages"].to_string();
    assert!(repair.contains("no change was found"), "{repair}");
    drop(seen);
    let c = candidate(&env);
    assert_ne!(c["verdict"], "failed", "the file built and passed: {c}");
}

#[test]
fn search_blocks_in_a_fence_tagged_with_the_language_edit_that_file() {
    let env = Env::new();
    let task = env.task("spin");
    // A 0.5B model's habit: the blocks inside a fence tagged `h`, with no path line; the tag
    // stands for the one editable header.
    let fenced = "```h\n<<<<<<< SEARCH\n#define PAD_PERMILLE 200\n=======\n#define PAD_PERMILLE 0\n>>>>>>> REPLACE\n\nSUBMIT: no padding\n```\n";
    let (url, fake) = serve(vec![text(fenced), text(FIXED)]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["candidates"], 1, "{report}");
    assert_eq!(fake.seen.lock().unwrap().len(), 1, "no repair was needed");
    let c = candidate(&env);
    assert_eq!(c["note"], "no padding", "{c}");
    assert_ne!(c["verdict"], "failed", "it built and passed: {c}");
}

/// spin's kernel with a branch for no padding, which the incumbent (200 per mille) skips.
const BRANCHED: &str = "#include \"kernel.h\"\n#include \"params.h\"\n\n#if PAD_PERMILLE == 0\n/* No padding: the loop alone. */\nunsigned long kernel(unsigned long seed, long n) {\n    unsigned long x = seed;\n    for (long i = 0; i < n; i++)\n        x = x * 6364136223846793005ul + 1442695040888963407ul;\n    return x;\n}\n#else\nunsigned long kernel(unsigned long seed, long n) {\n    unsigned long x = seed, y = seed;\n    for (long i = 0; i < n; i++) {\n        x = x * 6364136223846793005ul + 1442695040888963407ul;\n        __asm__ volatile(\"\" : \"+r\"(x));\n    }\n    long pad = n / 1000 * PAD_PERMILLE;\n    for (long i = 0; i < pad; i++) {\n        y = y * 6364136223846793005ul + 1442695040888963407ul;\n        __asm__ volatile(\"\" : \"+r\"(y));\n    }\n    return x;\n}\n#endif\n";
const MARKER: &str = "/* polymorph hidden block 1: 7 lines not compiled with PAD_PERMILLE = 200; keep this line as it is */\n";

#[test]
fn a_branch_the_parameters_skip_is_shown_as_one_line_and_comes_back_whole() {
    let env = Env::new();
    let task = env.task("spin");
    std::fs::write(task.join("kernel.c"), BRANCHED).unwrap();
    let hidden_start = BRANCHED.find("/* No padding").unwrap();
    let hidden_end = BRANCHED.find("#else").unwrap();
    let shown = format!(
        "{}{MARKER}{}",
        &BRANCHED[..hidden_start],
        &BRANCHED[hidden_end..]
    );
    let edited = shown.replace("long pad = n / 1000 * PAD_PERMILLE;", "long pad = 0;");
    // First the file without its marker line (the branch's lines would be lost), then with it.
    let lost = format!("kernel.c\n```c\n{}```\n", edited.replace(MARKER, ""));
    let kept = format!("kernel.c\n```c\n{edited}```\nSUBMIT: no padding loop\n");
    let (url, fake) = serve(vec![text(&lost), text(&kept)]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["candidates"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    let task_prompt = seen[0].body["messages"][1]["content"].as_str().unwrap();
    assert!(
        task_prompt.contains(&shown),
        "the folded file: {task_prompt}"
    );
    assert!(!task_prompt.contains("No padding"), "{task_prompt}");
    assert!(
        task_prompt.contains("leave each of those lines"),
        "{task_prompt}"
    );
    let last = last_message(&seen[1]);
    assert!(last.contains("is missing"), "{last}");
    drop(seen);
    let c = candidate(&env);
    assert_eq!(c["note"], "no padding loop", "{c}");
    assert_ne!(c["verdict"], "failed", "it built and passed: {c}");
    // What was submitted is the real file: the hidden branch whole, the edit in the other.
    let diff = env.json(&["query", "SELECT diff FROM candidates"])[0]["diff"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(diff.contains("+    long pad = 0;"), "{diff}");
    assert!(
        !diff.contains("No padding") && !diff.contains("polymorph hidden"),
        "{diff}"
    );
}

#[test]
fn files_sent_back_unchanged_are_asked_once_more_for_a_real_change() {
    let env = Env::new();
    let task = env.task("spin");
    // A 1.5B model's habit: the editable file as it is, then (asked plainly) new values.
    let (url, fake) = serve(vec![text(SAME), text(VALUES)]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["candidates"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    let last = last_message(&seen[1]);
    assert!(
        last.contains("leaves the editable files exactly as they are"),
        "{last}"
    );
    assert!(
        !last.contains("did not pass"),
        "not an error to repair: {last}"
    );
    assert!(last.contains("PARAMS: {\"PAD_PERMILLE\":200}"), "{last}");
    drop(seen);
    let c = candidate(&env);
    assert_eq!(c["note"], "no padding", "{c}");
    assert_eq!(c["model_requests"], 2, "{c}");
}

#[test]
fn files_sent_back_unchanged_twice_are_asked_for_parameter_values_alone() {
    let env = Env::new();
    let task = env.task("spin");
    // The habit rounds 14-16 saw: the file as it is, and again when asked plainly; then,
    // asked for values alone, values. Without the third request nothing was submitted.
    let (url, fake) = serve(vec![text(SAME), text(SAME), text(VALUES), text(SAME)]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["candidates"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(
        seen.len(),
        3,
        "the request, the plain one, the one for values"
    );
    let last = last_message(&seen[2]);
    assert!(
        last.contains("left the files as they were, twice"),
        "{last}"
    );
    assert!(
        last.contains("PAD_PERMILLE in [0,"),
        "the values allowed: {last}"
    );
    assert!(last.contains("PARAMS: {\"PAD_PERMILLE\":200}"), "{last}");
    drop(seen);
    values_submitted_after(&env, 3);
}

#[test]
fn a_task_without_parameters_gets_no_third_request() {
    let env = Env::new();
    let task = env.task("spin");
    without_params(&task);
    let (url, fake) = serve(vec![text(SAME), text(SAME), text(SAME)]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["accepted"], 0, "{report}");
    assert_eq!(
        fake.seen.lock().unwrap().len(),
        2,
        "the request and its repair"
    );
}

#[test]
fn a_change_whose_repair_fails_too_gets_a_last_request_for_values_alone() {
    let env = Env::new();
    let task = env.task("spin");
    // The 0.5B model's habit (round 18): the format's example copied back, twice; asked for
    // values alone, values. Without the last request nothing was submitted.
    let (url, fake) = serve(vec![text(ECHO), text(ECHO), text(VALUES), text(ECHO)]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["candidates"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 3, "the request, its repair, the one for values");
    let last = last_message(&seen[2]);
    assert!(last.contains("did not pass, nor its repair"), "{last}");
    assert!(last.contains("the format's example"), "why: {last}");
    assert!(
        last.contains("PAD_PERMILLE in [0,"),
        "the values allowed: {last}"
    );
    drop(seen);
    values_submitted_after(&env, 3);
}

#[test]
fn values_not_declared_get_one_repair_that_names_the_declared_ones() {
    let env = Env::new();
    let task = env.task("spin");
    // Round 19's habit: asked for values, values the task does not declare.
    let undeclared = "PARAMS: {\"PAD_PERMILLE\": 1}\nSUBMIT: less padding\n";
    let (url, fake) = serve(vec![text(ECHO), text(ECHO), text(undeclared), text(VALUES)]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["candidates"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 4, "the request and its repair, twice");
    let last = last_message(&seen[3]);
    assert!(
        last.contains("PAD_PERMILLE = 1 is not one of the declared values (0, 25, 50, 100, 200)"),
        "{last}"
    );
    assert!(last.contains("PARAMS: {\"PAD_PERMILLE\":200}"), "{last}");
    drop(seen);
    values_submitted_after(&env, 4);
}

#[test]
fn values_that_cannot_be_used_twice_end_the_proposal_without_a_submission() {
    let env = Env::new();
    let task = env.task("spin");
    let (url, fake) = serve(vec![
        text(ECHO),
        text(ECHO),
        text("PARAMS: {PAD_PERMILLE: zero}\n"),
        text("PARAMS: {\"PAD_PERMILLE\": 7}\n"),
        text(ECHO),
    ]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["accepted"], 0, "{report}");
    assert_eq!(
        fake.seen.lock().unwrap().len(),
        4,
        "two requests, a repair each"
    );
    let c = candidate(&env);
    assert_eq!(c["verdict"], "failed", "{c}");
    let note = c["note"].as_str().unwrap();
    assert!(note.contains("the request for values alone"), "{note}");
    assert!(
        note.contains("PAD_PERMILLE = 7 is not one of the declared"),
        "{note}"
    );
    assert_eq!(c["model_requests"], 4, "{c}");
}

#[test]
fn the_request_for_values_holds_the_reply_to_the_declared_values() {
    let env = Env::new();
    let task = env.task("spin");
    // A server that constrains decoding to the schema answers with the object alone.
    let (url, fake) = serve(vec![text(ECHO), text(ECHO), text("{\"PAD_PERMILLE\": 0}")]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["candidates"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 3, "the request, its repair, the one for values");
    for s in &seen[..2] {
        assert!(s.body.get("response_format").is_none(), "{}", s.body);
    }
    let format = &seen[2].body["response_format"];
    assert_eq!(format["type"], "json_schema", "{format}");
    let schema = &format["json_schema"]["schema"];
    assert_eq!(
        schema["properties"]["PAD_PERMILLE"]["enum"],
        json!([0, 25, 50, 100, 200]),
        "{schema}"
    );
    assert_eq!(schema["required"], json!(["PAD_PERMILLE"]), "{schema}");
    drop(seen);
    let c = candidate(&env);
    assert_eq!(
        c["note"], "values the model chose, with no rationale",
        "{c}"
    );
    assert_eq!(c["model_requests"], 3, "{c}");
    assert_ne!(c["verdict"], "failed", "{c}");
}

#[test]
fn a_server_that_refuses_response_format_is_asked_again_without_it() {
    let env = Env::new();
    let task = env.task("spin");
    let refused = Turn {
        status: 400,
        headers: vec![],
        body: json!({ "error": { "message": "Unrecognized request argument supplied: response_format", "type": "invalid_request_error" } }).to_string(),
        delay: std::time::Duration::ZERO,
    };
    let (url, fake) = serve(vec![text(ECHO), text(ECHO), refused, text(VALUES)]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["candidates"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(
        seen.len(),
        4,
        "the request for values twice, the second without a schema"
    );
    assert!(seen[2].body.get("response_format").is_some());
    assert!(
        seen[3].body.get("response_format").is_none(),
        "{}",
        seen[3].body
    );
    assert_eq!(seen[2].body["messages"], seen[3].body["messages"]);
    drop(seen);
    values_submitted_after(&env, 4);
}

#[test]
fn files_sent_back_unchanged_after_the_request_for_values_get_that_request_again() {
    let env = Env::new();
    let task = env.task("spin");
    let (url, fake) = serve(vec![text(ECHO), text(ECHO), text(SAME), text(VALUES)]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["candidates"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 4, "the request and its repair, twice");
    let last = last_message(&seen[3]);
    assert!(last.contains("values alone, please"), "{last}");
    assert!(last.contains("PAD_PERMILLE in [0,"), "{last}");
    assert!(seen[3].body.get("response_format").is_some());
    drop(seen);
    values_submitted_after(&env, 4);
}

#[test]
fn the_current_values_sent_back_are_refused_before_submission() {
    let env = Env::new();
    let task = env.task("spin");
    // Held to the declared values, a small model copies the example: the incumbent's own.
    let current = "{\"PAD_PERMILLE\": 200}";
    let (url, fake) = serve(vec![text(ECHO), text(ECHO), text(current), text(VALUES)]);
    let report = agent_run(&env, &url, &task, &["--agent-protocol", "focused"]);
    assert_eq!(report["candidates"], 1, "{report}");
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 4, "the request and its repair, twice");
    let last = last_message(&seen[3]);
    assert!(last.contains("they are the current values"), "{last}");
    drop(seen);
    values_submitted_after(&env, 4);
}
