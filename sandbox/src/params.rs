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
    fn a_comment_after_a_define_is_not_its_value() {
        let text = "#define TILE 64 // values: 16, 32, 64\n#define ORDER ikj /* rows first */\n";
        let p = parse_params(ParamFormat::CDefine, text).unwrap();
        assert_eq!(p["TILE"], Value::from(64));
        assert_eq!(p["ORDER"], Value::from("ikj"));
    }
}
