//! Parameter values as a JSON schema: each knob one of its declared values. Sent with the
//! request for values alone as `response_format`, so that a server which constrains decoding to
//! a schema (llama.cpp, Ollama, vLLM, SGLang, OpenAI, Together) cannot let a model answer with
//! values the task does not declare; and read back from a reply that is that JSON object alone.

use crate::ParamSpace;
use serde_json::{Value, json};

/// An object with every parameter, each one of its declared values, and nothing else.
/// Constraints between parameters cannot be written this way; they are checked on the answer.
pub fn schema(space: &ParamSpace) -> Value {
    let properties: serde_json::Map<String, Value> = space
        .values
        .iter()
        .map(|(k, allowed)| {
            let mut one = json!({ "enum": allowed });
            if let Some(t) = common_type(allowed) {
                one["type"] = json!(t);
            }
            (k.clone(), one)
        })
        .collect();
    let required: Vec<&String> = space.values.keys().collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// The JSON type all of `values` share, if they share one: strict servers (OpenAI's) want an
/// enum's type named beside it.
fn common_type(values: &[Value]) -> Option<&'static str> {
    let of = |v: &Value| match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => Some("integer"),
        Value::Number(_) => Some("number"),
        Value::String(_) => Some("string"),
        Value::Bool(_) => Some("boolean"),
        _ => None,
    };
    let mut types = values.iter().map(of);
    let first = types.next()??;
    types.try_fold(first, |t, next| match (t, next?) {
        (a, b) if a == b => Some(a),
        ("integer" | "number", "integer" | "number") => Some("number"),
        _ => None,
    })
}

/// The `response_format` of a request whose reply must match `schema` (OpenAI's structured
/// outputs, which the other servers named above read the same way).
pub fn response_format(schema: &Value) -> Value {
    json!({
        "type": "json_schema",
        "json_schema": { "name": "parameter_values", "strict": true, "schema": schema },
    })
}

/// The JSON object a reply consists of, alone or in one fenced block: what a server that
/// honoured the schema sends back. `None` for anything else (prose, a `PARAMS:` line).
pub fn bare_object(reply: &str) -> Option<String> {
    let mut text = reply.trim();
    if let Some(fenced) = text.strip_prefix("```") {
        let body = fenced.split_once('\n')?.1;
        text = body.trim_end().strip_suffix("```")?.trim();
    }
    let value: Value = serde_json::from_str(text).ok()?;
    value.is_object().then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn space() -> ParamSpace {
        let values = BTreeMap::from([
            ("BLOCK".to_string(), vec![json!(64), json!(128)]),
            ("ORDER".to_string(), vec![json!("ij"), json!("ji")]),
        ]);
        let constraints = BTreeMap::from([("fits".to_string(), "BLOCK <= 128".to_string())]);
        ParamSpace::new(values, &constraints).unwrap()
    }

    #[test]
    fn the_schema_lists_every_declared_value_and_requires_every_knob() {
        let s = schema(&space());
        assert_eq!(s["properties"]["BLOCK"]["enum"], json!([64, 128]));
        assert_eq!(s["properties"]["BLOCK"]["type"], "integer");
        assert_eq!(s["properties"]["ORDER"]["enum"], json!(["ij", "ji"]));
        assert_eq!(s["properties"]["ORDER"]["type"], "string");
        assert_eq!(s["required"], json!(["BLOCK", "ORDER"]));
        assert_eq!(s["additionalProperties"], json!(false));
        let f = response_format(&s);
        assert_eq!(f["type"], "json_schema");
        assert_eq!(f["json_schema"]["schema"], s);
    }

    #[test]
    fn a_reply_that_is_one_object_is_read_alone_or_fenced() {
        let obj = r#"{"BLOCK": 64, "ORDER": "ji"}"#;
        assert_eq!(bare_object(obj).as_deref(), Some(obj));
        assert_eq!(bare_object(&format!("\n{obj}\n")).as_deref(), Some(obj));
        assert_eq!(
            bare_object(&format!("```json\n{obj}\n```")).as_deref(),
            Some(obj)
        );
        assert_eq!(bare_object(&format!("PARAMS: {obj}")), None);
        assert_eq!(bare_object("[1, 2]"), None);
        assert_eq!(bare_object("```c\n#define BLOCK 64\n```"), None);
    }

    #[test]
    fn an_enum_names_its_type_only_when_its_values_share_one() {
        assert_eq!(common_type(&[json!(1), json!(2)]), Some("integer"));
        assert_eq!(common_type(&[json!(1), json!(2.5)]), Some("number"));
        assert_eq!(common_type(&[json!(true), json!(false)]), Some("boolean"));
        assert_eq!(common_type(&[json!(1), json!("a")]), None);
        assert_eq!(common_type(&[]), None);
    }
}
