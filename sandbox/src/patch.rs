//! Unified diffs: splits a (possibly multi-file, `git diff`-style) diff into per-file patches,
//! finding hunk ends by their line counts so that a removed line starting with `--` is never
//! mistaken for a header, and applies each with `diffy`.

use crate::{RelPath, SandboxError};

/// One file's part of a unified diff. `old`/`new` are `None` for `/dev/null` (a created or
/// deleted file).
#[derive(Debug, Clone)]
pub struct FilePatch {
    pub old: Option<RelPath>,
    pub new: Option<RelPath>,
    /// `--- a\n+++ b\n` followed by the hunks, in the form `diffy` parses.
    body: String,
}

impl FilePatch {
    /// Applies this patch to `base` (empty for a created file).
    pub fn apply(&self, base: &str) -> Result<String, SandboxError> {
        let name = self
            .new
            .as_ref()
            .or(self.old.as_ref())
            .map(|p| p.to_string())
            .unwrap_or_default();
        let patch = diffy::Patch::from_str(&self.body)
            .map_err(|e| SandboxError::MalformedDiff(format!("{name}: {e}")))?;
        diffy::apply(base, &patch).map_err(|e| SandboxError::DoesNotApply {
            path: name,
            why: e.to_string(),
        })
    }
}

fn header_path(raw: &str, prefix: &str) -> Result<Option<RelPath>, SandboxError> {
    // `--- a/x.c\t2024-01-01 ...`: the timestamp after a tab is not part of the name.
    let name = raw.split('\t').next().unwrap_or("").trim_end();
    if name == "/dev/null" {
        return Ok(None);
    }
    let name = name.strip_prefix(prefix).unwrap_or(name);
    RelPath::new(name).map(Some)
}

/// Parses `@@ -a,b +c,d @@` into (old line count, new line count).
fn hunk_counts(line: &str) -> Option<(usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let count = |r: &str| -> Option<usize> {
        match r.split_once(',') {
            Some((_, n)) => n.parse().ok(),
            None => r.parse::<usize>().ok().map(|_| 1),
        }
    };
    Some((count(old)?, count(new)?))
}

/// Reads the hunk whose header is `lines[start]` into `body`; the index after it.
fn read_hunk(lines: &[&str], start: usize, body: &mut String) -> Result<usize, SandboxError> {
    let mut i = start;
    let (mut old_left, mut new_left) = hunk_counts(lines[i]).ok_or_else(|| {
        SandboxError::MalformedDiff(format!("bad hunk header {:?}", lines[i].trim_end()))
    })?;
    body.push_str(lines[i]);
    i += 1;
    while (old_left > 0 || new_left > 0) && i < lines.len() {
        let l = lines[i];
        match l.as_bytes().first() {
            Some(b' ') => {
                old_left = old_left.saturating_sub(1);
                new_left = new_left.saturating_sub(1);
            }
            Some(b'-') => old_left = old_left.saturating_sub(1),
            Some(b'+') => new_left = new_left.saturating_sub(1),
            Some(b'\\') => {}
            // Some tools drop the space on empty context lines.
            Some(b'\n') => {
                old_left = old_left.saturating_sub(1);
                new_left = new_left.saturating_sub(1);
                body.push(' ');
            }
            _ => {
                return Err(SandboxError::MalformedDiff(format!(
                    "unexpected line in hunk: {:?}",
                    l.trim_end()
                )));
            }
        }
        body.push_str(l);
        if !l.ends_with('\n') {
            body.push('\n');
            body.push_str("\\ No newline at end of file\n");
        }
        i += 1;
    }
    if old_left > 0 || new_left > 0 {
        return Err(SandboxError::MalformedDiff(
            "hunk is shorter than its header says".into(),
        ));
    }
    if lines.get(i).is_some_and(|l| l.starts_with('\\')) {
        body.push_str(lines[i]);
        i += 1;
    }
    Ok(i)
}

