//! Snapshots of a built workspace: every file's hash (a symlink's by its target) and mode, taken
//! right after the build, so a later command that replaces, adds or removes anything in the tree
//! (an impostor `./check` written during the benchmark, a module that shadows another) is
//! caught before the next command runs. A quick check may skip reading a file whose stamp
//! (inode, size, mode and change time, which no process can set) shows it unchanged since a
//! moment after it was hashed.

use crate::SandboxError;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Read size when hashing a file: builds can be large binaries, never held whole in memory.
const CHUNK: usize = 1 << 16;

/// One version of a file as `stat` tells it. Any write, truncation, rename over it or mode
/// change gives the file a new change time, from the kernel's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mode: u32,
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mode: meta.mode(),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// What is at one path of the tree.
#[derive(Debug, Clone)]
enum Entry {
    File {
        sha256: String,
        mode: u32,
        stamp: Stamp,
    },
    Symlink {
        target: String,
    },
    Dir,
}

impl Entry {
    /// Same content, mode or target; stamps are not content.
    fn same(&self, other: &Entry) -> bool {
        match (self, other) {
            (
                Entry::File {
                    sha256: a, mode: m, ..
                },
                Entry::File {
                    sha256: b, mode: n, ..
                },
            ) => a == b && m == n,
            (Entry::Symlink { target: a }, Entry::Symlink { target: b }) => a == b,
            (Entry::Dir, Entry::Dir) => true,
            _ => false,
        }
    }
}

/// The state of a whole directory tree.
#[derive(Debug)]
pub struct Snapshot {
    entries: BTreeMap<String, Entry>,
    /// Files hashed with their content as recorded while their stamp was already what it is
    /// now, and older than a marker made before that hash: if the stamp still matches, the file
    /// has not been written since, and a quick check need not read it.
    settled: Mutex<BTreeSet<String>>,
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

/// The change time the kernel gives a file made now next to `dir` (same file system, same
/// clock): every later write to a file there gets a change time at least this. None when no
/// file can be made there; then nothing settles.
fn marker_time(dir: &Path) -> Option<(i64, i64)> {
    let marker = tempfile::NamedTempFile::new_in(dir.parent()?).ok()?;
    let meta = marker.as_file().metadata().ok()?;
    Some((meta.ctime(), meta.ctime_nsec()))
}

/// A walk of `dir` without following symlinks. `known` gives the entries a quick check may
/// take as they were (settled files whose stamp is unchanged); every other file is hashed.
fn walk(
    dir: &Path,
    known: impl Fn(&str, &Stamp) -> Option<Entry>,
) -> Result<BTreeMap<String, Entry>, SandboxError> {
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
            let name = rel_path.display().to_string();
            let meta = fs::symlink_metadata(&full)
                .map_err(|e| SandboxError::io(format!("stat {}", full.display()), e))?;
            let entry = if meta.file_type().is_symlink() {
                let target = fs::read_link(&full)
                    .map_err(|e| SandboxError::io(format!("reading {}", full.display()), e))?;
                Entry::Symlink {
                    target: target.display().to_string(),
                }
            } else if meta.is_dir() {
                stack.push(rel_path);
                Entry::Dir
            } else {
                let stamp = Stamp::of(&meta);
                match known(&name, &stamp) {
                    Some(entry) => entry,
                    None => Entry::File {
                        sha256: hash_file(&full, &mut buf)?,
                        mode: meta.permissions().mode() & 0o7777,
                        stamp,
                    },
                }
            };
            entries.insert(name, entry);
        }
    }
    Ok(entries)
}

/// The files of `entries` whose stamp is older than `marker` (made before they were hashed).
fn settled_by(entries: &BTreeMap<String, Entry>, marker: Option<(i64, i64)>) -> BTreeSet<String> {
    let Some(marker) = marker else {
        return BTreeSet::new();
    };
    entries
        .iter()
        .filter(|(_, e)| matches!(e, Entry::File { stamp, .. } if stamp.ctime < marker))
        .map(|(p, _)| p.clone())
        .collect()
}

impl Snapshot {
    /// Walks `dir` without following symlinks, hashing every file. Nothing is settled: a
    /// quick check (`verify_stamps`) reads every file the first time.
    pub fn of_dir(dir: &Path) -> Result<Snapshot, SandboxError> {
        Ok(Snapshot {
            entries: walk(dir, |_, _| None)?,
            settled: Mutex::default(),
        })
    }

    /// The same, settling at once the files whose change time predates a marker made before
    /// hashing, so the first quick check need not read them: for a tree `verify_stamps` checks.
    pub fn of_dir_settling(dir: &Path) -> Result<Snapshot, SandboxError> {
        let marker = marker_time(dir);
        let entries = walk(dir, |_, _| None)?;
        let settled = Mutex::new(settled_by(&entries, marker));
        Ok(Snapshot { entries, settled })
    }

    /// Checks that `dir` is exactly as snapshotted, reading every file; the error names the
    /// first difference.
    pub fn verify(&self, dir: &Path) -> Result<(), SandboxError> {
        self.compare(&walk(dir, |_, _| None)?)
    }

