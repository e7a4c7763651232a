//! What a sandboxed command may not see: the user's home and the other homes (`/root`, `/home`,
//! `$HOME`), where ssh keys, cloud credentials, `.pgpass` and `.netrc` live. Each is covered by
//! an empty tmpfs; what the command needs from under them is bound back read-only: the
//! directories of its `PATH` that lie there (`~/.local/bin`; for a Python virtual environment's
//! `bin`, the whole environment, and so for a Node.js install's), and the installation a symlink in them points to (a venv's
//! `python` -> `~/.pyenv/versions/3.11.7`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The homes every sandboxed command has hidden, besides the user's own.
const HOMES: [&str; 2] = ["/root", "/home"];

/// The homes a runner hides, and the bwrap arguments for each `PATH` its commands had: worked
/// out once per `PATH`, since reading its directories again would cost every command's start;
/// and polymorph's records, looked up for each command.
#[derive(Debug, Clone)]
pub struct Hiding {
    hidden: Vec<PathBuf>,
    /// polymorph's own records (its store, its ledger, SQLite's files beside the store): a
    /// directory among them gets an empty tmpfs, a file `/dev/null` bound over it. Looked up
    /// anew for every command: SQLite removes its `-wal` and `-shm` files when its last
    /// connection closes and makes them again on the next, and bwrap cannot bind over a file
    /// that is gone from a read-only root (the command would fail to start).
    records: Vec<PathBuf>,
    by_path: Arc<Mutex<HashMap<String, Vec<String>>>>,
}

/// What SQLite keeps beside a database file while it is open.
const SQLITE_SIBLINGS: [&str; 3] = ["-wal", "-shm", "-journal"];

impl Hiding {
    /// `/root` and `/home`.
    pub fn homes() -> Self {
        Hiding {
            hidden: HOMES.iter().map(PathBuf::from).collect(),
            records: Vec::new(),
            by_path: Arc::default(),
        }
    }

    /// Hides `dir` too.
    pub fn also(mut self, dir: PathBuf) -> Self {
        self.hidden.push(dir);
        self.by_path = Arc::default();
        self
    }

    /// Hides `record` (runs.db and the files SQLite keeps beside it, or the ledger), whichever
    /// of them exist when each command starts.
    pub fn also_record(mut self, record: PathBuf) -> Self {
        for suffix in [""].into_iter().chain(SQLITE_SIBLINGS) {
            let mut name = record.clone().into_os_string();
            name.push(suffix);
            self.records.push(name.into());
        }
        self.by_path = Arc::default();
        self
    }

    /// The bwrap arguments for a command whose `PATH` is `path_var`.
    pub fn args(&self, path_var: Option<&str>) -> Vec<String> {
        let key = path_var.unwrap_or_default().to_string();
        let mut cache = self
            .by_path
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut args = cache
            .entry(key)
            .or_insert_with(|| hiding_args(&self.hidden, path_var))
            .clone();
        for r in self.records.iter().filter_map(|r| r.canonicalize().ok()) {
            let shown = r.display().to_string();
            if r.is_dir() {
                args.extend(["--tmpfs".to_string(), shown]);
            } else if r.is_file() {
                args.extend(["--ro-bind".to_string(), "/dev/null".to_string(), shown]);
            }
        }
        args
    }
}

/// bwrap arguments that hide `hidden` (those that exist) and bind back what `path_var` needs.
fn hiding_args(hidden: &[PathBuf], path_var: Option<&str>) -> Vec<String> {
    let mut hidden: Vec<&PathBuf> = hidden
        .iter()
        .filter(|d| d.is_absolute() && d.parent().is_some() && d.is_dir())
        .collect();
    hidden.sort();
    hidden.dedup();
    let mut args = Vec::new();
    for d in &hidden {
        args.extend(["--tmpfs".to_string(), d.display().to_string()]);
    }
    for p in exposed(&hidden, path_var.unwrap_or_default()) {
        let p = p.display().to_string();
        args.extend(["--ro-bind".to_string(), p.clone(), p]);
    }
    args
}

/// Names of the files where tools keep tokens, keys and passwords.
const CREDENTIAL_NAMES: [&str; 9] = [
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".ssh",
    ".docker",
    "id_rsa",
    "id_ed25519",
];

/// Whether `dir` holds a file where a tool keeps secrets (`credentials.toml`, `.netrc`, a key):
/// such a directory is never bound back, whatever a `PATH` asks.
fn holds_credentials(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name().to_string_lossy().to_ascii_lowercase();
        name.contains("credential")
            || name.contains("token")
            || CREDENTIAL_NAMES.contains(&name.as_str())
    })
}

fn under(hidden: &[&PathBuf], p: &Path) -> bool {
    hidden.iter().any(|h| p.starts_with(h))
}

