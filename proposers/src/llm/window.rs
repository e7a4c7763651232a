//! Keeping a conversation within the model's context window. Long tool results of older turns
//! are elided on every request (the model can read again). Before a request would fill the
//! window (its prompt past `FILL` of it, with the reply's room kept), the older turns are
//! replaced by one message saying what was done in them, and the latest turns kept whole; the
//! server's own error for a prompt that is still too long drops them instead. The size is the
//! server's count where it offers one (llama.cpp's `/tokenize`), else a conservative estimate.
//! A reply cut short is kept as its first lines and a sentence, never whole.

use super::client::{CHARS_PER_TOKEN, Cut};
use serde_json::{Value, json};

/// Tool results longer than this are elided from older turns.
const STALE_RESULT_CHARS: usize = 2_000;
/// Messages at the end of the conversation always kept whole.
pub const RECENT_MESSAGES: usize = 4;
/// Share of the window a prompt and its reply's room may fill before older turns are summarised.
const FILL: f64 = 0.9;
/// Characters of each older message kept in the summary.
const SUMMARY_LINE: usize = 120;

/// Replaces long tool results of older turns with a line saying so.
pub fn elide_stale_results(messages: &mut [Value]) {
    let keep_from = messages.len().saturating_sub(RECENT_MESSAGES);
    for m in messages.iter_mut().take(keep_from).skip(2) {
        let long = m["content"]
            .as_str()
            .is_some_and(|c| c.len() > STALE_RESULT_CHARS);
        if m["role"] == "tool" && long {
            m["content"] = json!(
                "(a long result of an earlier turn, elided; call the tool again if you need it)"
            );
        }
    }
}

/// Tokens a request carries beyond its messages and tools: the fields the client adds (model,
/// stream options, reply cap) and the chat template's markers around each message.
const REQUEST_OVERHEAD: u64 = 100;

/// The estimated tokens of a request body, as the server will see it.
pub fn estimate(body: &Value) -> u64 {
    (body.to_string().len() / CHARS_PER_TOKEN) as u64 + REQUEST_OVERHEAD
}

/// The most prompt tokens a request may carry in `window`, keeping `reply` tokens for the reply.
pub fn budget(window: u64, reply: Option<u64>) -> u64 {
    ((window as f64 * FILL) as u64).saturating_sub(reply.unwrap_or(0))
}

/// Replaces the messages between the task prompt (the first two) and the last `keep` with one
/// message saying what they did; `false` when there is nothing to replace. The kept tail never
/// starts with a tool result whose call was summarised.
pub fn summarise(messages: &mut Vec<Value>, keep: usize, wrap: impl Fn(&str) -> Value) -> bool {
    let mut cut = messages.len().saturating_sub(keep).max(2);
    while cut < messages.len() && messages[cut]["role"] == "tool" {
        cut += 1;
    }
    if cut <= 2 {
        return false;
    }
    let older: Vec<Value> = messages.drain(2..cut).collect();
    let lines: Vec<String> = older.iter().filter_map(line_of).collect();
    let note = format!(
        "The {} earlier messages of this conversation were summarised to keep the prompt within the model's context window (the working tree keeps every edit):\n{}",
        older.len(),
        lines.join("\n")
    );
    messages.insert(2, wrap(&note));
    true
}

/// One line for one older message: what the model called or said, what came back.
fn line_of(m: &Value) -> Option<String> {
    let short = |s: &str| -> String {
        let first = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        first.chars().take(SUMMARY_LINE).collect()
    };
    let calls: Vec<String> = m["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let name = c.pointer("/function/name").and_then(Value::as_str);
            let args = c.pointer("/function/arguments").and_then(Value::as_str);
            format!("{}({})", name.unwrap_or("?"), short(args.unwrap_or("")))
        })
        .collect();
    let text = m["content"].as_str().map(short).unwrap_or_default();
    match (m["role"].as_str()?, calls.is_empty()) {
        ("assistant", false) => Some(format!("- you called {}", calls.join(", "))),
        ("assistant", true) if !text.is_empty() => Some(format!("- you wrote: {text}")),
        ("tool", _) => Some(format!("  -> {text}")),
        ("user", _) if !text.is_empty() => Some(format!("- polymorph said: {text}")),
        _ => None,
    }
}

/// Lines of a cut reply kept in the conversation: enough to show what it was doing.
const CUT_KEPT_LINES: usize = 20;

/// A cut reply as the conversation keeps it: its first lines and a sentence saying why the rest
/// is gone, so a reply that ran to the cap is not fed back whole on every later turn.
pub fn cut_short(text: &str, cut: Cut) -> String {
    let kept: Vec<&str> = text.lines().take(CUT_KEPT_LINES).collect();
    format!(
        "{}\n[polymorph cut this reply here: {}; the rest is not kept]",
        kept.join("\n"),
        cut.said()
    )
}

/// After the server said the prompt is too long: the system and task prompts, `note`, and the
/// latest exchange without its tool results (whose calls are gone).
pub fn drop_middle(messages: &mut Vec<Value>, note: Value) {
    let tail = messages.split_off(messages.len().saturating_sub(2).max(2));
    messages.truncate(2);
    messages.push(note);
    messages.extend(tail.into_iter().filter(|m| m["role"] != "tool"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: &str) -> Value {
        json!({ "role": "assistant", "content": null, "tool_calls": [{ "id": "c", "type": "function", "function": { "name": name, "arguments": args } }] })
    }

    fn result(text: &str) -> Value {
        json!({ "role": "tool", "tool_call_id": "c", "content": text })
    }

    #[test]
    fn older_turns_become_one_summary_and_no_tool_result_is_orphaned() {
        let mut m = vec![
            json!({ "role": "system", "content": "sys" }),
            json!({ "role": "user", "content": "task" }),
            call("read_file", "{\"path\": \"kernel.c\"}"),
            result("#include <stdio.h>\nint main..."),
            call("build_and_test", "{}"),
            result("build failed: kernel.c:3: error: expected ';'"),
            call("replace_text", "{\"path\": \"kernel.c\"}"),
            result("replaced 1 occurrence"),
        ];
        // Keeping the last 3 would start the tail at a tool result: the cut moves past it, to
        // the call whose result it is.
        let wrap = |t: &str| json!({ "role": "user", "content": t });
        assert!(summarise(&mut m, 3, wrap));
        assert_eq!(m.len(), 5, "{m:?}");
        assert_eq!(m[3]["role"], "assistant");
        let note = m[2]["content"].as_str().unwrap_or_default();
        assert!(note.contains("The 4 earlier messages"), "{note}");
        assert!(note.contains("- you called build_and_test({})"), "{note}");
        assert!(
            note.contains("-> build failed: kernel.c:3: error"),
            "{note}"
        );
        assert!(!summarise(&mut m, 3, |t| json!(t)), "nothing older left");
        assert_eq!(budget(8192, Some(1024)), 6348);
    }
}
