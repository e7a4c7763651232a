//! Kernel Tuner's files, read: a cache file (`tune_kernel(..., cache=...)`, JSON, optionally
//! gzip-compressed) with every configuration it measured and each one's repeats, and the T1
//! tuning description beside it (each parameter's default, and the conditions a configuration
//! must meet to be compiled at all, as Python expressions).

use anyhow::{Context as _, Result, bail};
use proposers::Params;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;

/// What Kernel Tuner recorded of one configuration.
#[derive(Debug, Clone)]
pub enum Measured {
    /// The repeats of its objective (`times`, in ms).
    Times(Vec<f64>),
    /// It did not compile, run or launch: Kernel Tuner's word for it
    /// (`CompilationFailedConfig`, `RuntimeFailedConfig`, `InvalidConfig`).
    Failed(String),
}

/// A Kernel Tuner cache file, read.
#[derive(Debug, Clone)]
pub struct KtCache {
    pub device: String,
    pub kernel: String,
    /// Each parameter's declared values, in `tune_params_keys` order.
    pub params: Vec<(String, Vec<Value>)>,
    /// Every configuration in the file, in its keys' order.
    pub entries: Vec<(Params, Measured)>,
}

#[derive(Deserialize)]
struct RawCache {
    #[serde(default)]
    device_name: String,
    #[serde(default)]
    kernel_name: String,
    tune_params_keys: Vec<String>,
    tune_params: BTreeMap<String, Vec<Value>>,
    #[serde(default)]
    objective: Option<String>,
    cache: BTreeMap<String, serde_json::Map<String, Value>>,
}

/// Reads `path` (`.json` or `.json.gz`).
fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut text = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .with_context(|| format!("{}: not a gzip-compressed text", path.display()))?;
        Ok(text)
    } else {
        String::from_utf8(bytes).with_context(|| format!("{}: not UTF-8 text", path.display()))
    }
}

impl KtCache {
    /// What the file holds of `p`.
    pub fn get(&self, p: &Params) -> Option<&Measured> {
        self.entries.iter().find(|(q, _)| q == p).map(|(_, m)| m)
    }

    pub fn load(path: &Path) -> Result<Self> {
        let shown = path.display();
        let raw: RawCache = serde_json::from_str(&read_text(path)?).with_context(|| {
            format!(
                "{shown} is not a Kernel Tuner cache file (tune_params_keys, tune_params and cache)"
            )
        })?;
        if let Some(o) = raw.objective.as_deref().filter(|o| *o != "time") {
            bail!(
                "{shown}: objective {o:?}; polymorph replays caches whose objective is `time`, with each configuration's repeats in `times`"
            );
        }
        let mut params = Vec::new();
        for k in &raw.tune_params_keys {
            let values = raw
                .tune_params
                .get(k)
                .with_context(|| format!("{shown}: tune_params has no {k}"))?;
            if values.is_empty() {
                bail!("{shown}: tune_params.{k} has no values");
            }
            params.push((k.clone(), values.clone()));
        }
        let mut entries = Vec::new();
        for (key, e) in &raw.cache {
            let mut p = Params::new();
            for (k, _) in &params {
                let v = e
                    .get(k)
                    .with_context(|| format!("{shown}: cache entry {key} has no {k}"))?;
                p.insert(k.clone(), v.clone());
            }
            let measured = match e.get("time") {
                Some(Value::String(why)) => Measured::Failed(why.clone()),
                Some(Value::Number(_)) => {
                    let times: Vec<f64> = e
                        .get("times")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_f64).collect())
                        .unwrap_or_default();
                    if times.len() < 3 || times.iter().any(|t| !(t.is_finite() && *t > 0.0)) {
                        bail!(
                            "{shown}: cache entry {key} needs at least three positive repeats in `times` (a warm-up, one to draw, one for the truth; it has {})",
                            times.len()
                        );
                    }
                    Measured::Times(times)
                }
                _ => bail!("{shown}: cache entry {key} has no `time`"),
            };
            entries.push((p, measured));
        }
        if entries.is_empty() {
            bail!("{shown}: the cache holds no configuration");
        }
        Ok(KtCache {
            device: raw.device_name,
            kernel: raw.kernel_name,
            params,
            entries,
        })
    }
}

/// The T1 description's defaults and conditions, the conditions translated for polymorph.
#[derive(Debug, Clone, Default)]
pub struct T1 {
    pub defaults: Params,
    /// Each condition as polymorph's `[params.constraints]` writes it.
    pub conditions: Vec<String>,
}

impl T1 {
    pub fn load(path: &Path) -> Result<Self> {
        let shown = path.display();
        let doc: Value = serde_json::from_str(&read_text(path)?)
            .with_context(|| format!("{shown} is not JSON"))?;
        let space = doc
            .get("ConfigurationSpace")
            .with_context(|| format!("{shown}: no ConfigurationSpace (is it a T1 file?)"))?;
        let mut defaults = Params::new();
        for p in space["TuningParameters"].as_array().into_iter().flatten() {
            if let (Some(name), Some(d)) = (p["Name"].as_str(), p.get("Default")) {
                defaults.insert(name.to_string(), d.clone());
            }
        }
        let mut conditions = Vec::new();
        for c in space["Conditions"].as_array().into_iter().flatten() {
            let e = c["Expression"]
                .as_str()
                .with_context(|| format!("{shown}: a condition without an Expression"))?;
            conditions.push(translate(e).with_context(|| format!("{shown}: condition {e:?}"))?);
        }
        Ok(T1 {
            defaults,
            conditions,
        })
    }
}

/// A Python condition over the parameters (`a==0 or b % 32 != 0`) as polymorph's constraint
/// language (evalexpr) writes it: `and`, `or`, `not`, `True`, `False` and `**` by their
/// operators; integer `//` is evalexpr's `/` on integers. What has no counterpart (`in`,
/// `if`, lists, strings) is refused.
pub fn translate(python: &str) -> Result<String> {
    let mut out = String::new();
    let mut chars = python.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_alphabetic() || c == '_' {
            let mut word = String::from(c);
            while let Some(&n) = chars
                .peek()
                .filter(|n| n.is_ascii_alphanumeric() || **n == '_')
            {
                word.push(n);
                chars.next();
            }
            let token = match word.as_str() {
                "and" => " && ",
                "or" => " || ",
                "not" => "!",
                "True" => "true",
                "False" => "false",
                "in" | "if" | "else" | "for" | "is" | "lambda" => {
                    bail!("`{word}` has no counterpart in polymorph's constraints")
                }
                w => w,
            };
            out.push_str(token);
        } else if c == '/' && chars.peek() == Some(&'/') {
            chars.next();
            out.push('/');
        } else if c == '*' && chars.peek() == Some(&'*') {
            chars.next();
            out.push('^');
        } else if matches!(c, '[' | ']' | '{' | '}' | '"' | '\'' | ':' | ';') {
            bail!("`{c}` has no counterpart in polymorph's constraints");
        } else {
            out.push(c);
        }
    }
    Ok(out.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn python_conditions_become_constraints() {
        assert_eq!(
            translate("use_padding==0 or block_size_x % 32 != 0").unwrap(),
            "use_padding==0 || block_size_x % 32 != 0"
        );
        assert_eq!(
            translate("not (a and b) or c // 2 ** 3 <= True").unwrap(),
            "! (a && b) || c / 2 ^ 3 <= true"
        );
        assert!(translate("a in [1, 2]").is_err());
        assert!(translate("'x' == b").is_err());
        // A word that only contains a keyword is a name.
        assert_eq!(
            translate("order_index>=android").unwrap(),
            "order_index>=android"
        );
    }
}