/// The `PATH` directories under a hidden home, and the installations their symlinks point to
/// there (a link's target's grandparent: `prefix/bin/tool` -> `prefix`), each once.
fn exposed(hidden: &[&PathBuf], path_var: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for dir in path_var.split(':').map(PathBuf::from) {
        let Ok(dir) = dir.canonicalize() else {
            continue;
        };
        if !under(hidden, &dir) {
            continue;
        }
        // A Python virtual environment's `bin` needs the environment around it (its
        // `pyvenv.cfg` and `lib/`), and a Node.js install's `bin` the `node_modules` beside it;
        // any other directory is bound alone (`~/.cargo/bin`, not the `~/.cargo` that holds a
        // registry token).
        let venv = dir.parent().filter(|p| {
            dir.ends_with("bin")
                && (p.join("pyvenv.cfg").is_file() || p.join("node_modules").is_dir())
        });
        let whole = venv.filter(|v| !holds_credentials(v));
        out.push(whole.map_or_else(|| dir.clone(), Path::to_path_buf));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_symlink() {
                continue;
            }
            let Some(target) = path.canonicalize().ok() else {
                continue;
            };
            // A link to a file beside it (rustup's `cargo -> rustup`) needs nothing more.
            if target.parent() == Some(dir.as_path()) {
                continue;
            }
            let Some(prefix) = target.parent().and_then(Path::parent) else {
                continue;
            };
            if under(hidden, prefix)
                && !hidden.iter().any(|h| **h == prefix)
                && !holds_credentials(prefix)
            {
                out.push(prefix.to_path_buf());
            }
        }
    }
    out.sort();
    out.dedup();
    // A directory inside another bound one needs no bind of its own.
    let all = out.clone();
    out.retain(|p| !all.iter().any(|q| q != p && p.starts_with(q)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn homes_are_hidden_and_a_venv_s_interpreter_and_a_node_install_bound_back() {
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let h = home.path();
        let mk = |p: &Path| std::fs::create_dir_all(p).unwrap_or_else(|e| panic!("{e}"));
        mk(&h.join(".ssh"));
        mk(&h.join("py/3.11/bin"));
        mk(&h.join("venv/bin"));
        mk(&h.join("npm/bin"));
        mk(&h.join("npm/node_modules/node-llama-cpp"));
        std::fs::write(h.join("venv/pyvenv.cfg"), "").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(h.join("py/3.11/bin/python3"), "").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(h.join("py/3.11/bin/python3"), h.join("venv/bin/python3"))
            .unwrap_or_else(|e| panic!("{e}"));
        let path = format!(
            "{}:{}:/usr/bin",
            h.join("venv/bin").display(),
            h.join("npm/bin").display()
        );
        let home_dir = h.canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let args = hiding_args(
            &[home_dir.clone(), PathBuf::from("/nonexistent")],
            Some(&path),
        );
        let shown = |p: &str| home_dir.join(p).display().to_string();
        assert_eq!(
            args,
            [
                "--tmpfs".to_string(),
                home_dir.display().to_string(),
                "--ro-bind".into(),
                shown("npm"),
                shown("npm"),
                "--ro-bind".into(),
                shown("py/3.11"),
                shown("py/3.11"),
                "--ro-bind".into(),
                shown("venv"),
                shown("venv"),
            ]
        );
        // Nothing under the home is bound back unless PATH asks for it.
        let only = std::slice::from_ref(&home_dir);
        assert_eq!(hiding_args(only, Some("/usr/bin")).len(), 2);
    }

    #[test]
    fn rustup_s_layout_binds_its_bin_alone_never_the_directory_with_the_token() {
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let h = home.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let bin = h.join(".cargo/bin");
        std::fs::create_dir_all(&bin).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(h.join(".cargo/credentials.toml"), "token = \"secret\"\n")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(bin.join("rustup"), "").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("rustup", bin.join("cargo")).unwrap_or_else(|e| panic!("{e}"));
        // A tool elsewhere whose link points into a directory that keeps a token.
        let tool = h.join("tool");
        std::fs::create_dir_all(tool.join("bin")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(tool.join("bin/real"), "").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(tool.join(".git-credentials"), "x").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(tool.join("bin/real"), bin.join("tool"))
            .unwrap_or_else(|e| panic!("{e}"));
        let args = hiding_args(
            std::slice::from_ref(&h),
            Some(&format!("{}:/usr/bin", bin.display())),
        );
        let b = bin.display().to_string();
        assert_eq!(
            args,
            [
                "--tmpfs".to_string(),
                h.display().to_string(),
                "--ro-bind".into(),
                b.clone(),
                b
            ]
        );
    }
}