    /// The same check, without reading the files whose stamp shows them unchanged since they
    /// were hashed. Sound where no process can hold a file of the tree open for writing across
    /// the check (under bwrap: the tree is read-only to every command after the build, and no
    /// process outlives its command); a writable shared mapping can change a page without a new
    /// change time.
    pub fn verify_stamps(&self, dir: &Path) -> Result<(), SandboxError> {
        let mut settled = self
            .settled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let unsettled = settled.len() < self.files();
        let marker = if unsettled { marker_time(dir) } else { None };
        let now = walk(dir, |path, stamp| self.unchanged(&settled, path, stamp))?;
        self.compare(&now)?;
        if unsettled {
            // Everything read now matched: files whose stamps predate the marker are settled.
            let fresh = settled_by(&now, marker);
            settled.extend(fresh.into_iter().filter(|p| self.same_stamp(p, &now)));
        }
        Ok(())
    }

    fn files(&self) -> usize {
        self.entries
            .values()
            .filter(|e| matches!(e, Entry::File { .. }))
            .count()
    }

    /// The recorded entry of a settled file whose stamp is still `stamp`.
    fn unchanged(&self, settled: &BTreeSet<String>, path: &str, stamp: &Stamp) -> Option<Entry> {
        match self.entries.get(path) {
            Some(e @ Entry::File { stamp: was, .. }) if was == stamp && settled.contains(path) => {
                Some(e.clone())
            }
            _ => None,
        }
    }

    fn same_stamp(&self, path: &str, now: &BTreeMap<String, Entry>) -> bool {
        match (self.entries.get(path), now.get(path)) {
            (Some(Entry::File { stamp: a, .. }), Some(Entry::File { stamp: b, .. })) => a == b,
            _ => false,
        }
    }

    fn compare(&self, now: &BTreeMap<String, Entry>) -> Result<(), SandboxError> {
        if let Some((path, before)) = self
            .entries
            .iter()
            .find(|(p, e)| !now.get(*p).is_some_and(|n| n.same(e)))
        {
            let what = match (before, now.get(path)) {
                (_, None) => "was removed",
                (
                    Entry::File {
                        mode: a, sha256: x, ..
                    },
                    Some(Entry::File {
                        mode: b, sha256: y, ..
                    }),
                ) if x == y && a != b => "changed its mode",
                _ => "was replaced",
            };
            return Err(SandboxError::Tampered(format!("{path} {what}")));
        }
        if let Some(path) = now.keys().find(|p| !self.entries.contains_key(*p)) {
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
        assert!(snap.verify_stamps(p).is_ok());
        fs::write(p.join("check"), "impostor").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(both(&snap, p), ["check was replaced"; 2]);
        fs::write(p.join("check"), "built").unwrap_or_else(|e| panic!("{e}"));
        fs::write(p.join("lib/numpy.py"), "").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(both(&snap, p), ["lib/numpy.py appeared"; 2]);
        fs::remove_file(p.join("lib/numpy.py")).unwrap_or_else(|e| panic!("{e}"));
        fs::remove_file(p.join("lib/k.o")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(both(&snap, p), ["lib/k.o was removed"; 2]);
    }

    /// What the full check and the quick check find changed in `dir` (the error's last part).
    fn both(snap: &Snapshot, dir: &Path) -> [String; 2] {
        let said = |r: Result<(), SandboxError>| {
            let text = r.err().map(|e| e.to_string()).unwrap_or_default();
            text.rsplit(": ").next().unwrap_or_default().to_string()
        };
        [said(snap.verify(dir)), said(snap.verify_stamps(dir))]
    }

    #[test]
    fn a_quick_check_settles_every_file_and_still_sees_a_rewrite_of_the_same_size() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let p = dir.path();
        fs::write(p.join("check"), "built").unwrap_or_else(|e| panic!("{e}"));
        fs::write(p.join("bench"), "built too").unwrap_or_else(|e| panic!("{e}"));
        let plain = Snapshot::of_dir(p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plain.settled.lock().map(|s| s.len()).unwrap_or(9), 0);
        let snap = Snapshot::of_dir_settling(p).unwrap_or_else(|e| panic!("{e}"));
        // The first quick check reads whatever the snapshot could not settle (a file written
        // in the clock tick of its marker); after it, every file is settled.
        assert!(snap.verify_stamps(p).is_ok());
        let settled = || snap.settled.lock().map(|s| s.len()).unwrap_or(0);
        assert_eq!(settled(), 2);
        assert!(plain.verify_stamps(p).is_ok());
        assert_eq!(plain.settled.lock().map(|s| s.len()).unwrap_or(0), 2);
        // Written at once after a check that read nothing: a new change time gives it away.
        fs::write(p.join("check"), "fa1ke").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(both(&snap, p), ["check was replaced"; 2]);
        fs::write(p.join("check"), "built").unwrap_or_else(|e| panic!("{e}"));
        assert!(
            snap.verify_stamps(p).is_ok(),
            "the same content again is no change"
        );
        let mode = fs::Permissions::from_mode(0o755);
        fs::set_permissions(p.join("bench"), mode).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(both(&snap, p), ["bench changed its mode"; 2]);
    }
}
