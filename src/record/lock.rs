//! Lock files next to runs.db: `runs.db.lock` for runs, `runs.db.daemon.lock` for the daemon.
//! An advisory lock held for the life of the process (the OS drops it if the process dies),
//! with the holder's pid in the file for the refusal message. A PostgreSQL database has no file
//! beside it: controllers sharing one coordinate through it instead (run claims, the per-branch
//! incumbent check), so no lock is taken there.

use super::store::DbAt;
use anyhow::{Context as _, Result, bail};
use std::io::Write;
use std::path::{Path, PathBuf};

pub struct LockFile {
    _file: Option<std::fs::File>,
}

impl LockFile {
    /// Takes `<db><suffix>` or explains who holds it; `what` names the holder ("run", "daemon").
    pub fn acquire(db: &Path, suffix: &str, what: &str) -> Result<LockFile> {
        if let DbAt::Postgres(_) = DbAt::parse(db) {
            return Ok(LockFile { _file: None });
        }
        let path = PathBuf::from(format!("{}{suffix}", db.display()));
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        if file.try_lock().is_err() {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            bail!(
                "another polymorph {what} is using {} (pid {}); wait for it or use another --db",
                db.display(),
                holder.trim()
            );
        }
        file.set_len(0)?;
        write!(file, "{}", std::process::id())?;
        Ok(LockFile { _file: Some(file) })
    }

    pub fn run(db: &Path) -> Result<LockFile> {
        Self::acquire(db, ".lock", "run")
    }

    pub fn daemon(db: &Path) -> Result<LockFile> {
        Self::acquire(db, ".daemon.lock", "daemon")
    }
}
