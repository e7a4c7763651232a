//! `[node]` of task.toml: a task whose commands run Node.js names a `package.json` with its
//! `package-lock.json` beside it; `polymorph setup` installs exactly the locked packages once
//! (`npm install` against the lock, keyed by both files' hash, under the user's cache); the
//! task's commands find them through `POLYMORPH_NODE_MODULES`, offline. A run refuses to start
//! until they are there.

use super::python::{cache_root, install_fresh, is_ready, run};
use anyhow::{Context as _, Result, bail};
use sandbox::{RelPath, sha256_hex};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The variable that names the installed `node_modules` for a task's commands.
pub const MODULES_VAR: &str = "POLYMORPH_NODE_MODULES";
/// Hex digits of the files' hash in the install's directory name.
const HASH_LEN: usize = 12;
/// The lock file npm writes beside a package.json.
const LOCK_FILE: &str = "package-lock.json";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNode {
    package: String,
}

/// A task's Node.js packages: what is locked and where it is installed.
#[derive(Debug, Clone)]
pub struct NodeEnv {
    /// The package.json.
    pub package: PathBuf,
    /// `name@version` of each direct dependency, as package.json pins them.
    pub pins: Vec<String>,
    text: String,
    /// Where `node_modules` is installed (`<dir>/node_modules`).
    pub dir: PathBuf,
}

/// Reads package.json and its lock: every direct dependency pinned to an exact version, so that
/// every machine installs the same packages.
pub(super) fn parse(
    task_dir: &Path,
    task_name: &str,
    file: &Path,
    raw: &RawNode,
) -> Result<NodeEnv> {
    let f = file.display();
    let rel = RelPath::new(&raw.package).map_err(|e| anyhow::anyhow!("{f}: node.package: {e}"))?;
    let path = rel.under(task_dir);
    let read = |p: &Path| {
        std::fs::read_to_string(p).with_context(|| {
            format!(
                "{f}: node.package = {:?}: cannot read {}",
                raw.package,
                p.display()
            )
        })
    };
    let package = read(&path)?;
    let lock = read(&path.with_file_name(LOCK_FILE))?;
    let json: serde_json::Value =
        serde_json::from_str(&package).with_context(|| format!("{}: not JSON", path.display()))?;
    let mut pins = Vec::new();
    if let Some(deps) = json.get("dependencies").and_then(|d| d.as_object()) {
        for (name, version) in deps {
            let v = version.as_str().unwrap_or_default();
            let exact = v.starts_with(|c: char| c.is_ascii_digit())
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-+".contains(c));
            if !exact {
                bail!(
                    "{}: dependency {name} = {version}: pin an exact version (\"3.21.1\"), so every machine installs the same packages",
                    path.display()
                );
            }
            pins.push(format!("{name}@{v}"));
        }
    }
    if pins.is_empty() {
        bail!("{}: lists no dependencies", path.display());
    }
    let text = format!("{package}\0{lock}");
    let hash = &sha256_hex(text.as_bytes())[..HASH_LEN];
    Ok(NodeEnv {
        package: path,
        pins,
        dir: cache_root()
            .join("node")
            .join(format!("{task_name}-{hash}")),
        text,
    })
}

impl NodeEnv {
    /// The installed `node_modules`, which the commands get as [`MODULES_VAR`].
    pub fn modules(&self) -> PathBuf {
        self.dir.join("node_modules")
    }

    /// The install's `bin`, which goes on the task commands' PATH: the sandbox binds the
    /// install around a `bin` with `node_modules` beside it, as it does a Python environment.
    pub fn bin(&self) -> PathBuf {
        self.dir.join("bin")
    }

    /// Whether every locked package is installed.
    pub fn ready(&self) -> bool {
        self.modules().is_dir() && self.bin().is_dir() && is_ready(&self.dir, &self.text)
    }

    /// Installs the locked packages with `npm install` against the lock (`npm ci` refuses a lock
    /// that npm wrote on Linux without other platforms' binaries), no optional packages (those
    /// binaries) and no install scripts: nothing is built or downloaded beyond the locked files.
    pub fn install(&self, npm: &str) -> Result<()> {
        install_fresh(&self.dir, &self.text, |scratch| {
            std::fs::create_dir_all(scratch.join("bin"))?;
            let lock = self.package.with_file_name(LOCK_FILE);
            for (from, name) in [(&self.package, "package.json"), (&lock, LOCK_FILE)] {
                std::fs::copy(from, scratch.join(name))
                    .with_context(|| format!("copying {}", from.display()))?;
            }
            run(
                Command::new(npm)
                    .current_dir(scratch)
                    .args(["install", "--omit=optional", "--ignore-scripts"])
                    .args(["--no-audit", "--no-fund", "--loglevel=error"]),
                "npm install",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(package: &str) -> Result<NodeEnv> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("package.json"), package)?;
        std::fs::write(dir.path().join(LOCK_FILE), "{}")?;
        let raw = RawNode {
            package: "package.json".into(),
        };
        parse(dir.path(), "t", Path::new("task.toml"), &raw)
    }

    #[test]
    fn only_exact_versions_load_and_their_hash_names_the_install() {
        let a = parsed(r#"{"dependencies": {"node-llama-cpp": "3.21.1"}}"#).unwrap();
        assert_eq!(a.pins, ["node-llama-cpp@3.21.1"]);
        assert!(!a.ready());
        let b = parsed(r#"{"dependencies": {"node-llama-cpp": "3.21.0"}}"#).unwrap();
        assert_ne!(a.dir, b.dir);
        for bad in [
            r#"{"dependencies": {"x": "^3.21.1"}}"#,
            r#"{"dependencies": {"x": "latest"}}"#,
            r#"{"dependencies": {"x": ">=1 <2"}}"#,
            r#"{"dependencies": {}}"#,
            "not json",
        ] {
            let e = format!("{:#}", parsed(bad).map(|_| ()).unwrap_err());
            assert!(
                e.contains("pin an exact")
                    || e.contains("no dependencies")
                    || e.contains("not JSON"),
                "{bad:?}: {e}"
            );
        }
    }
}
