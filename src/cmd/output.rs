//! How commands print: JSON for `--json`, table cells, scores and coloured diffs for people.

use anyhow::Result;
use serde_json::Value;

/// `println!` for what a person reads, which may hold candidate text (a note, a reason, a
/// command's output): its control and invisible characters are written out, not obeyed.
macro_rules! say {
    () => { println!() };
    ($($t:tt)*) => { println!("{}", sandbox::shown(&format!($($t)*))) };
}
pub(crate) use say;

/// A diff on stdout, coloured when stdout is a terminal; its control and invisible characters
/// written out either way.
pub fn print_diff(diff: &str) {
    use std::io::IsTerminal;
    let diff = sandbox::shown(diff);
    if !std::io::stdout().is_terminal() {
        print!("{diff}");
        return;
    }
    for line in diff.lines() {
        let colour = match line.as_bytes().first() {
            _ if line.starts_with("+++")
                || line.starts_with("---")
                || line.starts_with("diff ") =>
            {
                "1"
            }
            Some(b'+') => "32",
            Some(b'-') => "31",
            Some(b'@') => "36",
            _ => "",
        };
        if colour.is_empty() {
            println!("{line}")
        } else {
            println!("\x1b[{colour}m{line}\x1b[0m")
        }
    }
}

/// A JSON value as a table cell: strings bare, null as `null_as`.
pub fn cell(v: &Value, null_as: &str) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => null_as.to_string(),
        other => other.to_string(),
    }
}

/// Items joined with "; ", or `empty` when there are none.
pub fn joined(items: &[String], empty: &str) -> String {
    if items.is_empty() {
        empty.to_string()
    } else {
        items.join("; ")
    }
}

pub fn fmt_score(x: Option<f64>) -> String {
    x.map_or("-".to_string(), |v| format!("{v:.4}"))
}

pub fn print_json(v: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}
