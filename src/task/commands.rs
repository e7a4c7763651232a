//! `[commands]` of task.toml: build, test and bench (and a reference computed once per
//! context), their timeout, the environment passed
//! through (never a secret), the machine state read before each bench, and the limits each
//! command runs under.

use anyhow::{Result, bail};
use serde::Deserialize;
use std::path::Path;
use std::time::Duration;

/// Per-command limit when a task names none: long enough for a real build.
const DEFAULT_TIMEOUT_S: u64 = 300;
/// Memory each process of a command may map writable when a task names none: room for the
/// serving tasks' models and interpreters, far below a machine's.
const DEFAULT_MEMORY_MB: u64 = 8 << 10;
/// Tasks (processes and threads) a command may run at once when a task names none: a build's
/// parallel compilers, a server's threads, with room to spare.
const DEFAULT_PROCESSES: u64 = 1024;
/// A command's private /tmp when a task names none.
const DEFAULT_TMP_MB: u64 = 1 << 10;

#[derive(Debug, Clone)]
pub struct Commands {
    pub build: Option<String>,
    pub test: String,
    pub bench: String,
    /// Run once per context on the task as given, its output kept outside every tree and shown
    /// read-only to each test and bench (`engine/evaluate/reference.rs`).
    pub reference: Option<String>,
    pub timeout: Duration,
    /// Extra environment variables passed through to commands (never secrets).
    pub env: Vec<String>,
    /// Read right before each bench process, outside the sandbox (like the context probes),
    /// and kept with its sample: what the machine was like (a GPU's SM clock and temperature).
    pub state: Option<String>,
    /// Most memory each process of a command may map writable (`memory_mb`).
    pub memory_bytes: u64,
    /// Size of a command's private /tmp, a tmpfs in memory (`tmp_mb`).
    pub tmp_bytes: u64,
    /// Most tasks (processes and threads) a command may run at once (`processes`).
    pub processes: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCommands {
    build: Option<String>,
    test: Option<String>,
    bench: Option<String>,
    reference: Option<String>,
    timeout_s: Option<u64>,
    #[serde(default)]
    env: Vec<String>,
    state: Option<String>,
    memory_mb: Option<u64>,
    tmp_mb: Option<u64>,
    processes: Option<u64>,
}

/// Names that must never reach a task's commands, even when a task asks for them.
fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"]
        .iter()
        .any(|w| upper.contains(w))
}

/// `[commands]`: test and bench are required, the timeout positive, no secret passed through.
pub(super) fn commands(file: &Path, raw: RawCommands) -> Result<Commands> {
    let f = file.display();
    let missing = |field: &str, example: &str| {
        anyhow::anyhow!("{f}: commands.{field} is missing: add e.g. {field} = {example:?}")
    };
    let test = raw
        .test
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| missing("test", "./check"))?;
    let bench = raw
        .bench
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| missing("bench", "./bench"))?;
    let timeout_s = raw.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
    if timeout_s == 0 {
        bail!("{f}: commands.timeout_s = 0: give a positive number of seconds");
    }
    if let Some(secret) = raw.env.iter().find(|n| is_secret_name(n)) {
        bail!("{f}: commands.env names {secret:?}: secrets are never passed to task commands");
    }
    let mb = |field: &str, v: Option<u64>, default: u64| match v {
        Some(0) => bail!("{f}: commands.{field} = 0: give a positive number of MiB"),
        Some(n) => Ok(n << 20),
        None => Ok(default << 20),
    };
    Ok(Commands {
        memory_bytes: mb("memory_mb", raw.memory_mb, DEFAULT_MEMORY_MB)?,
        tmp_bytes: mb("tmp_mb", raw.tmp_mb, DEFAULT_TMP_MB)?,
        processes: match raw.processes {
            Some(0) => bail!("{f}: commands.processes = 0: give a positive number of tasks"),
            Some(n) => n,
            None => DEFAULT_PROCESSES,
        },
        build: raw.build.filter(|b| !b.trim().is_empty()),
        reference: raw.reference.filter(|r| !r.trim().is_empty()),
        test,
        bench,
        timeout: Duration::from_secs(timeout_s),
        env: raw.env,
        // `state = ""` turns the default off.
        state: raw.state,
    })
}
