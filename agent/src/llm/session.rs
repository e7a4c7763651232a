//! One proposal by the coding agent: a conversation in which the model reads the incumbent,
//! edits a scratch copy through tools (or the text protocol), builds and tests it, and submits.
//! The host performs every action on files and processes; this loop only decides what to ask
//! for and what to tell the model. A protected file, a bad argument, an unknown tool or a block
//! that does not match is an answer the model sees, never a crash.

use super::client::{ModelClient, ModelError, Reply, ToolCall};
use super::edits::{TextEdit, parse_text_reply};
use crate::{Params, ProposedChange, Usage};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// What the agent can do to its scratch tree. Implemented by the driver, which owns the sandbox.
#[async_trait::async_trait]
pub trait ToolHost: Send {
    /// Editable and readable files of the scratch tree.
    fn list_files(&self) -> Vec<String>;
    fn read_file(&self, path: &str) -> Result<String, String>;
    /// Refused (with a reason for the model) for a path that is not editable.
    fn write_file(&mut self, path: &str, content: &str) -> Result<(), String>;
    /// Builds and tests the scratch tree: a short report, errors trimmed to what matters.
    async fn build_and_test(&mut self) -> String;
    /// Editable files that differ from the incumbent.
    fn changed_files(&self) -> BTreeMap<String, String>;
}

/// The rendered prompts for one proposal.
#[derive(Debug, Clone)]
pub struct Prompts {
    pub system: String,
    pub task: String,
    /// Template for feedback, with `{{message}}`.
    pub feedback: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OpenAI tool calling.
    Tools,
    /// SEARCH/REPLACE blocks and BUILD / SUBMIT lines, for servers without tool calling.
    Text,
}

#[derive(Debug, Clone)]
pub struct Limits {
    pub max_turns: usize,
    /// Prompt plus completion tokens for one proposal.
    pub max_tokens: u64,
    pub temperature: f64,
}

/// How a proposal attempt ended.
#[derive(Debug)]
pub struct Outcome {
    /// The change submitted, if any.
    pub change: Option<ProposedChange>,
    pub rationale: String,
    pub usage: Usage,
    /// Why it ended without a change, for the log.
    pub ended: String,
}

impl Outcome {
    fn submitted(change: ProposedChange, rationale: String, usage: Usage) -> Self {
        Outcome {
            change: Some(change),
            rationale,
            usage,
            ended: "submitted".into(),
        }
    }
}

fn tool_specs(with_params: bool) -> Value {
    let f = |name: &str, desc: &str, params: Value| json!({ "type": "function", "function": { "name": name, "description": desc, "parameters": params } });
    let none = json!({ "type": "object", "properties": {} });
    let mut tools = vec![
        f(
            "list_files",
            "List the files of the working tree.",
            none.clone(),
        ),
        f(
            "read_file",
            "Read a file, optionally only lines start_line..=end_line (1-based).",
            json!({ "type": "object", "properties": { "path": { "type": "string" }, "start_line": { "type": "integer" }, "end_line": { "type": "integer" } }, "required": ["path"] }),
        ),
        f(
            "replace_text",
            "Replace one exact occurrence of `old` with `new` in an editable file.",
            json!({ "type": "object", "properties": { "path": { "type": "string" }, "old": { "type": "string" }, "new": { "type": "string" } }, "required": ["path", "old", "new"] }),
        ),
        f(
            "write_file",
            "Replace the whole content of an editable file.",
            json!({ "type": "object", "properties": { "path": { "type": "string" }, "content": { "type": "string" } }, "required": ["path", "content"] }),
        ),
        f(
            "build_and_test",
            "Build the working tree and run the correctness test; returns errors if any.",
            none,
        ),
        f(
            "submit",
            "Submit the working tree as your candidate, with a one-line rationale. It is then verified and benchmarked.",
            json!({ "type": "object", "properties": { "rationale": { "type": "string" } }, "required": ["rationale"] }),
        ),
    ];
    if with_params {
        tools.push(f(
            "propose_params",
            "Propose a full parameter assignment instead of editing code.",
            json!({ "type": "object", "properties": { "params": { "type": "object" }, "rationale": { "type": "string" } }, "required": ["params"] }),
        ));
    }
    Value::Array(tools)
}

