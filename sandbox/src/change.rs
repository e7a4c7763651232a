//! Candidate changes: parse -> verify -> apply. A `VerifiedChange` can only be built by
//! `verify_change`, so it only ever holds editable paths inside the tree, text content and
//! sizes under the caps.

use crate::{FileTree, RelPath, SandboxError, parse_unified_diff};
use globset::GlobSet;
use std::collections::BTreeMap;

/// A proposed change to the incumbent tree, as a proposer hands it over.
#[derive(Debug, Clone)]
pub enum Change {
    /// A unified diff against the incumbent (one or several files).
    Diff(String),
    /// Whole-file replacements: path -> new content.
    Files(BTreeMap<String, String>),
}

/// What a verified change does to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    Write(Vec<u8>),
    Delete,
}

/// Caps on what one candidate may carry.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest file a candidate may write.
    pub max_file_bytes: usize,
    /// Largest total of all files a candidate writes.
    pub max_total_bytes: usize,
    /// Largest diff text accepted.
    pub max_diff_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        // Kernels and configs are source text: a megabyte per file is already far beyond one.
        Limits {
            max_file_bytes: 1 << 20,
            max_total_bytes: 4 << 20,
            max_diff_bytes: 2 << 20,
        }
    }
}

/// A change that passed verification against a base tree.
#[derive(Debug, Clone, Default)]
pub struct VerifiedChange {
    edits: BTreeMap<RelPath, Edit>,
}

impl VerifiedChange {
    pub fn edits(&self) -> &BTreeMap<RelPath, Edit> {
        &self.edits
    }
}

fn check_content(path: &RelPath, bytes: &[u8], limits: &Limits) -> Result<(), SandboxError> {
    if bytes.len() > limits.max_file_bytes {
        return Err(SandboxError::TooLarge {
            path: path.to_string(),
            why: format!(
                "{} bytes, over the {} byte cap",
                bytes.len(),
                limits.max_file_bytes
            ),
        });
    }
    if bytes.contains(&0) {
        return Err(SandboxError::Binary(path.to_string()));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| SandboxError::Binary(path.to_string()))?;
    match crate::text::hidden_character(text) {
        Some((line, what)) => Err(SandboxError::Hidden {
            path: path.to_string(),
            line,
            what,
        }),
        None => Ok(()),
    }
}

fn check_editable(path: &RelPath, editable: &GlobSet) -> Result<(), SandboxError> {
    if editable.is_match(path.as_str()) {
        Ok(())
    } else {
        Err(SandboxError::Protected(path.to_string()))
    }
}

/// Verifies `change` against `base` (the incumbent tree) and computes the resulting edits.
pub fn verify_change(
    change: &Change,
    base: &FileTree,
    editable: &GlobSet,
    limits: &Limits,
) -> Result<VerifiedChange, SandboxError> {
    let mut edits = match change {
        Change::Files(files) => {
            let mut edits = BTreeMap::new();
            for (raw, content) in files {
                let path = RelPath::new(raw)?;
                check_editable(&path, editable)?;
                check_content(&path, content.as_bytes(), limits)?;
                edits.insert(path, Edit::Write(content.clone().into_bytes()));
            }
            edits
        }
        Change::Diff(text) => diff_edits(text, base, editable, limits)?,
    };
    // Drop edits that change nothing; a change that is all no-ops is empty.
    edits.retain(|path, edit| match edit {
        Edit::Write(bytes) => base.get(path) != Some(bytes.as_slice()),
        Edit::Delete => base.get(path).is_some(),
    });
    if edits.is_empty() {
        return Err(SandboxError::Empty);
    }
    let total: usize = edits
        .values()
        .map(|e| if let Edit::Write(b) = e { b.len() } else { 0 })
        .sum();
    if total > limits.max_total_bytes {
        return Err(SandboxError::TooLarge {
            path: "change".into(),
            why: format!(
                "{total} bytes in all, over the {} byte cap",
                limits.max_total_bytes
            ),
        });
    }
    Ok(VerifiedChange { edits })
}

