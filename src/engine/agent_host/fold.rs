//! The files as the agent's model sees them: each branch of an `#if` that the incumbent's
//! parameters do not compile is folded into one marker line, and a marker the model writes back
//! is unfolded into the lines it stands for. A model then edits code that is built (an edit in
//! a branch the parameters skip cannot be faster), and writes a shorter file whole.

mod condition;

use crate::engine::evaluate::directive;
use proposers::Params;
use std::collections::BTreeMap;

/// What every marker line says before its number; no kernel is expected to contain it.
const MARKER: &str = "polymorph hidden block";

/// One folded branch of one file.
#[derive(Debug, Clone)]
struct Fold {
    path: String,
    /// `MARKER n:`, which finds the marker in a line the model wrote back.
    key: String,
    /// The whole marker line, as shown.
    marker: String,
    /// The directive line that opens the branch (`#elif LOOP_ORDER == 2`), trimmed.
    opener: String,
    /// The lines folded, each with its line ending.
    body: String,
}

/// The folds of one incumbent's editable files.
#[derive(Debug, Clone, Default)]
pub(super) struct Folds(Vec<Fold>);

/// An open `#if` group while its file is scanned.
struct Group {
    /// Whether the code around the group is compiled (or may be).
    outer_live: bool,
    /// Whether the current branch is not compiled, for certain.
    dead: bool,
    /// Whether an earlier branch was compiled.
    taken: bool,
    /// Whether a condition could not be evaluated: no later branch is folded.
    unknown: bool,
    /// The parameters the group's conditions name, with their values.
    names: Vec<String>,
    /// The current branch's directive line and the index of its first line.
    opener: String,
    start: usize,
}

impl Group {
    /// The next branch, whose condition evaluated to `cond` (`Some(true)` for `#else`).
    fn enter(&mut self, cond: Option<bool>, opener: &str, start: usize) {
        self.opener = opener.trim().to_string();
        self.start = start;
        self.dead = self.outer_live
            && match cond {
                _ if self.taken => true,
                _ if self.unknown => false,
                Some(c) => !c,
                None => false,
            };
        self.unknown |= cond.is_none() && !self.taken;
        self.taken |= cond == Some(true) && !self.unknown;
    }
}

/// The folds of one file: every branch of two lines or more that `params` certainly leave out.
/// A file whose groups do not balance folds nothing.
fn fold_file(path: &str, text: &str, params: &Params, first: usize) -> Vec<Fold> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut stack: Vec<Group> = Vec::new();
    let mut out = Vec::new();
    let live = |stack: &[Group]| stack.iter().all(|g| !g.dead);
    let close = |g: &Group, end: usize, out: &mut Vec<Fold>| {
        if !g.dead || end < g.start + 2 {
            return;
        }
        let n = first + out.len();
        let with = if g.names.is_empty() {
            "the current parameters".to_string()
        } else {
            g.names.join(", ")
        };
        out.push(Fold {
            path: path.to_string(),
            key: format!("{MARKER} {n}:"),
            marker: format!(
                "/* {MARKER} {n}: {} lines not compiled with {with}; keep this line as it is */",
                end - g.start
            ),
            opener: g.opener.clone(),
            body: lines[g.start..end].concat(),
        });
    };
    for (i, line) in lines.iter().enumerate() {
        let Some((word, rest)) = directive(line) else {
            continue;
        };
        let cond = |expr: &str| match word {
            "ifdef" => condition::defined(expr.trim(), params),
            "ifndef" => condition::defined(expr.trim(), params).map(|d| !d),
            _ => condition::eval(expr, params),
        };
        match word {
            "if" | "ifdef" | "ifndef" => {
                let mut g = Group {
                    outer_live: live(&stack),
                    dead: false,
                    taken: false,
                    unknown: false,
                    names: condition::named(rest, params),
                    opener: String::new(),
                    start: 0,
                };
                g.enter(cond(rest), line, i + 1);
                stack.push(g);
            }
            "elif" | "else" | "endif" => {
                let Some(g) = stack.last_mut() else {
                    return Vec::new();
                };
                close(g, i, &mut out);
                if word == "endif" {
                    stack.pop();
                    continue;
                }
                for n in condition::named(rest, params) {
                    if !g.names.contains(&n) {
                        g.names.push(n);
                    }
                }
                let c = if word == "else" {
                    Some(true)
                } else {
                    cond(rest)
                };
                g.enter(c, line, i + 1);
            }
            _ => {}
        }
    }
    if stack.is_empty() { out } else { Vec::new() }
}