fn replace_once(
    host: &mut dyn ToolHost,
    path: &str,
    old: &str,
    new: &str,
) -> Result<String, String> {
    let text = host.read_file(path)?;
    match text.matches(old).count() {
        0 => Err(format!(
            "the text to replace was not found in {path}; read the file again and copy it exactly"
        )),
        1 => {
            host.write_file(path, &text.replacen(old, new, 1))?;
            Ok(format!("replaced one occurrence in {path}"))
        }
        n => Err(format!(
            "the text to replace occurs {n} times in {path}; include more surrounding lines"
        )),
    }
}

fn read_lines(
    host: &dyn ToolHost,
    path: &str,
    start: Option<u64>,
    end: Option<u64>,
) -> Result<String, String> {
    let text = host.read_file(path)?;
    if start.is_none() && end.is_none() {
        return Ok(text);
    }
    let lines: Vec<&str> = text.lines().collect();
    let s = start.unwrap_or(1).max(1) as usize;
    let e = (end.unwrap_or(lines.len() as u64) as usize).min(lines.len());
    if s > e {
        return Err(format!("{path} has {} lines", lines.len()));
    }
    Ok(lines[s - 1..e]
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{:>5} {l}\n", s + i))
        .collect())
}

enum Step {
    Continue(String),
    Done(ProposedChange, String),
}

async fn run_tool(host: &mut dyn ToolHost, call: &ToolCall, with_params: bool) -> Step {
    let args: Value = match serde_json::from_str(if call.arguments.trim().is_empty() {
        "{}"
    } else {
        &call.arguments
    }) {
        Ok(v) => v,
        Err(e) => {
            return Step::Continue(format!(
                "error: the arguments of {} are not valid JSON ({e}); send a JSON object",
                call.name
            ));
        }
    };
    let s = |k: &str| args.get(k).and_then(Value::as_str);
    let result = match (call.name.as_str(), with_params) {
        ("list_files", _) => Ok(host.list_files().join("\n")),
        ("read_file", _) => match s("path") {
            Some(p) => read_lines(
                host,
                p,
                args.get("start_line").and_then(Value::as_u64),
                args.get("end_line").and_then(Value::as_u64),
            ),
            None => Err("read_file needs a path".into()),
        },
        ("replace_text", _) => match (s("path"), s("old"), s("new")) {
            (Some(p), Some(o), Some(n)) if !o.is_empty() => replace_once(host, p, o, n),
            _ => Err("replace_text needs path, old (not empty) and new".into()),
        },
        ("write_file", _) => match (s("path"), s("content")) {
            (Some(p), Some(c)) => host.write_file(p, c).map(|()| format!("wrote {p}")),
            _ => Err("write_file needs path and content".into()),
        },
        ("build_and_test", _) => Ok(host.build_and_test().await),
        ("submit", _) => {
            let files = host.changed_files();
            if files.is_empty() {
                Err("nothing is changed yet: edit a file before submitting".into())
            } else {
                return Step::Done(
                    ProposedChange::Files(files),
                    s("rationale").unwrap_or("").to_string(),
                );
            }
        }
        ("propose_params", true) => match args.get("params").and_then(Value::as_object) {
            Some(p) => {
                let params: Params = p.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                return Step::Done(
                    ProposedChange::Params(params),
                    s("rationale").unwrap_or("").to_string(),
                );
            }
            None => Err("propose_params needs a params object".into()),
        },
        (other, _) => Err(format!(
            "there is no tool named {other:?}; use one of the declared tools"
        )),
    };
    Step::Continue(match result {
        Ok(text) => text,
        Err(e) => format!("error: {e}"),
    })
}

