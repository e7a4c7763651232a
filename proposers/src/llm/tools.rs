//! The agent's tools and edits: the tool declarations, and each action on the scratch tree the
//! model can ask for (through a tool call, a call written in text, or a text-protocol block),
//! with the answers a model can act on: a protected file, a bad argument, a block that does not
//! match, an edit already applied or one that changes nothing is feedback, never a crash.

use super::client::ToolCall;
use super::host::{BuildReport, ToolHost};
use crate::{Params, ProposedChange};
use serde_json::{Value, json};

/// The names of the declared tools (for calls written in text).
pub fn tool_names(with_params: bool) -> Vec<&'static str> {
    let mut names = vec![
        "list_files",
        "read_file",
        "replace_text",
        "write_file",
        "build_and_test",
        "submit",
    ];
    if with_params {
        names.push("propose_params");
    }
    names
}

/// The path the model meant: as given when it exists, else the one editable file whose name
/// matches (a model that writes `src/kernel.c` or `path/of/kernel.c` for `kernel.c`).
pub fn resolve_path(host: &dyn ToolHost, path: &str) -> String {
    let files = host.list_files();
    if files.iter().any(|f| f == path) {
        return path.to_string();
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    let matches: Vec<&String> = files
        .iter()
        .filter(|f| f.rsplit('/').next() == Some(name) && host.is_editable(f))
        .collect();
    match matches.as_slice() {
        [one] => (*one).clone(),
        _ => path.to_string(),
    }
}

/// `params` if the task allows them, or why not, in the words every protocol sends back.
pub fn usable_params(host: &dyn ToolHost, params: Params) -> Result<Params, String> {
    host.check_params(&params)
        .map(|()| params)
        .map_err(|e| format!("those values cannot be used: {e}"))
}

/// The tools' declarations; with parameters, `propose_params` takes the values `schema` allows.
pub fn tool_specs(with_params: bool, schema: Option<&Value>) -> Value {
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
        let params = schema
            .cloned()
            .unwrap_or_else(|| json!({ "type": "object" }));
        tools.push(f(
            "propose_params",
            "Propose a full parameter assignment instead of editing code.",
            json!({ "type": "object", "properties": { "params": params, "rationale": { "type": "string" } }, "required": ["params"] }),
        ));
    }
    Value::Array(tools)
}

/// `path` when it names a file, else the one editable file that holds `old` (a small model
/// writes a SEARCH/REPLACE block with no path line, or with a line of prose for its path).
fn holding(host: &dyn ToolHost, path: &str, old: &str) -> String {
    let files = host.list_files();
    if old.trim().is_empty() || files.iter().any(|f| f == path) {
        return path.to_string();
    }
    let mut holders = files
        .iter()
        .filter(|f| host.is_editable(f))
        .filter(|f| host.read_file(f).is_ok_and(|t| t.contains(old)));
    match (holders.next(), holders.next()) {
        (Some(one), None) => one.clone(),
        _ => path.to_string(),
    }
}

pub fn replace_once(
    host: &mut dyn ToolHost,
    path: &str,
    old: &str,
    new: &str,
) -> Result<String, String> {
    let path = holding(host, &resolve_path(host, path), old);
    if old == new {
        return Err(format!(
            "the text to find and its replacement are identical: that changes nothing in {path}"
        ));
    }
    let text = host.read_file(&path)?;
    match text.matches(old).count() {
        // Models often send the same edit again after it worked: that is no error.
        0 if !new.is_empty() && text.contains(new) => {
            Ok(format!("already applied: {path} already has that text"))
        }
        0 => Err(format!(
            "the text to replace was not found in {path}; read the file again and copy it exactly"
        )),
        1 => {
            host.write_file(&path, &text.replacen(old, new, 1))?;
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
    let path = resolve_path(host, path);
    let text = host.read_file(&path)?;
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

/// What one action led to.
pub enum Step {
    /// An answer for the model; `failed` when it reports an error.
    Continue {
        text: String,
        failed: bool,
    },
    Done(ProposedChange, String),
}

/// Performs one tool call.
pub async fn run_tool(host: &mut dyn ToolHost, call: &ToolCall, with_params: bool) -> Step {
    let args: Value = match serde_json::from_str(if call.arguments.trim().is_empty() {
        "{}"
    } else {
        &call.arguments
    }) {
        Ok(v) => v,
        Err(e) => {
            return Step::Continue {
                text: format!(
                    "error: the arguments of {} are not valid JSON ({e}); send a JSON object",
                    call.name
                ),
                failed: true,
            };
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
            (Some(p), Some(c)) => {
                let p = resolve_path(host, p);
                host.write_file(&p, c).map(|()| format!("wrote {p}"))
            }
            _ => Err("write_file needs path and content".into()),
        },
        ("build_and_test", _) => {
            let BuildReport { passed, text } = host.build_and_test().await;
            if passed { Ok(text) } else { Err(text) }
        }
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
                match usable_params(host, params) {
                    Ok(params) => {
                        return Step::Done(
                            ProposedChange::Params(params),
                            s("rationale").unwrap_or("").to_string(),
                        );
                    }
                    Err(why) => Err(why),
                }
            }
            None => Err("propose_params needs a params object".into()),
        },
        (other, _) => Err(format!(
            "there is no tool named {other:?}; use one of the declared tools"
        )),
    };
    match result {
        Ok(text) => Step::Continue {
            text,
            failed: false,
        },
        Err(e) => Step::Continue {
            text: format!("error: {e}"),
            failed: true,
        },
    }
}
