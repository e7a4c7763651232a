//! Trees and workspaces: a `FileTree` is a task's source in memory (read without following
//! symlinks, refusing special files), a `Workspace` is a fresh temp dir holding one candidate's
//! tree, and a `Manifest` is the hash of every harness-owned file, checked before each command.

use crate::{RelPath, SandboxError};
use globset::GlobSet;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// Most files a task directory may hold: a guard against pointing polymorph at a home directory.
const MAX_TREE_FILES: usize = 10_000;
/// Largest task directory read into memory.
const MAX_TREE_BYTES: u64 = 256 << 20;

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex of `bytes`, two digits a byte.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|b| {
            [
                DIGITS[usize::from(b >> 4)] as char,
                DIGITS[usize::from(b & 15)] as char,
            ]
        })
        .collect()
}

/// Files of a tree, by path relative to its root, with their executable bit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileTree {
    files: BTreeMap<RelPath, Vec<u8>>,
    executable: BTreeSet<RelPath>,
}

impl FileTree {
    /// Reads every regular file under `root`, skipping paths matched by `exclude`.
    /// Symlinks, sockets, devices and fifos are refused: a task is plain files.
    pub fn read_dir(root: &Path, exclude: &GlobSet) -> Result<Self, SandboxError> {
        let mut tree = FileTree::default();
        let mut total = 0u64;
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            let dir = root.join(&rel);
            let entries = fs::read_dir(&dir)
                .map_err(|e| SandboxError::io(format!("reading {}", dir.display()), e))?;
            for entry in entries {
                let entry =
                    entry.map_err(|e| SandboxError::io(format!("reading {}", dir.display()), e))?;
                let rel_path = rel.join(entry.file_name());
                if exclude.is_match(&rel_path) || entry.file_name() == ".git" {
                    continue;
                }
                let rel_str = RelPath::from_walk(&rel_path)?;
                let ty = entry
                    .file_type()
                    .map_err(|e| SandboxError::io(format!("stat {}", rel_path.display()), e))?;
                if ty.is_symlink() {
                    return Err(SandboxError::SpecialFile {
                        path: root.join(&rel_path),
                        why: "symlinks are not allowed in a task",
                    });
                } else if ty.is_dir() {
                    stack.push(rel_path);
                } else if ty.is_file() {
                    let full = root.join(&rel_path);
                    let bytes = fs::read(&full).map_err(|e| {
                        SandboxError::io(format!("reading {}", rel_path.display()), e)
                    })?;
                    let mode = fs::metadata(&full)
                        .map(|m| m.permissions().mode())
                        .unwrap_or(0o644);
                    if mode & 0o111 != 0 {
                        tree.executable.insert(rel_str.clone());
                    }
                    total += bytes.len() as u64;
                    if tree.files.len() >= MAX_TREE_FILES || total > MAX_TREE_BYTES {
                        return Err(SandboxError::TooLarge {
                            path: root.display().to_string(),
                            why: format!(
                                "more than {MAX_TREE_FILES} files or {MAX_TREE_BYTES} bytes; is this a task directory?"
                            ),
                        });
                    }
                    tree.files.insert(rel_str, bytes);
                } else {
                    return Err(SandboxError::SpecialFile {
                        path: root.join(&rel_path),
                        why: "not a regular file",
                    });
                }
            }
        }
        Ok(tree)
    }

    pub fn get(&self, path: &RelPath) -> Option<&[u8]> {
        self.files.get(path).map(Vec::as_slice)
    }

    pub fn insert(&mut self, path: RelPath, bytes: Vec<u8>) {
        self.files.insert(path, bytes);
    }

    pub fn set_executable(&mut self, path: &RelPath, executable: bool) {
        if executable {
            self.executable.insert(path.clone());
        } else {
            self.executable.remove(path);
        }
    }

    pub fn is_executable(&self, path: &RelPath) -> bool {
        self.executable.contains(path)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&RelPath, &Vec<u8>)> {
        self.files.iter()
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Removes `path` (and its executable bit); nothing when it is not there.
    pub fn remove(&mut self, path: &RelPath) {
        self.files.remove(path);
        self.executable.remove(path);
    }

    /// Writes the tree under `dir` (which must exist and be empty).
    pub fn write_to(&self, dir: &Path) -> Result<(), SandboxError> {
        for (path, bytes) in &self.files {
            let target = path.under(dir);
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent)
                    .map_err(|e| SandboxError::io(format!("creating {}", parent.display()), e))?;
            }
            fs::write(&target, bytes)
                .map_err(|e| SandboxError::io(format!("writing {}", target.display()), e))?;
            if self.executable.contains(path) {
                fs::set_permissions(&target, fs::Permissions::from_mode(0o755))
                    .map_err(|e| SandboxError::io(format!("chmod {}", target.display()), e))?;
            }
        }
        Ok(())
    }
}

/// The expected hash of each harness-owned file.
#[derive(Debug, Clone, Default)]
pub struct Manifest {
    hashes: BTreeMap<RelPath, String>,
}

impl Manifest {
    /// Hashes the files of `tree` for which `owned` is true.
    pub fn of(tree: &FileTree, owned: impl Fn(&RelPath) -> bool) -> Self {
        let hashes = tree
            .iter()
            .filter(|(p, _)| owned(p))
            .map(|(p, b)| (p.clone(), sha256_hex(b)))
            .collect();
        Manifest { hashes }
    }

    /// Checks that every harness-owned file under `dir` is a regular file with its expected hash.
    pub fn verify(&self, dir: &Path) -> Result<(), SandboxError> {
        for (path, want) in &self.hashes {
            let full = path.under(dir);
            let meta =
                fs::symlink_metadata(&full).map_err(|_| SandboxError::Missing(path.to_string()))?;
            if !meta.file_type().is_file() {
                return Err(SandboxError::HashMismatch(path.to_string()));
            }
            let bytes = fs::read(&full)
                .map_err(|e| SandboxError::io(format!("reading {}", full.display()), e))?;
            if &sha256_hex(&bytes) != want {
                return Err(SandboxError::HashMismatch(path.to_string()));
            }
        }
        Ok(())
    }
}

/// A fresh directory holding one tree; removed when dropped.
#[derive(Debug)]
pub struct Workspace {
    dir: TempDir,
}

impl Workspace {
    /// Creates a new temp dir (under `parent` if given) and writes `tree` into it.
    pub fn create(tree: &FileTree, parent: Option<&Path>) -> Result<Self, SandboxError> {
        let builder = {
            let mut b = tempfile::Builder::new();
            b.prefix("polymorph-");
            b
        };
        let dir = match parent {
            Some(p) => builder.tempdir_in(p),
            None => builder.tempdir(),
        }
        .map_err(|e| SandboxError::io("creating a workspace", e))?;
        tree.write_to(dir.path())?;
        Ok(Workspace { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}