async fn run_text(host: &mut dyn ToolHost, reply: &str, with_params: bool) -> Step {
    let parsed = parse_text_reply(reply, &host.list_files());
    let mut notes = parsed.malformed.clone();
    for edit in &parsed.edits {
        let r = match edit {
            TextEdit::Replace {
                path,
                search,
                replace,
            } => replace_once(host, path, search, replace),
            TextEdit::WholeFile { path, content } => host
                .write_file(path, content)
                .map(|()| format!("wrote {path}")),
        };
        if let Err(e) = r {
            notes.push(e);
        }
    }
    if let Some(json) = parsed.params.as_deref().filter(|_| with_params) {
        match serde_json::from_str::<Params>(json) {
            Ok(p) => {
                return Step::Done(ProposedChange::Params(p), parsed.submit.unwrap_or_default());
            }
            Err(e) => notes.push(format!("PARAMS is not a JSON object of values: {e}")),
        }
    }
    if notes.is_empty()
        && let Some(why) = parsed.submit
    {
        let files = host.changed_files();
        if !files.is_empty() {
            return Step::Done(ProposedChange::Files(files), why);
        }
        notes.push("nothing is changed yet: edit a file before SUBMIT".into());
    }
    if parsed.build && notes.is_empty() {
        notes.push(host.build_and_test().await);
    }
    if notes.is_empty() {
        notes.push("no edit, BUILD or SUBMIT found; answer with SEARCH/REPLACE blocks, then BUILD or SUBMIT: <rationale>".into());
    }
    Step::Continue(notes.join("\n"))
}

/// Asks the model for one candidate.
pub async fn propose(
    client: &ModelClient,
    api_key: Option<&str>,
    host: &mut dyn ToolHost,
    prompts: &Prompts,
    protocol: Protocol,
    limits: &Limits,
    with_params: bool,
) -> Result<Outcome, ModelError> {
    let mut messages = vec![
        json!({ "role": "system", "content": prompts.system }),
        json!({ "role": "user", "content": prompts.task }),
    ];
    let mut usage = Usage {
        model: client.model.clone(),
        ..Usage::default()
    };
    let mut shortened = false;
    let feedback = |m: &str| prompts.feedback.replace("{{message}}", m);
    for _turn in 0..limits.max_turns {
        if usage.prompt_tokens + usage.completion_tokens >= limits.max_tokens {
            return Ok(Outcome {
                change: None,
                rationale: String::new(),
                usage,
                ended: "token cap for one proposal reached".into(),
            });
        }
        let mut body = json!({ "messages": messages, "temperature": limits.temperature });
        if protocol == Protocol::Tools {
            body["tools"] = tool_specs(with_params);
            body["tool_choice"] = json!("auto");
        }
        let reply: Reply = match client.chat(&body, api_key).await {
            Ok(r) => r,
            Err(ModelError::ContextLength(msg)) if !shortened && messages.len() > 4 => {
                // Keep the system and task prompts and the latest exchange; drop the middle.
                tracing::warn!("{msg}; dropping older turns");
                let tail = messages.split_off(messages.len() - 2);
                messages.truncate(2);
                messages.push(json!({ "role": "user", "content": feedback("Earlier turns were dropped to fit the context window; the working tree keeps your edits.") }));
                messages.extend(tail.into_iter().filter(|m| m["role"] != "tool"));
                shortened = true;
                continue;
            }
            Err(e) => return Err(e),
        };
        usage.prompt_tokens += reply.prompt_tokens;
        usage.completion_tokens += reply.completion_tokens;
        usage.requests += reply.requests;
        usage.latency_ms += reply.latency.as_millis() as u64;
        let mut assistant = reply.message.clone();
        assistant["role"] = json!("assistant");
        messages.push(assistant);
        if !reply.tool_calls.is_empty() {
            for call in &reply.tool_calls {
                match run_tool(host, call, with_params).await {
                    Step::Done(change, rationale) => {
                        return Ok(Outcome::submitted(change, rationale, usage));
                    }
                    Step::Continue(text) => messages
                        .push(json!({ "role": "tool", "tool_call_id": call.id, "content": text })),
                }
            }
            continue;
        }
        let text = reply.content.unwrap_or_default();
        if text.trim().is_empty() {
            messages.push(json!({ "role": "user", "content": feedback("Your reply was empty. Use the tools (or the text protocol) and submit when done.") }));
            continue;
        }
        match run_text(host, &text, with_params).await {
            Step::Done(change, rationale) => {
                return Ok(Outcome::submitted(change, rationale, usage));
            }
            Step::Continue(note) => {
                messages.push(json!({ "role": "user", "content": feedback(&note) }))
            }
        }
    }
    Ok(Outcome {
        change: None,
        rationale: String::new(),
        usage,
        ended: format!("no submission within {} turns", limits.max_turns),
    })
}
