//! Branches a candidate edits that its own parameters do not compile: before a candidate is
//! accepted, it is built and tested again with each other value of every knob that an `#if`
//! names in a file it changes, so that no broken branch waits for a later search to pick it.

use super::failure::Failure;
use super::harness::Harness;
use crate::record::Stage;
use sandbox::{FileTree, ParamFormat};

/// The preprocessor directive a line holds (`if`, `elif`, `endif`, ...) and what follows it;
/// the agent's view of the files (`agent_host::fold`) reads the same lines.
pub(crate) fn directive(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    Some(rest.split_at(end))
}

/// What follows `#if`, `#elif`, `#ifdef` or `#ifndef` on a line, when the line is one.
fn conditional(line: &str) -> Option<&str> {
    directive(line)
        .filter(|(word, rest)| {
            matches!(*word, "if" | "elif" | "ifdef" | "ifndef") && !rest.trim().is_empty()
        })
        .map(|(_, rest)| rest)
}

/// The knobs among `knobs` that a preprocessor conditional names, before or after the change,
/// in a file `after` changes from `before`; each with the first such file.
fn guarding(knobs: &[&String], before: &FileTree, after: &FileTree) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (path, bytes) in after.iter() {
        let old = before.get(path);
        if old == Some(bytes) {
            continue;
        }
        let new = String::from_utf8_lossy(bytes);
        let old = old.map(|b| String::from_utf8_lossy(b)).unwrap_or_default();
        for cond in new.lines().chain(old.lines()).filter_map(conditional) {
            for word in cond.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if knobs.iter().any(|k| k.as_str() == word) && !out.iter().any(|(k, _)| k == word) {
                    out.push((word.to_string(), path.to_string()));
                }
            }
        }
    }
    out
}

impl Harness<'_> {
    /// Builds and tests `after` once with each other value of each knob that guards code in a
    /// file it changes from `before` (a task with a c-define parameter file only), with the
    /// other knobs as they are where the constraints allow; the first failure names the knob.
    pub(super) fn test_branches(
        &mut self,
        before: &FileTree,
        after: &FileTree,
    ) -> Result<(), Failure> {
        let task = self.task;
        let Some(spec) = task
            .params
            .as_ref()
            .filter(|s| s.format == ParamFormat::CDefine)
        else {
            return Ok(());
        };
        let (Some(base), Ok(space)) = (task.params_of(after), task.space_of(after)) else {
            return Ok(());
        };
        let names: Vec<&String> = base.keys().collect();
        for (knob, file) in guarding(&names, before, after) {
            for p in space.each_value_of(&base, &knob) {
                let value = p.get(&knob).map(sandbox::param_token).unwrap_or_default();
                let why = |f: Failure| Failure {
                    stage: Stage::Retest,
                    reason: format!(
                        "with {knob} = {value} (an #if in {file} names it, and the change edits {file}): {}",
                        f.reason
                    ),
                    ..f
                };
                let text = task
                    .render_params(after, &p)
                    .map_err(|e| why(Failure::new(Stage::Retest, e)))?;
                let mut tree = after.clone();
                tree.insert(spec.file.clone(), text.into_bytes());
                self.prepare(tree).map_err(why)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sandbox::RelPath;

    fn tree(files: &[(&str, &str)]) -> FileTree {
        let mut t = FileTree::default();
        for (p, text) in files {
            t.insert(
                RelPath::new(p).unwrap_or_else(|e| panic!("{e}")),
                text.as_bytes().to_vec(),
            );
        }
        t
    }

    #[test]
    fn the_knobs_an_if_names_in_a_changed_file_guard_it() {
        let kernel = "#include \"params.h\"\n#if LOOP_ORDER == 0\nint a;\n#elif (UNROLL > 1)\nint b;\n#endif\n#ifdef WIDE\n#endif\nint c[ROWS];\n";
        let before = tree(&[("kernel.c", kernel), ("other.c", "#if TILE\n#endif\n")]);
        let after = tree(&[
            ("kernel.c", &kernel.replace("int b;", "int b = 1;")),
            ("other.c", "#if TILE\n#endif\n"),
        ]);
        let names: Vec<String> = ["LOOP_ORDER", "ROWS", "TILE", "UNROLL", "WIDE"]
            .map(String::from)
            .into();
        let knobs: Vec<&String> = names.iter().collect();
        let found: Vec<String> = guarding(&knobs, &before, &after)
            .into_iter()
            .map(|(k, f)| format!("{k} in {f}"))
            .collect();
        // ROWS is used, not tested by an #if; other.c did not change.
        assert_eq!(
            found,
            [
                "LOOP_ORDER in kernel.c",
                "UNROLL in kernel.c",
                "WIDE in kernel.c"
            ]
        );
        assert!(guarding(&knobs, &before, &before).is_empty());
        assert_eq!(conditional("  #  if X"), Some(" X"));
        assert_eq!(conditional("#ifdef X"), Some(" X"));
        assert_eq!(conditional("#include <x>"), None);
        assert_eq!(conditional("#iffy X"), None);
    }
}
