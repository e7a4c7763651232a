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
/// out once per `PATH`, since reading its directories again would cost every command's start.
#[derive(Debug, Clone)]
pub struct Hiding {
    hidden: Vec<PathBuf>,
    by_path: Arc<Mutex<HashMap<String, Vec<String>>>>,
}

impl Hiding {
    /// `/root` and `/home`.
    pub fn homes() -> Self {
        Hiding {
            hidden: HOMES.iter().map(PathBuf::from).collect(),
            by_path: Arc::default(),
        }
    }

    /// Hides `dir` too.
    pub fn also(mut self, dir: PathBuf) -> Self {
        self.hidden.push(dir);
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
        cache
            .entry(key)
            .or_insert_with(|| hiding_args(&self.hidden, path_var))
            .clone()
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
        out.push(venv.map_or_else(|| dir.clone(), Path::to_path_buf));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_symlink() {
                continue;
            }
            let Some(prefix) = path
                .canonicalize()
                .ok()
                .and_then(|t| t.parent()?.parent().map(Path::to_path_buf))
            else {
                continue;
            };
            if under(hidden, &prefix) && !hidden.iter().any(|h| **h == prefix) {
                out.push(prefix);
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
}
