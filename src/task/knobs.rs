//! Knobs a candidate adds to a task's parameter space: a line `#define NAME VALUE // values: a,
//! b, c` in the task's c-define parameter file declares NAME with those values. From the
//! incumbent that declares it on, the search explores the enlarged space, so a model that
//! proposes structure gets the values of its new knob found for it.

use super::Task;
use proposers::{ParamSpace, Params};
use sandbox::{FileTree, ParamFormat, param_scalar as scalar, param_token as token};
use serde_json::Value;
use std::collections::BTreeMap;

/// What follows a knob's value in its `#define` line, before its values.
pub const DECLARE: &str = "// values:";
/// The most values one added knob may declare: a knob, not a table of constants.
const MAX_VALUES: usize = 16;

/// Knobs by name, with their declared values.
pub type Knobs = BTreeMap<String, Vec<Value>>;

/// The knobs a c-define file declares, or why a declaration is not one.
fn declared(text: &str) -> Result<Knobs, String> {
    let mut out = Knobs::new();
    for line in text.lines() {
        let Some((define, list)) = line.split_once(DECLARE) else {
            continue;
        };
        let words: Vec<&str> = define.split_whitespace().collect();
        let [hash, name, value] = words[..] else {
            return Err(format!(
                "{line:?}: declare a knob as `#define NAME VALUE {DECLARE} a, b, c`"
            ));
        };
        if hash != "#define"
            || name.starts_with(|c: char| c.is_ascii_digit())
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(format!(
                "{line:?}: declare a knob as `#define NAME VALUE {DECLARE} a, b, c`, NAME an identifier"
            ));
        }
        let values: Vec<Value> = list
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(scalar)
            .collect();
        if values.len() < 2 || values.len() > MAX_VALUES {
            return Err(format!(
                "knob {name}: declare 2 to {MAX_VALUES} values, not {}",
                values.len()
            ));
        }
        if !values.contains(&scalar(value)) {
            return Err(format!(
                "knob {name}: its value {value} is not among its declared values"
            ));
        }
        out.insert(name.to_string(), values);
    }
    Ok(out)
}

impl Task {
    /// The knobs `tree`'s parameter file adds to task.toml's `[params]` (a knob task.toml
    /// declares keeps task.toml's values); none for a task without c-define parameters.
    pub fn added_knobs(&self, tree: &FileTree) -> Result<Knobs, String> {
        let Some(spec) = self
            .params
            .as_ref()
            .filter(|s| s.format == ParamFormat::CDefine)
        else {
            return Ok(Knobs::new());
        };
        let Some(bytes) = tree.get(&spec.file) else {
            return Ok(Knobs::new());
        };
        let text = String::from_utf8_lossy(bytes);
        let mut knobs = declared(&text).map_err(|e| format!("{}: {e}", spec.file))?;
        knobs.retain(|k, _| !spec.values.contains_key(k));
        Ok(knobs)
    }

    /// The parameter space as of `tree`: task.toml's, with the knobs its parameter file adds.
    pub fn space_of(&self, tree: &FileTree) -> Result<ParamSpace, String> {
        let spec = self
            .params
            .as_ref()
            .ok_or("the task declares no [params]")?;
        let mut values = spec.values.clone();
        values.extend(self.added_knobs(tree)?);
        ParamSpace::new(values, &spec.constraints).map_err(|e| e.to_string())
    }

    /// The parameter file for `p`, written over `tree`'s: only the lines whose values change are
    /// rewritten, so the declarations of the knobs the file adds, its comments and its order stay.
    pub fn render_params(&self, tree: &FileTree, p: &Params) -> Result<String, String> {
        let spec = self
            .params
            .as_ref()
            .ok_or("the task declares no [params]")?;
        Ok(match tree.get(&spec.file).map(std::str::from_utf8) {
            Some(Ok(old)) => sandbox::rewrite_params(spec.format, old, p),
            _ => sandbox::render_params(spec.format, p),
        })
    }
}

/// The knobs `after` declares that `before` did not, as `NAME (a, b, c)`: what a candidate
/// added, for its ledger entry.
pub fn new_knobs(before: &Knobs, after: &Knobs) -> Vec<String> {
    after
        .iter()
        .filter(|(k, _)| !before.contains_key(*k))
        .map(|(k, v)| {
            let list: Vec<String> = v.iter().map(token).collect();
            format!("{k} ({})", list.join(", "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::declared;
    use serde_json::Value;

    #[test]
    fn a_declaration_gives_a_knob_and_its_values() {
        let k = declared("#define TILE 64\n#define UNROLL 4 // values: 1, 2, 4, 8\n").unwrap();
        assert_eq!(k.len(), 1);
        assert_eq!(k["UNROLL"], [1, 2, 4, 8].map(Value::from).to_vec());
        let s = declared("#define ORDER ikj // values: ijk, ikj\n").unwrap();
        assert_eq!(s["ORDER"][1], Value::from("ikj"));
    }

    #[test]
    fn a_bad_declaration_says_why() {
        for (text, why) in [
            ("#define UNROLL 4 // values: 4\n", "2 to 16 values"),
            ("#define UNROLL 3 // values: 1, 2, 4\n", "not among"),
            ("#define 9X 1 // values: 1, 2\n", "identifier"),
            (
                "#define UNROLL (2*2) + 1 // values: 1, 2\n",
                "declare a knob as",
            ),
        ] {
            let e = declared(text).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
        }
    }
}
