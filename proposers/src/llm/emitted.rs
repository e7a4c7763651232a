//! Tool calls written into the message text instead of `tool_calls`: what many open models do
//! when their server's template does not turn them into calls. Recognised forms: Qwen/Hermes
//! `<tool_call>{...}</tool_call>` tags, a fenced ```json block, or the whole reply as one JSON
//! object; each `{"name": ..., "arguments": {...}}` (or `"parameters"`, or nested under
//! `"function"`) naming a declared tool.

use super::client::ToolCall;
use serde_json::Value;

/// One call from a JSON value, if it has the shape of one and names a declared tool.
fn call_from(v: &Value, declared: &[&str], index: usize) -> Option<ToolCall> {
    let v = v.get("function").unwrap_or(v);
    let name = v.get("name")?.as_str()?;
    if !declared.contains(&name) {
        return None;
    }
    let arguments = match v.get("arguments").or_else(|| v.get("parameters")) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "{}".to_string(),
    };
    Some(ToolCall {
        id: format!("text_call_{index}"),
        name: name.to_string(),
        arguments,
    })
}

/// The JSON texts a reply may hold calls in, in order.
fn candidates(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<tool_call>") {
        let after = &rest[start + "<tool_call>".len()..];
        let end = after.find("</tool_call>").unwrap_or(after.len());
        out.push(after[..end].trim().to_string());
        rest = &after[end..];
    }
    if !out.is_empty() {
        return out;
    }
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let body_start = after.find('\n').map_or(after.len(), |n| n + 1);
        let body = &after[body_start..];
        let end = body.find("```").unwrap_or(body.len());
        let block = body[..end].trim();
        if block.starts_with('{') || block.starts_with('[') {
            out.push(block.to_string());
        }
        rest = &body[end..];
        if end == body.len() {
            break;
        }
        rest = &rest[3..];
    }
    if out.is_empty() {
        let t = text.trim();
        if t.starts_with('{') || t.starts_with('[') {
            out.push(t.to_string());
        }
    }
    out
}

/// The tool calls written in `text`, or none when it holds none of a declared tool.
pub fn calls_in_text(text: &str, declared: &[&str]) -> Vec<ToolCall> {
    let mut calls = Vec::new();
    for c in candidates(text) {
        let Ok(v) = serde_json::from_str::<Value>(&c) else {
            continue;
        };
        let items = match v {
            Value::Array(items) => items,
            one => vec![one],
        };
        for item in &items {
            if let Some(call) = call_from(item, declared, calls.len()) {
                calls.push(call);
            }
        }
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: [&str; 3] = ["read_file", "replace_text", "submit"];

    #[test]
    fn tags_fences_and_bare_objects() {
        let tagged = "I'll look first.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"kernel.c\"}}\n</tool_call>";
        let c = calls_in_text(tagged, &TOOLS);
        assert_eq!(c.len(), 1);
        assert_eq!(
            (c[0].name.as_str(), c[0].arguments.as_str()),
            ("read_file", "{\"path\":\"kernel.c\"}")
        );
        let fenced = "```json\n{\"function\": {\"name\": \"submit\", \"parameters\": {\"rationale\": \"tiles\"}}}\n```";
        assert_eq!(calls_in_text(fenced, &TOOLS)[0].name, "submit");
        let bare = " {\"name\": \"replace_text\", \"arguments\": \"{\\\"path\\\": \\\"k.c\\\"}\"} ";
        assert_eq!(
            calls_in_text(bare, &TOOLS)[0].arguments,
            "{\"path\": \"k.c\"}"
        );
    }

    #[test]
    fn prose_code_and_unknown_tools_are_not_calls() {
        assert!(calls_in_text("Use a 4x4 tile.", &TOOLS).is_empty());
        assert!(calls_in_text("```c\nint x = 1;\n```", &TOOLS).is_empty());
        assert!(calls_in_text("{\"name\": \"rm_rf\", \"arguments\": {}}", &TOOLS).is_empty());
    }
}
