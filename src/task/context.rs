//! Contexts: what a result holds for. A fingerprint of the hardware (CPU model and cores, GPUs
//! and driver where `nvidia-smi` answers), the toolchain versions the task names, the workload
//! file's hash and the model id; its id is a short stable hash of all of that.

use super::spec::Task;
use anyhow::{Context as _, Result};
use sandbox::{FileTree, RelPath, sha256_hex};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The task file, whose running and measuring settings are hashed field by field.
const TASK_FILE: &str = "task.toml";

/// Hex digits of the context id: 48 bits, ample for the contexts one team ever sees.
const ID_LEN: usize = 12;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Fingerprint {
    pub cpu_model: String,
    pub cpu_cores: usize,
    /// `name, driver` per GPU; empty without `nvidia-smi`.
    pub gpus: Vec<String>,
    /// First line of each toolchain command's output, e.g. `cc (Debian 12.2.0-14) 12.2.0`.
    pub toolchain: Vec<String>,
    /// The workload file's path as the task names it, and its sha256.
    pub workload: String,
    pub workload_sha256: String,
    pub model: String,
    /// Hash over the task's harness-owned files: editing the bench or the check is a new context.
    pub harness_sha256: String,
}

impl Fingerprint {
    pub fn id(&self) -> String {
        let canonical = serde_json::to_string(self).unwrap_or_default();
        sha256_hex(canonical.as_bytes())[..ID_LEN].to_string()
    }
}

/// The workload a run uses: the task's, or one given on the command line.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Where to read it.
    pub path: PathBuf,
    /// How it is named in the fingerprint.
    pub label: String,
}

impl Workload {
    pub fn resolve(task: &Task, cli: Option<&Path>) -> Result<Option<Workload>> {
        if let Some(p) = cli {
            let path = p
                .canonicalize()
                .with_context(|| format!("workload {} not found", p.display()))?;
            let label = path
                .strip_prefix(&task.dir)
                .map_or_else(|_| path.display().to_string(), |r| r.display().to_string());
            return Ok(Some(Workload { path, label }));
        }
        Ok(task.workload.as_ref().map(|w| Workload {
            path: w.under(&task.dir),
            label: w.to_string(),
        }))
    }
}

/// Runs a probe command with only PATH set; its stdout when it succeeds.
fn probe(cmd: &str, path_var: &str) -> Option<String> {
    let out = Command::new("sh")
        .args(["-c", cmd])
        .env_clear()
        .env("PATH", path_var)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn first_line(cmd: &str, path_var: &str) -> String {
    match probe(cmd, path_var) {
        Some(out) => out.lines().next().unwrap_or("").trim().to_string(),
        None => format!("{cmd}: unavailable"),
    }
}

fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    info.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            matches!(k.trim(), "model name" | "Model" | "cpu model").then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

fn gpus(path_var: &str) -> Vec<String> {
    let found = path_var
        .split(':')
        .any(|d| Path::new(d).join("nvidia-smi").is_file());
    if !found {
        return Vec::new();
    }
    let out = probe(
        "nvidia-smi --query-gpu=name,driver_version --format=csv,noheader",
        path_var,
    )
    .unwrap_or_default();
    out.lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// Probes this machine for the task's context.
pub fn fingerprint(
    task: &Task,
    source: &FileTree,
    workload: Option<&Workload>,
    path_var: &str,
) -> Result<Fingerprint> {
    // The harness: every harness-owned file, and what task.toml says about running and
    // measuring. The workload and the model id have their own fields, and task.toml's other
    // lines (a description, say) do not change what a result means.
    let toml = RelPath::new(TASK_FILE).ok();
    let mut harness: String = source
        .iter()
        .filter(|(p, _)| {
            !task.is_editable(p) && Some(*p) != task.workload.as_ref() && Some(*p) != toml.as_ref()
        })
        .map(|(p, b)| format!("{p}\0{}\n", sha256_hex(b)))
        .collect();
    let c = &task.commands;
    let m = &task.metric;
    harness.push_str(&format!(
        "commands\0{:?}\0{}\0{}\0{}\0{:?}\nmetric\0{}\0{}\n",
        c.build,
        c.test,
        c.bench,
        c.timeout.as_secs(),
        c.env,
        m.name,
        m.direction.as_str()
    ));
    let (label, sha) = match workload {
        Some(w) => {
            let bytes = std::fs::read(&w.path)
                .with_context(|| format!("reading workload {}", w.path.display()))?;
            (w.label.clone(), sha256_hex(&bytes))
        }
        None => (String::new(), String::new()),
    };
    Ok(Fingerprint {
        cpu_model: cpu_model(),
        cpu_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        gpus: gpus(path_var),
        toolchain: task
            .toolchain
            .iter()
            .map(|c| first_line(c, path_var))
            .collect(),
        workload: label,
        workload_sha256: sha,
        model: task.model.clone(),
        harness_sha256: sha256_hex(harness.as_bytes()),
    })
}
