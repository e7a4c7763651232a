//! A task's reference (`[commands] reference`): what its test and bench compare a candidate
//! with, computed once per context on the task as given and kept by polymorph outside every
//! tree, in `$POLYMORPH_CACHE/references/<task>/<context id>`. Each test and bench sees it
//! read-only at `$POLYMORPH_REFERENCE`; its files' digest, written beside it when it was made,
//! is checked before each of them, so one altered since (by a command run without bwrap, or by
//! hand) fails the command that would have read it.

use anyhow::{Context as _, Result};
use sandbox::{FileTree, sha256_hex};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The variable naming the reference's directory in a command's environment.
pub const VAR: &str = "POLYMORPH_REFERENCE";

/// A reference computed and sealed: its directory and the digest of its files.
#[derive(Debug, Clone)]
pub struct Reference {
    pub dir: PathBuf,
    digest: String,
}

/// Where the reference of `task` in context `context_id` is kept.
pub fn place(task: &str, context_id: &str) -> PathBuf {
    crate::task::python::cache_root()
        .join("references")
        .join(task)
        .join(context_id)
}

/// The file beside the reference's directory that holds its digest.
fn digest_file(dir: &Path) -> PathBuf {
    let mut name = dir.as_os_str().to_owned();
    name.push(".sha256");
    PathBuf::from(name)
}

/// Every file under `dir` (its path from `dir`, in order) and its content's sha256, hashed; read
/// as a task's directory is (no symlinks or special files, at most a task's size).
fn digest_of(dir: &Path) -> Result<String> {
    let files = FileTree::read_dir(dir, &globset::GlobSet::empty())
        .with_context(|| format!("reading the reference {}", dir.display()))?;
    let text: String = files
        .iter()
        .map(|(p, bytes)| format!("{p}\0{}\n", sha256_hex(bytes)))
        .collect();
    Ok(sha256_hex(text.as_bytes()))
}

impl Reference {
    /// The reference kept at `dir`, when it is there whole: its files hash as when it was made.
    pub fn load(dir: &Path) -> Option<Reference> {
        let digest = fs::read_to_string(digest_file(dir)).ok()?;
        let digest = digest.trim().to_string();
        (digest_of(dir).ok()? == digest).then(|| Reference {
            dir: dir.to_path_buf(),
            digest,
        })
    }

    /// Seals what a reference command wrote into `made` and keeps it at `dir`: its files made
    /// read-only, its digest written beside it, then moved into place. Where another run in the
    /// same context got there first, theirs is kept and `made` removed.
    pub fn seal(made: &Path, dir: &Path) -> Result<Reference> {
        set_read_only(made)?;
        let digest = digest_of(made)?;
        if let Some(kept) = Reference::load(dir) {
            let _ = fs::remove_dir_all(made);
            return Ok(kept);
        }
        if dir.exists() {
            fs::remove_dir_all(dir)
                .with_context(|| format!("removing the altered reference {}", dir.display()))?;
        }
        fs::write(digest_file(dir), format!("{digest}\n"))
            .with_context(|| format!("writing {}", digest_file(dir).display()))?;
        fs::rename(made, dir)
            .with_context(|| format!("moving the reference to {}", dir.display()))?;
        Ok(Reference {
            dir: dir.to_path_buf(),
            digest,
        })
    }

    /// Whether the reference's files still hash as when it was made; why not, if not.
    pub fn verify(&self) -> Result<(), String> {
        match digest_of(&self.dir) {
            Ok(d) if d == self.digest => Ok(()),
            Ok(_) => Err(format!(
                "the task's reference in {} was altered since it was computed",
                self.dir.display()
            )),
            Err(e) => Err(format!("the task's reference: {e:#}")),
        }
    }
}

/// Every file under `dir` read-only (its directories stay writable by their owner, so that the
/// reference can be removed).
fn set_read_only(dir: &Path) -> Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if fs::symlink_metadata(&path)?.is_dir() {
            set_read_only(&path)?;
        } else {
            fs::set_permissions(&path, fs::Permissions::from_mode(0o444))
                .with_context(|| format!("making {} read-only", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_reference_loads_until_a_file_of_it_changes() {
        let root = tempfile::tempdir().unwrap();
        let made = root.path().join("made");
        fs::create_dir_all(made.join("sub")).unwrap();
        fs::write(made.join("answers.json"), "[1, 2]").unwrap();
        fs::write(made.join("sub/rows"), "x").unwrap();
        let dir = root.path().join("ctx");
        let r = Reference::seal(&made, &dir).unwrap();
        assert!(!made.exists());
        assert!(r.verify().is_ok());
        assert!(Reference::load(&dir).is_some());
        let file = dir.join("sub/rows");
        assert!(fs::metadata(&file).unwrap().permissions().readonly());
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
        fs::write(&file, "y").unwrap();
        assert!(r.verify().unwrap_err().contains("was altered"));
        assert!(Reference::load(&dir).is_none());
        // A file added is an alteration too.
        fs::write(&file, "x").unwrap();
        assert!(r.verify().is_ok());
        fs::write(dir.join("extra"), "").unwrap();
        assert!(r.verify().is_err());
        // Sealed again over the altered one: the new one is kept.
        let again = root.path().join("again");
        fs::create_dir(&again).unwrap();
        fs::write(again.join("answers.json"), "[3]").unwrap();
        let r = Reference::seal(&again, &dir).unwrap();
        assert!(r.verify().is_ok());
        assert_eq!(fs::read_to_string(dir.join("answers.json")).unwrap(), "[3]");
        assert!(!dir.join("extra").exists());
    }
}
