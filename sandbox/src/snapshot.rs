//! Snapshots of a built workspace: every file's hash (a symlink's by its target) and mode, taken
//! right after the build, so a later command that replaces, adds or removes anything in the tree
//! (an impostor `./check` written during the benchmark, a module that shadows another) is
//! caught before the next command runs.

use crate::SandboxError;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Read size when hashing a file: builds can be large binaries, never held whole in memory.
const CHUNK: usize = 1 << 16;

/// What is at one path of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File { sha256: String, mode: u32 },
    Symlink { target: String },
    Dir,
}

/// The state of a whole directory tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    entries: BTreeMap<String, Entry>,
}

/// Hashes one file through `buf` (one buffer for a whole walk).
fn hash_file(path: &Path, buf: &mut [u8]) -> Result<String, SandboxError> {
    let mut file = fs::File::open(path)
        .map_err(|e| SandboxError::io(format!("reading {}", path.display()), e))?;
    let mut hasher = Sha256::new();
    loop {
        let n = file
            .read(buf)
            .map_err(|e| SandboxError::io(format!("reading {}", path.display()), e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(crate::workspace::hex(&hasher.finalize()))
}

impl Snapshot {
    /// Walks `dir` without following symlinks.
    pub fn of_dir(dir: &Path) -> Result<Snapshot, SandboxError> {
        let mut entries = BTreeMap::new();
        let mut stack = vec![PathBuf::new()];
        let mut buf = vec![0u8; CHUNK];
        while let Some(rel) = stack.pop() {
            let here = dir.join(&rel);
            let listing = fs::read_dir(&here)
                .map_err(|e| SandboxError::io(format!("reading {}", here.display()), e))?;
            for item in listing {
                let item =
                    item.map_err(|e| SandboxError::io(format!("reading {}", here.display()), e))?;
                let rel_path = rel.join(item.file_name());
                let full = dir.join(&rel_path);
                let meta = fs::symlink_metadata(&full)
                    .map_err(|e| SandboxError::io(format!("stat {}", full.display()), e))?;
                let entry = if meta.file_type().is_symlink() {
                    let target = fs::read_link(&full)
                        .map_err(|e| SandboxError::io(format!("reading {}", full.display()), e))?;
                    Entry::Symlink {
                        target: target.display().to_string(),
                    }
                } else if meta.is_dir() {
                    stack.push(rel_path.clone());
                    Entry::Dir
                } else {
                    Entry::File {
                        sha256: hash_file(&full, &mut buf)?,
                        mode: meta.permissions().mode() & 0o7777,
                    }
                };
                entries.insert(rel_path.display().to_string(), entry);
            }
        }
        Ok(Snapshot { entries })
    }

    /// Checks that `dir` is exactly as snapshotted; the error names the first difference.
    pub fn verify(&self, dir: &Path) -> Result<(), SandboxError> {
        let now = Snapshot::of_dir(dir)?;
        if let Some((path, before)) = self
            .entries
            .iter()
            .find(|(p, e)| now.entries.get(*p) != Some(*e))
        {
            let what = match (before, now.entries.get(path)) {
                (_, None) => "was removed",
                (Entry::File { mode: a, sha256: x }, Some(Entry::File { mode: b, sha256: y }))
                    if x == y && a != b =>
                {
                    "changed its mode"
                }
                _ => "was replaced",
            };
            return Err(SandboxError::Tampered(format!("{path} {what}")));
        }
        if let Some(path) = now.entries.keys().find(|p| !self.entries.contains_key(*p)) {
            return Err(SandboxError::Tampered(format!("{path} appeared")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_a_replaced_an_added_and_a_removed_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let p = dir.path();
        fs::write(p.join("check"), "built").unwrap_or_else(|e| panic!("{e}"));
        fs::create_dir(p.join("lib")).unwrap_or_else(|e| panic!("{e}"));
        fs::write(p.join("lib/k.o"), "obj").unwrap_or_else(|e| panic!("{e}"));
        let snap = Snapshot::of_dir(p).unwrap_or_else(|e| panic!("{e}"));
        assert!(snap.verify(p).is_ok());
        fs::write(p.join("check"), "impostor").unwrap_or_else(|e| panic!("{e}"));
        let err = snap
            .verify(p)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("check was replaced"), "{err}");
        fs::write(p.join("check"), "built").unwrap_or_else(|e| panic!("{e}"));
        fs::write(p.join("lib/numpy.py"), "").unwrap_or_else(|e| panic!("{e}"));
        let err = snap
            .verify(p)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("lib/numpy.py appeared"), "{err}");
        fs::remove_file(p.join("lib/numpy.py")).unwrap_or_else(|e| panic!("{e}"));
        fs::remove_file(p.join("lib/k.o")).unwrap_or_else(|e| panic!("{e}"));
        let err = snap
            .verify(p)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("lib/k.o was removed"), "{err}");
    }
}