impl Folds {
    /// The folds of `files` under `params` (the incumbent's), numbered from 1 across files.
    pub(super) fn new(files: &BTreeMap<String, String>, params: &Params) -> Folds {
        let mut all = Vec::new();
        for (path, text) in files {
            all.extend(fold_file(path, text, params, all.len() + 1));
        }
        Folds(all)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` of `path` with each folded branch it still holds word for word as its marker.
    pub(super) fn fold(&self, path: &str, text: &str) -> String {
        let mut out = text.to_string();
        for f in self.0.iter().filter(|f| f.path == path) {
            if out.matches(&f.body).count() == 1 {
                out = out.replacen(&f.body, &format!("{}\n", f.marker), 1);
            }
        }
        out
    }

    /// What the model wrote for `path`, each marker line back to the lines it stands for; an
    /// error when a folded branch is in it neither as its marker nor as its lines: code the
    /// model was not shown is never deleted by it (a rewrite that drops an `#if` would take the
    /// search's other values of its knobs with it).
    pub(super) fn unfold(&self, path: &str, written: &str) -> Result<String, String> {
        let folds: Vec<&Fold> = self.0.iter().filter(|f| f.path == path).collect();
        if folds.is_empty() {
            return Ok(written.to_string());
        }
        let mut out = String::with_capacity(written.len());
        for line in written.split_inclusive('\n') {
            match folds.iter().find(|f| line.contains(&f.key)) {
                Some(f) => out.push_str(&f.body),
                None => out.push_str(line),
            }
        }
        if let Some(f) = folds.iter().find(|f| !out.contains(&f.body)) {
            return Err(format!(
                "{path}: the line `{}` is missing (it follows `{}`); it stands for lines you are not shown: write it back where it was, as it is",
                f.marker, f.opener
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KERNEL: &str = "#include \"params.h\"\n#if LOOP_ORDER == 0\nint a;\n#elif LOOP_ORDER == 2\nint b;\nint b2;\n#if ROWS > 1\nint nested;\n#endif\n#else\nint c;\nint c2;\n#endif\nint d;\n";

    fn params(order: i64) -> Params {
        [("LOOP_ORDER", json!(order)), ("ROWS", json!(4))]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    fn files() -> BTreeMap<String, String> {
        [("kernel.c".to_string(), KERNEL.to_string())].into()
    }

    #[test]
    fn branches_the_parameters_leave_out_are_folded_and_unfolded_back() {
        let folds = Folds::new(&files(), &params(0));
        let shown = folds.fold("kernel.c", KERNEL);
        assert_eq!(
            shown,
            "#include \"params.h\"\n#if LOOP_ORDER == 0\nint a;\n#elif LOOP_ORDER == 2\n\
             /* polymorph hidden block 1: 5 lines not compiled with LOOP_ORDER = 0; keep this line as it is */\n\
             #else\n/* polymorph hidden block 2: 2 lines not compiled with LOOP_ORDER = 0; keep this line as it is */\n\
             #endif\nint d;\n"
        );
        assert_eq!(folds.unfold("kernel.c", &shown).as_deref(), Ok(KERNEL));
        let edited = shown.replace("int a;", "int a = 1;");
        assert_eq!(
            folds.unfold("kernel.c", &edited).as_deref(),
            Ok(KERNEL.replace("int a;", "int a = 1;").as_str())
        );
        // Another file, and a file with no folds, pass through.
        assert_eq!(folds.fold("params.h", "x\n"), "x\n");
        assert_eq!(folds.unfold("params.h", "x\n").as_deref(), Ok("x\n"));
    }

    #[test]
    fn the_else_is_folded_when_an_earlier_branch_is_taken_and_kept_when_it_is_the_one() {
        let shown = Folds::new(&files(), &params(2)).fold("kernel.c", KERNEL);
        // The first branch is one line (not folded); the taken one's nested #if is evaluated.
        assert!(shown.contains("int a;\n#elif LOOP_ORDER == 2\nint b;\nint b2;\n#if ROWS > 1\nint nested;\n#endif\n#else\n/* polymorph hidden block 1: 2 lines"), "{shown}");
        let shown = Folds::new(&files(), &params(1)).fold("kernel.c", KERNEL);
        assert!(
            shown.contains("hidden block 1: 5 lines") && shown.contains("int c;\nint c2;"),
            "{shown}"
        );
    }

    #[test]
    fn a_condition_it_cannot_evaluate_folds_nothing_from_there_on() {
        let text = "#if LOOP_ORDER == 1\na\nb\n#elif WIDTH * 2 > 8\nc\nd\n#else\ne\nf\n#endif\n#if ROWS\n#endif\n";
        let f: BTreeMap<String, String> = [("k.c".to_string(), text.to_string())].into();
        let shown = Folds::new(&f, &params(0)).fold("k.c", text);
        // The first branch is left out for certain; after the unknown one, nothing is.
        assert!(
            shown.starts_with("#if LOOP_ORDER == 1\n/* polymorph hidden block 1:"),
            "{shown}"
        );
        assert!(
            shown.contains("#elif WIDTH * 2 > 8\nc\nd\n#else\ne\nf\n#endif"),
            "{shown}"
        );
        // Unbalanced groups fold nothing.
        let broken: BTreeMap<String, String> = [(
            "k.c".to_string(),
            "#if LOOP_ORDER == 1\na\nb\n#else\nc\n".to_string(),
        )]
        .into();
        assert!(Folds::new(&broken, &params(0)).is_empty());
    }

    #[test]
    fn a_file_that_drops_a_marker_is_refused_even_without_its_if() {
        let folds = Folds::new(&files(), &params(0));
        let shown = folds.fold("kernel.c", KERNEL);
        let lost = shown.replace(
            "/* polymorph hidden block 1: 5 lines not compiled with LOOP_ORDER = 0; keep this line as it is */\n",
            "",
        );
        let err = folds.unfold("kernel.c", &lost).unwrap_err();
        assert!(
            err.contains("hidden block 1") && err.contains("#elif LOOP_ORDER == 2"),
            "{err}"
        );
        let rewrite = "#include \"params.h\"\nint a;\nint d;\n";
        let err = folds.unfold("kernel.c", rewrite).unwrap_err();
        assert!(err.contains("hidden block 1"), "{err}");
        // A marker the model indented or left a stray comment beside still unfolds.
        let moved = shown.replace(
            "/* polymorph hidden block 2",
            "    /* polymorph hidden block 2",
        );
        assert_eq!(folds.unfold("kernel.c", &moved).as_deref(), Ok(KERNEL));
    }
}
