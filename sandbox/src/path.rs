//! `RelPath`: a path that is provably inside a tree (relative, no `..`, no empty or `.`
//! components, UTF-8, no NUL, not under `.git`). Only this type reaches the file system.

use crate::SandboxError;
use std::fmt;
use std::path::{Path, PathBuf};

/// Longest path accepted, in bytes; deeper trees than this are not a kernel task.
const MAX_PATH_BYTES: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath(String);

impl RelPath {
    pub fn new(raw: &str) -> Result<Self, SandboxError> {
        let bad = |why| SandboxError::BadPath {
            path: raw.to_string(),
            why,
        };
        if raw.is_empty() {
            return Err(bad("empty path"));
        }
        if raw.len() > MAX_PATH_BYTES {
            return Err(bad("path too long"));
        }
        if raw.contains('\0') {
            return Err(bad("contains NUL"));
        }
        if raw.chars().any(crate::text::hidden_char) {
            return Err(bad("holds a control or invisible character"));
        }
        if raw.starts_with('/') || raw.starts_with('\\') {
            return Err(bad("absolute paths are not allowed"));
        }
        if raw.contains('\\') {
            return Err(bad("backslashes are not allowed"));
        }
        let mut parts = Vec::new();
        for part in raw.split('/') {
            match part {
                "" | "." => return Err(bad("empty or '.' component")),
                ".." => return Err(bad("'..' escapes the tree")),
                ".git" => return Err(bad("git metadata is not editable")),
                p => parts.push(p),
            }
        }
        Ok(RelPath(parts.join("/")))
    }

    /// From a path found by walking a tree, relative to its root.
    pub fn from_walk(path: &Path) -> Result<Self, SandboxError> {
        let s = path.to_str().ok_or_else(|| SandboxError::BadPath {
            path: path.display().to_string(),
            why: "not UTF-8",
        })?;
        RelPath::new(s)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn under(&self, root: &Path) -> PathBuf {
        root.join(&self.0)
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_relative_paths() {
        assert_eq!(
            RelPath::new("a/b.c").map(|p| p.0).ok(),
            Some("a/b.c".to_string())
        );
    }

    #[test]
    fn refuses_escapes() {
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "./a",
            ".git/config",
            "a\\b",
            "a\0b",
        ] {
            assert!(RelPath::new(bad).is_err(), "{bad:?} accepted");
        }
    }
}
