//! `[python]` of task.toml: a task whose commands run Python names a requirements file of pinned
//! packages; `polymorph setup` installs them once into a virtual environment of their own (keyed
//! by the file's hash, under the user's cache), and the task's commands find it first on PATH,
//! offline. A run refuses to start, saying what to install, until it is there.

use super::join::{self, Join, RawJoin};
use anyhow::{Context as _, Result, bail};
use sandbox::{RelPath, sha256_hex};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Written into an environment once every package is in: a half-made one is never used.
const READY_FILE: &str = ".polymorph-ready";
/// Hex digits of the requirements' hash in the environment's directory name.
const HASH_LEN: usize = 12;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPython {
    pub(super) requirements: String,
    /// Files joined from parts the wheels install (join.rs).
    #[serde(default)]
    pub(super) join: Vec<RawJoin>,
}

/// A task's Python environment: its pinned packages and where they are installed.
#[derive(Debug, Clone)]
pub struct PythonEnv {
    /// The requirements file.
    pub requirements: PathBuf,
    /// `name==version`, one per package, as the file lists them.
    pub pins: Vec<String>,
    /// Files joined from the installed parts, after the packages are in.
    pub joins: Vec<Join>,
    /// The requirements and the joins, as the ready marker and the directory's hash hold them.
    text: String,
    /// The virtual environment's directory.
    pub dir: PathBuf,
}

/// Where polymorph keeps what it installs: `$POLYMORPH_CACHE`, else `$XDG_CACHE_HOME/polymorph`,
/// else `~/.cache/polymorph`.
pub(crate) fn cache_root() -> PathBuf {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("POLYMORPH_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("polymorph")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/polymorph")))
        .unwrap_or_else(|| std::env::temp_dir().join("polymorph-cache"))
}

/// Reads and checks the requirements file: every line a pinned `name==version` (comments and
/// blank lines aside), so that the environment is the same on every machine.
pub(super) fn parse(
    task_dir: &Path,
    task_name: &str,
    file: &Path,
    raw_python: &RawPython,
) -> Result<PythonEnv> {
    let f = file.display();
    let raw = raw_python.requirements.as_str();
    let joins = join::parse(file, &raw_python.join)?;
    let rel = RelPath::new(raw).map_err(|e| anyhow::anyhow!("{f}: python.requirements: {e}"))?;
    let path = rel.under(task_dir);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "{f}: python.requirements = {raw:?}: cannot read {}",
            path.display()
        )
    })?;
    let mut pins = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let pinned = line.split_once("==").is_some_and(|(name, version)| {
            !name.trim().is_empty()
                && !version.trim().is_empty()
                && name
                    .trim()
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                && !version.contains(['*', ',', ';', ' '])
        });
        if !pinned {
            bail!(
                "{}:{}: {line:?} is not pinned: write name==version, so every machine installs the same packages",
                path.display(),
                n + 1
            );
        }
        pins.push(line.to_string());
    }
    if pins.is_empty() {
        bail!("{}: lists no packages", path.display());
    }
    let mut text = text;
    for j in &joins {
        text.push_str(&format!("# {}\n", j.describe()));
    }
    let hash = &sha256_hex(text.as_bytes())[..HASH_LEN];
    Ok(PythonEnv {
        requirements: path,
        pins,
        joins,
        dir: cache_root()
            .join("python")
            .join(format!("{task_name}-{hash}")),
        text,
    })
}

impl PythonEnv {
    /// The environment's `bin`, which goes first on the task commands' PATH.
    pub fn bin(&self) -> PathBuf {
        self.dir.join("bin")
    }

    /// Whether every pinned package is installed.
    pub fn ready(&self) -> bool {
        self.bin().join("python").exists() && is_ready(&self.dir, &self.text)
    }

    /// `PATH` for the task's commands: the environment's bin, then `host`.
    pub fn path_var(&self, host: &str) -> String {
        format!("{}:{host}", self.bin().display())
    }

    /// Creates the environment with `python`, installs the pins with pip (no dependencies
    /// beyond the pinned ones) and joins the files split across them, in a scratch directory
    /// renamed into place at the end, so an interrupted install leaves nothing that looks
    /// ready. pip's output goes to stderr.
    pub fn install(&self, python: &str) -> Result<()> {
        install_fresh(&self.dir, &self.text, |scratch| {
            run(
                Command::new(python).args(["-m", "venv"]).arg(scratch),
                &format!("`{python} -m venv`"),
            )?;
            run(
                Command::new(scratch.join("bin/python"))
                    .args(["-m", "pip", "install", "--no-deps", "--no-input"])
                    .args(["--disable-pip-version-check", "-r"])
                    .arg(&self.requirements),
                "pip install",
            )?;
            if self.joins.is_empty() {
                return Ok(());
            }
            let site = join::site_packages(scratch)?;
            for j in &self.joins {
                eprintln!("joining {} from {} parts", j.into.as_str(), j.parts.len());
                join::apply(&site, j)?;
            }
            Ok(())
        })
    }
}

/// Runs an installer's step with its output on stderr; `what` names it when it fails.
pub(super) fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd
        .stdout(std::process::Stdio::inherit())
        .status()
        .with_context(|| format!("{what}: cannot start it"))?;
    if !status.success() {
        bail!("{what} failed ({status}); see its output above");
    }
    Ok(())
}

/// Fills `dir` by `fill` in a scratch directory beside it, marks it ready with `text` and renames
/// it into place: an interrupted install leaves nothing that looks ready.
pub(super) fn install_fresh(
    dir: &Path,
    text: &str,
    fill: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    let parent = dir.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let scratch = parent.join(format!("{name}.partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    if let Err(e) = fill(&scratch) {
        let _ = std::fs::remove_dir_all(&scratch);
        return Err(e);
    }
    std::fs::write(scratch.join(READY_FILE), text)?;
    if dir.exists() {
        std::fs::remove_dir_all(dir)
            .with_context(|| format!("removing the unfinished {}", dir.display()))?;
    }
    std::fs::rename(&scratch, dir).with_context(|| format!("moving it to {}", dir.display()))
}

/// Whether `dir` was filled completely from `text` (see [`install_fresh`]).
pub(super) fn is_ready(dir: &Path, text: &str) -> bool {
    std::fs::read_to_string(dir.join(READY_FILE)).is_ok_and(|t| t == text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<PythonEnv> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("requirements.txt"), text)?;
        let raw = RawPython {
            requirements: "requirements.txt".into(),
            join: Vec::new(),
        };
        parse(dir.path(), "t", Path::new("task.toml"), &raw)
    }

    #[test]
    fn only_pinned_requirements_load_and_their_hash_names_the_environment() {
        let a = parsed("# the model\nnumpy==2.4.6\n\nsafetensors==0.8.0  # weights\n").unwrap();
        assert_eq!(a.pins, ["numpy==2.4.6", "safetensors==0.8.0"]);
        assert!(!a.ready());
        let b = parsed("numpy==2.4.5\nsafetensors==0.8.0\n").unwrap();
        assert_ne!(a.dir, b.dir);
        for bad in [
            "numpy\n",
            "numpy>=2\n",
            "numpy==2.*\n",
            "numpy==\n",
            "\n# none\n",
        ] {
            let e = parsed(bad).map(|_| ()).unwrap_err().to_string();
            assert!(
                e.contains("not pinned") || e.contains("no packages"),
                "{bad:?}: {e}"
            );
        }
    }
}