/// The edits a unified diff makes to `base`, each file checked as it is produced.
fn diff_edits(
    text: &str,
    base: &FileTree,
    editable: &GlobSet,
    limits: &Limits,
) -> Result<BTreeMap<RelPath, Edit>, SandboxError> {
    if text.len() > limits.max_diff_bytes {
        return Err(SandboxError::TooLarge {
            path: "diff".into(),
            why: format!(
                "{} bytes, over the {} byte cap",
                text.len(),
                limits.max_diff_bytes
            ),
        });
    }
    if text.contains('\0') {
        return Err(SandboxError::Binary("diff".into()));
    }
    let mut edits = BTreeMap::new();
    for patch in parse_unified_diff(text)? {
        for p in [&patch.old, &patch.new].into_iter().flatten() {
            check_editable(p, editable)?;
        }
        match (&patch.old, &patch.new) {
            (None, None) => {
                return Err(SandboxError::MalformedDiff(
                    "both sides are /dev/null".into(),
                ));
            }
            (None, Some(new)) => {
                if base.get(new).is_some() {
                    return Err(SandboxError::DoesNotApply {
                        path: new.to_string(),
                        why: "file already exists".into(),
                    });
                }
                let out = patch.apply("")?;
                check_content(new, out.as_bytes(), limits)?;
                edits.insert(new.clone(), Edit::Write(out.into_bytes()));
            }
            (Some(old), new) => {
                // Apply on top of an earlier hunk set for the same file, if any.
                let current = match edits.get(old) {
                    Some(Edit::Write(b)) => b.clone(),
                    Some(Edit::Delete) => {
                        return Err(SandboxError::DoesNotApply {
                            path: old.to_string(),
                            why: "file was deleted".into(),
                        });
                    }
                    None => base
                        .get(old)
                        .ok_or_else(|| SandboxError::DoesNotApply {
                            path: old.to_string(),
                            why: "no such file".into(),
                        })?
                        .to_vec(),
                };
                let text = String::from_utf8(current)
                    .map_err(|_| SandboxError::Binary(old.to_string()))?;
                let out = patch.apply(&text)?;
                match new {
                    Some(new) => {
                        check_content(new, out.as_bytes(), limits)?;
                        edits.insert(new.clone(), Edit::Write(out.into_bytes()));
                    }
                    None => {
                        edits.insert(old.clone(), Edit::Delete);
                    }
                }
            }
        }
    }
    Ok(edits)
}

impl FileTree {
    /// This tree with a verified change applied.
    pub fn apply(&self, change: &VerifiedChange) -> FileTree {
        let mut out = self.clone();
        for (path, edit) in change.edits() {
            match edit {
                Edit::Write(bytes) => out.insert(path.clone(), bytes.clone()),
                Edit::Delete => out.remove(path),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use globset::{Glob, GlobSetBuilder};

    fn editable() -> GlobSet {
        let mut b = GlobSetBuilder::new();
        b.add(Glob::new("kernel.c").unwrap_or_else(|_| unreachable!()));
        b.build().unwrap_or_default()
    }

    fn base() -> FileTree {
        let mut t = FileTree::default();
        t.insert(
            RelPath::new("kernel.c").unwrap_or_else(|_| unreachable!()),
            b"int x;\n".to_vec(),
        );
        t.insert(
            RelPath::new("bench.c").unwrap_or_else(|_| unreachable!()),
            b"main\n".to_vec(),
        );
        t
    }

    fn files(path: &str, content: &str) -> Change {
        Change::Files(BTreeMap::from([(path.to_string(), content.to_string())]))
    }

    #[test]
    fn accepts_an_editable_replacement() {
        let v = verify_change(
            &files("kernel.c", "int y;\n"),
            &base(),
            &editable(),
            &Limits::default(),
        );
        assert_eq!(v.map(|v| v.edits().len()).ok(), Some(1));
    }

    #[test]
    fn refuses_protected_binary_oversized_and_empty() {
        let l = Limits {
            max_file_bytes: 16,
            ..Limits::default()
        };
        let cases = [
            (files("bench.c", "x"), "touches protected file bench.c"),
            (files("new.c", "x"), "touches protected file new.c"),
            (files("kernel.c", "a\0b"), "binary"),
            (files("kernel.c", &"x".repeat(17)), "over the 16 byte cap"),
            (files("kernel.c", "int x;\n"), "empty"),
            (
                Change::Diff("--- a/bench.c\n+++ b/bench.c\n@@ -1 +1 @@\n-main\n+evil\n".into()),
                "protected file bench.c",
            ),
        ];
        for (change, want) in cases {
            let err = verify_change(&change, &base(), &editable(), &l)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(want), "{change:?}: {err}");
        }
    }

    #[test]
    fn applies_a_diff() {
        let d =
            Change::Diff("--- a/kernel.c\n+++ b/kernel.c\n@@ -1 +1 @@\n-int x;\n+int y;\n".into());
        let v = verify_change(&d, &base(), &editable(), &Limits::default()).ok();
        let edit = v.as_ref().and_then(|v| v.edits().values().next());
        assert_eq!(edit, Some(&Edit::Write(b"int y;\n".to_vec())));
    }
}
