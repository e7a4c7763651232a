//! Parameter assignments as files: rendering an assignment into the file a task's build reads
//! (`#define`s for C, a JSON object, or `KEY=VALUE` lines), and reading one back, so that the
//! starting assignment is whatever the task's file says.

use crate::SandboxError;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamFormat {
    /// `#define KEY VALUE` lines; strings are written as bare tokens.
    CDefine,
    /// One JSON object.
    Json,
    /// `KEY=VALUE` lines (shell or `.env` style).
    Env,
}

impl ParamFormat {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "c-define" => Some(ParamFormat::CDefine),
            "json" => Some(ParamFormat::Json),
            "env" => Some(ParamFormat::Env),
            _ => None,
        }
    }
}

/// A value as it is written in a rendered file: strings bare, everything else as JSON.
pub fn param_token(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub fn render_params(format: ParamFormat, values: &BTreeMap<String, Value>) -> String {
    match format {
        ParamFormat::CDefine => values
            .iter()
            .map(|(k, v)| format!("#define {k} {}\n", param_token(v)))
            .collect(),
        ParamFormat::Env => values
            .iter()
            .map(|(k, v)| format!("{k}={}\n", param_token(v)))
            .collect(),
        ParamFormat::Json => {
            let obj: serde_json::Map<String, Value> =
                values.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            format!("{:#}\n", Value::Object(obj))
        }
    }
}

/// `values` written into `old`, the file as the incumbent has it: only the lines of the values
/// that changed are rewritten (their comments kept), every other line stays where and as it
/// was, and a key the file lacks is appended. So the diff a person reviews is the change. A JSON
/// file is rendered whole.
pub fn rewrite_params(format: ParamFormat, old: &str, values: &BTreeMap<String, Value>) -> String {
    if format == ParamFormat::Json {
        return render_params(format, values);
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut out = String::with_capacity(old.len() + 64);
    for line in old.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let Some((key, value, comment)) = split_assignment(format, body) else {
            out.push_str(line);
            continue;
        };
        let Some(new) = values.get(key) else {
            out.push_str(line);
            continue;
        };
        seen.insert(key.to_string());
        if param_scalar(value.trim()) == *new {
            out.push_str(line);
            continue;
        }
        let token = param_token(new);
        let written = match format {
            ParamFormat::CDefine => format!("#define {key} {token}"),
            _ => format!("{key}={token}"),
        };
        let comment = if comment.is_empty() {
            String::new()
        } else {
            format!(" {}", comment.trim_start())
        };
        out.push_str(&format!("{written}{comment}{end}"));
    }
    let missing: BTreeMap<String, Value> = values
        .iter()
        .filter(|(k, _)| !seen.contains(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !missing.is_empty() {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&render_params(format, &missing));
    }
    out
}

/// A line's key, its value text and the comment after it, when the line assigns one.
fn split_assignment(format: ParamFormat, line: &str) -> Option<(&str, &str, &str)> {
    match format {
        ParamFormat::CDefine => {
            let cut = [line.find("//"), line.find("/*")]
                .into_iter()
                .flatten()
                .min();
            let (code, comment) = line.split_at(cut.unwrap_or(line.len()));
            let rest = code.trim_start().strip_prefix("#define")?;
            let rest = rest.strip_prefix([' ', '\t'])?.trim_start();
            let (key, value) = rest.split_once([' ', '\t']).unwrap_or((rest, ""));
            Some((key, value, comment))
        }
        ParamFormat::Env => {
            let t = line.trim_start();
            if t.starts_with('#') {
                return None;
            }
            let (key, value) = line.split_once('=')?;
            Some((key.trim(), value, ""))
        }
        ParamFormat::Json => None,
    }
}

/// A value read from a rendered file: a number, boolean or quoted string as JSON reads it,
/// anything else as a bare string.
pub fn param_scalar(s: &str) -> Value {
    serde_json::from_str::<Value>(s).unwrap_or_else(|_| Value::String(s.to_string()))
}

/// Reads an assignment back from a rendered file; numbers come back as numbers.
pub fn parse_params(
    format: ParamFormat,
    text: &str,
) -> Result<BTreeMap<String, Value>, SandboxError> {
    let mut out = BTreeMap::new();
    match format {
        ParamFormat::CDefine => {
            for line in text.lines() {
                // A comment after the value (`// values: ...`, `/* ... */`) is not part of it.
                let line = line.split("//").next().unwrap_or_default();
                let line = line.split("/*").next().unwrap_or_default();
                let mut words = line.split_whitespace();
                if words.next() == Some("#define")
                    && let Some(key) = words.next()
                {
                    let rest: Vec<&str> = words.collect();
                    out.insert(key.to_string(), param_scalar(&rest.join(" ")));
                }
            }
        }
        ParamFormat::Env => {
            for line in text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
            {
                if let Some((k, v)) = line.split_once('=') {
                    out.insert(k.trim().to_string(), param_scalar(v.trim()));
                }
            }
        }
        ParamFormat::Json => {
            let v: Value = serde_json::from_str(text).map_err(|e| SandboxError::Param {
                name: "(file)".into(),
                why: format!("not JSON: {e}"),
            })?;
            let Value::Object(map) = v else {
                return Err(SandboxError::Param {
                    name: "(file)".into(),
                    why: "not a JSON object".into(),
                });
            };
            out.extend(map);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_format() {
        let mut v = BTreeMap::new();
        v.insert("TILE".to_string(), Value::from(64));
        v.insert("ORDER".to_string(), Value::from("ikj"));
        for f in [ParamFormat::CDefine, ParamFormat::Json, ParamFormat::Env] {
            assert_eq!(
                parse_params(f, &render_params(f, &v)).ok(),
                Some(v.clone()),
                "{f:?}"
            );
        }
    }

    #[test]
    fn a_rewrite_changes_only_the_lines_whose_values_changed() {
        let old = "/* tuned */\n#define LOOP_ORDER 0\n#define ROWS 1 // values: 1, 2\n#define BLOCK_K 0\n#define BLOCK_N 0\n";
        let mut v = parse_params(ParamFormat::CDefine, old).unwrap();
        v.insert("ROWS".into(), Value::from(2));
        v.insert("BLOCK_N".into(), Value::from(256));
        assert_eq!(
            rewrite_params(ParamFormat::CDefine, old, &v),
            "/* tuned */\n#define LOOP_ORDER 0\n#define ROWS 2 // values: 1, 2\n#define BLOCK_K 0\n#define BLOCK_N 256\n"
        );
        v.insert("NEW".into(), Value::from(3));
        assert!(
            rewrite_params(ParamFormat::CDefine, old, &v)
                .ends_with("#define BLOCK_N 256\n#define NEW 3\n")
        );
        let env = "# threads\nTHREADS=4\nBATCH=8\n";
        let mut e = parse_params(ParamFormat::Env, env).unwrap();
        e.insert("BATCH".into(), Value::from(16));
        assert_eq!(
            rewrite_params(ParamFormat::Env, env, &e),
            "# threads\nTHREADS=4\nBATCH=16\n"
        );
    }

    #[test]
    fn a_comment_after_a_define_is_not_its_value() {
        let text = "#define TILE 64 // values: 16, 32, 64\n#define ORDER ikj /* rows first */\n";
        let p = parse_params(ParamFormat::CDefine, text).unwrap();
        assert_eq!(p["TILE"], Value::from(64));
        assert_eq!(p["ORDER"], Value::from("ikj"));
    }
}
