//! Contexts: what a result holds for. A fingerprint of the hardware (CPU model and cores, GPUs
//! and driver where `nvidia-smi` answers), the toolchain versions the task names, the workload
//! file's hash and the model id; its id is a short stable hash of all of that.

use super::spec::Task;
use crate::measure::objective::Weights;
use anyhow::{Context as _, Result, bail};
use sandbox::{FileTree, RelPath, sha256_hex};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    /// The sha256 of the measurement cache a simulated run replays (`run --simulate`): its
    /// results never share a context with measured ones. Empty for real runs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub simulation: String,
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

impl Workload {
    /// The objective's case weights, when the workload is a JSON object with a `"weights"`
    /// object (`{"weights": {"m1_n2048_k2048": 3, "m16_n512_k2048": 1}, ...}`: each case's
    /// share of traffic or time); none (equal weights) for any other workload.
    pub fn weights(&self) -> Result<Weights> {
        let shown = self.path.display();
        let text =
            std::fs::read(&self.path).with_context(|| format!("reading workload {shown}"))?;
        let Ok(serde_json::Value::Object(obj)) = serde_json::from_slice(&text) else {
            return Ok(Weights::default());
        };
        let Some(raw) = obj.get("weights") else {
            return Ok(Weights::default());
        };
        let map: BTreeMap<String, f64> =
            serde_json::from_value(raw.clone()).with_context(|| {
                format!("workload {shown}: \"weights\" must map case names to numbers")
            })?;
        Weights::new(map).map_err(|e| anyhow::anyhow!("workload {shown}: {e}"))
    }
}

/// How long a probe may take: `nvidia-smi` on a hung driver, or a toolchain command waiting on
/// a network file system, must not hang `run`, `context` or the daemon.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a running probe is looked at.
const PROBE_POLL: Duration = Duration::from_millis(20);

/// Runs a probe command with only PATH set, in its own process group (killed whole at the
/// timeout); its stdout when it succeeds, `None` when it fails, an error when it hangs.
pub fn probe(cmd: &str, path_var: &str) -> Result<Option<String>> {
    use std::io::Read as _;
    use std::os::unix::process::CommandExt as _;
    let Ok(mut child) = Command::new("sh")
        .args(["-c", cmd])
        .env_clear()
        .env("PATH", path_var)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
    else {
        return Ok(None);
    };
    // The pipe is drained by a thread so a chatty probe cannot block on a full pipe.
    let mut stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.read_to_end(&mut out);
        }
        out
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() >= PROBE_TIMEOUT {
            // SAFETY: kill(2) on the probe's own process group; no memory is touched.
            unsafe {
                libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
            }
            let _ = child.wait();
            bail!(
                "context probe `{cmd}` did not answer within {}s (a hung driver or toolchain?); nothing was run",
                PROBE_TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(PROBE_POLL);
    };
    let out = reader.join().unwrap_or_default();
    Ok(status
        .success()
        .then(|| String::from_utf8_lossy(&out).into_owned()))
}

fn first_line(cmd: &str, path_var: &str) -> Result<String> {
    Ok(match probe(cmd, path_var)? {
        Some(out) => out.lines().next().unwrap_or("").trim().to_string(),
        None => format!("{cmd}: unavailable"),
    })
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

fn gpus(path_var: &str) -> Result<Vec<String>> {
    let found = path_var
        .split(':')
        .any(|d| Path::new(d).join("nvidia-smi").is_file());
    if !found {
        return Ok(Vec::new());
    }
    let out = probe(
        "nvidia-smi --query-gpu=name,driver_version --format=csv,noheader",
        path_var,
    )?
    .unwrap_or_default();
    Ok(out
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect())
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
    // lines (a description, say) do not change what a result means. The files beside the task's
    // workload in its own folder are the task's other traces, data a run may be given with
    // --workload: recording a new trace there changes no context but its own.
    let toml = RelPath::new(TASK_FILE).ok();
    let traces = task
        .workload
        .as_ref()
        .and_then(|w| w.as_str().rsplit_once('/'))
        .map(|(dir, _)| format!("{dir}/"));
    let is_trace = |p: &RelPath| {
        Some(p) == task.workload.as_ref()
            || traces
                .as_deref()
                .is_some_and(|d| p.as_str().strip_prefix(d).is_some_and(|f| !f.contains('/')))
    };
    let mut harness: String = source
        .iter()
        .filter(|(p, _)| !task.is_editable(p) && !is_trace(p) && Some(*p) != toml.as_ref())
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
    // Only where there is one, so that the contexts of tasks without a reference keep their ids.
    if let Some(r) = &c.reference {
        harness.push_str(&format!("reference\0{r}\n"));
    }
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
        gpus: gpus(path_var)?,
        toolchain: task
            .toolchain
            .iter()
            .map(|c| first_line(c, path_var))
            .collect::<Result<_>>()?,
        workload: label,
        workload_sha256: sha,
        model: task.model.clone(),
        harness_sha256: sha256_hex(harness.as_bytes()),
        simulation: String::new(),
    })
}