/// Splits a unified diff into per-file patches.
pub fn parse_unified_diff(text: &str) -> Result<Vec<FilePatch>, SandboxError> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut patches = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with("GIT binary patch") || line.starts_with("Binary files ") {
            return Err(SandboxError::Binary("diff".into()));
        }
        if (line.starts_with("new file mode ") || line.starts_with("new mode "))
            && line.trim_end().ends_with("120000")
        {
            return Err(SandboxError::MalformedDiff(
                "symlinks are not allowed (mode 120000)".into(),
            ));
        }
        if line.starts_with("rename from ") || line.starts_with("copy from ") {
            return Err(SandboxError::MalformedDiff(
                "renames and copies are not supported".into(),
            ));
        }
        let is_header =
            line.starts_with("--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ "));
        if !is_header {
            i += 1;
            continue;
        }
        let old_raw = line["--- ".len()..].trim_end_matches(['\n', '\r']);
        let new_raw = lines[i + 1]["+++ ".len()..].trim_end_matches(['\n', '\r']);
        let old = header_path(old_raw, "a/")?;
        let new = header_path(new_raw, "b/")?;
        let mut body = format!("--- {}\n+++ {}\n", display(&old), display(&new));
        i += 2;
        let mut hunks = 0;
        while i < lines.len() && lines[i].starts_with("@@") {
            i = read_hunk(&lines, i, &mut body)?;
            hunks += 1;
        }
        if hunks == 0 {
            return Err(SandboxError::MalformedDiff(format!(
                "no hunks for {}",
                display(&new)
            )));
        }
        if let (Some(o), Some(n)) = (&old, &new)
            && o != n
        {
            return Err(SandboxError::MalformedDiff(format!(
                "renames are not supported ({o} -> {n})"
            )));
        }
        patches.push(FilePatch { old, new, body });
    }
    if patches.is_empty() {
        return Err(SandboxError::MalformedDiff(
            "no file headers (--- / +++) found".into(),
        ));
    }
    Ok(patches)
}

fn display(p: &Option<RelPath>) -> String {
    p.as_ref()
        .map_or_else(|| "/dev/null".to_string(), |p| p.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_FILES: &str = "diff --git a/x.c b/x.c\nindex 1..2 100644\n--- a/x.c\n+++ b/x.c\n@@ -1,3 +1,3 @@\n a\n--- b\n+++ b\n c\ndiff --git a/y.c b/y.c\n--- a/y.c\n+++ b/y.c\n@@ -1 +1,2 @@\n y\n+z\n";

    #[test]
    fn splits_files_and_counts_hunk_lines() {
        let patches = parse_unified_diff(TWO_FILES).unwrap_or_default();
        assert_eq!(patches.len(), 2);
        assert_eq!(
            patches[0].apply("a\n-- b\nc\n").ok().as_deref(),
            Some("a\n++ b\nc\n")
        );
        assert_eq!(patches[1].apply("y\n").ok().as_deref(), Some("y\nz\n"));
    }

    #[test]
    fn refuses_a_hunk_that_does_not_match() {
        let patches = parse_unified_diff(TWO_FILES).unwrap_or_default();
        let err = patches[1]
            .apply("other\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("does not apply to y.c"), "{err}");
    }

    #[test]
    fn new_and_deleted_files() {
        let p = parse_unified_diff("--- /dev/null\n+++ b/n.c\n@@ -0,0 +1 @@\n+hi\n")
            .unwrap_or_default();
        assert!(p[0].old.is_none());
        assert_eq!(p[0].apply("").ok().as_deref(), Some("hi\n"));
    }

    #[test]
    fn refuses_escapes_binary_and_garbage() {
        for bad in [
            "--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n",
            "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n",
            "diff --git a/k b/k\nGIT binary patch\nliteral 1\n",
            "hello world\n",
            "--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n a\n",
            "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc/passwd\n",
        ] {
            assert!(parse_unified_diff(bad).is_err(), "{bad:?} accepted");
        }
    }
}
