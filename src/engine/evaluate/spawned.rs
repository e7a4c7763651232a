//! The real `Processes`: a task's build, test and bench commands run through the sandbox's
//! runner with a scrubbed environment, bench processes one at a time on this machine (a
//! machine-wide lock), each bench printing one sample. Failures carry a reason a person can read.

use super::failure::{Blame, Failure};
use super::processes::{Benched, Processes, RoundSeed};
use super::reference::{self, Reference};
use crate::measure::{parse_sample, unverified_cases};
use crate::record::Stage;
use crate::task::requires::gpu_devices;
use crate::task::{Requirement, Task};
use anyhow::Context as _;
use sandbox::{
    CommandSpec, ExitKind, FileTree, Isolation, Outcome, Runner, SandboxError, TreeAccess,
    Workspace,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Tail of each command's stdout/stderr kept: enough for a compiler's first errors.
const OUTPUT_CAP: usize = 64 * 1024;
/// Part of a failing command's output stored with its evaluation.
const LOG_CAP: usize = 8 * 1024;
/// Largest file a task command may write; builds of real projects stay far below.
const MAX_FILE_BYTES: u64 = 1 << 30;
/// Characters of a machine state kept per sample.
const STATE_CAP: usize = 200;
/// Environment variables a task command always gets from polymorph's own environment.
const ENV_ALLOWLIST: [&str; 4] = ["PATH", "LANG", "LC_ALL", "TZ"];

/// A task's commands, run for real.
pub struct Spawned<'a> {
    task: &'a Task,
    runner: &'a Runner,
    cancel: sandbox::CancelFlag,
    base_env: Vec<(String, String)>,
    /// The workload's path relative to a workspace, when the task has one.
    workload: Option<String>,
    bench_lock: PathBuf,
    /// Device nodes the task's commands see (a GPU's, when the task requires one).
    devices: Vec<PathBuf>,
    process_time: Duration,
    /// The code layout of a confirmation's builds (`Processes::set_layout`).
    layout: Option<u32>,
    /// Where the task's reference is, as every command sees it: being written by the reference
    /// command, or sealed and shown read-only to the others.
    reference: Option<Shown>,
}

/// The task's reference as a command sees it.
enum Shown {
    Writing(PathBuf),
    Sealed(Reference),
}

/// The last `cap` bytes of `text` (cut at a character boundary).
fn tail(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    let mut start = text.len() - cap;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}

fn first_matching_line(text: &str, needles: &[&str]) -> Option<String> {
    text.lines()
        .find(|l| needles.iter().any(|n| l.contains(n)))
        .map(|l| l.trim().to_string())
}

fn last_line(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string())
}

/// A short, specific reason from a failed command: the first compiler error or failing check
/// line, else the last line it printed.
fn summarize(outcome: &Outcome, timeout: Duration) -> String {
    let how = outcome.describe(timeout);
    let both = format!("{}\n{}", outcome.stderr, outcome.stdout);
    let line = first_matching_line(
        &both,
        &["error", "Error", "FAIL", "fail", "panic", "Assertion"],
    )
    .or_else(|| last_line(&both));
    match (outcome.exit, line) {
        (ExitKind::TimedOut, _) => how,
        (_, Some(l)) => format!("{l} ({how})"),
        (_, None) => how,
    }
}

/// What a process prints, or how it ends, when it runs into a limit of memory, processes or
/// /tmp: the out-of-memory killer's SIGKILL (and a shell's "Killed" for a child it took), or the
/// usual words for a refused allocation, fork or write.
const LIMIT_SIGNS: [&str; 8] = [
    "Killed",
    "No space left on device",
    "Cannot allocate memory",
    "MemoryError",
    "out of memory",
    "bad_alloc",
    "Cannot fork",
    "Resource temporarily unavailable",
];

fn hit_a_limit(outcome: &Outcome) -> bool {
    outcome.exit == ExitKind::Signal(libc::SIGKILL)
        || LIMIT_SIGNS
            .iter()
            .any(|s| outcome.stderr.contains(s) || outcome.stdout.contains(s))
}

fn log_of(outcome: &Outcome) -> Option<String> {
    let text = format!("{}{}", outcome.stdout, outcome.stderr);
    (!text.is_empty()).then(|| tail(&text, LOG_CAP))
}

impl<'a> Spawned<'a> {
    pub fn new(
        task: &'a Task,
        runner: &'a Runner,
        cancel: sandbox::CancelFlag,
        workload: Option<String>,
    ) -> Self {
        let mut base_env: Vec<(String, String)> = ENV_ALLOWLIST
            .iter()
            .map(|s| s.to_string())
            .chain(task.commands.env.iter().cloned())
            .filter_map(|k| std::env::var(&k).ok().map(|v| (k, v)))
            .map(|(k, v)| match k.as_str() {
                "PATH" => (k, task.path_var(&v)),
                _ => (k, v),
            })
            .collect();
        if !task.model.is_empty() {
            base_env.push(("POLYMORPH_MODEL".into(), task.model.clone()));
        }
        if let Some(node) = &task.node {
            base_env.push((
                crate::task::node::MODULES_VAR.into(),
                node.modules().display().to_string(),
            ));
        }
        if task.python.is_some() {
            // Bytecode caches written next to the sources would change the tree after the build.
            base_env.push(("PYTHONDONTWRITEBYTECODE".into(), "1".into()));
        }
        Spawned {
            task,
            runner,
            cancel,
            base_env,
            workload,
            bench_lock: std::env::temp_dir().join("polymorph-bench.lock"),
            devices: if task.requires.contains(&Requirement::NvidiaGpu) {
                gpu_devices(Path::new("/dev"))
            } else {
                Vec::new()
            },
            process_time: Duration::ZERO,
            layout: None,
            reference: None,
        }
    }

    /// The task's reference for context `context_id`: the one kept, or else computed now on
    /// `source` (the task as given) in a fresh workspace: its build, then its reference command
    /// with an empty directory to write. Every later command sees it read-only.
    pub fn attach_reference(&mut self, source: &FileTree, context_id: &str) -> anyhow::Result<()> {
        let Some(script) = self.task.commands.reference.clone() else {
            return Ok(());
        };
        let dir = reference::place(&self.task.name, context_id);
        if let Some(kept) = Reference::load(&dir) {
            self.reference = Some(Shown::Sealed(kept));
            return Ok(());
        }
        let parent = dir.parent().unwrap_or(&dir);
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        let made = tempfile::Builder::new()
            .prefix(".making-")
            .tempdir_in(parent)
            .with_context(|| format!("creating a directory in {}", parent.display()))?;
        eprintln!(
            "computing {}'s reference for this context (once: `{script}`)",
            self.task.name
        );
        let ws = Workspace::create(source, None)?;
        let why = |f: Failure| anyhow::anyhow!("the task as given: {}", f.reason);
        self.build(source, ws.path()).map_err(why)?;
        self.reference = Some(Shown::Writing(made.path().to_path_buf()));
        let out = self.run(&script, ws.path(), TreeAccess::ReadOnly, Stage::Test, None);
        self.reference = None;
        let out = out.map_err(why)?;
        if !out.success() {
            let f = self.command_failure(Stage::Test, "its reference command failed", &out);
            anyhow::bail!(
                "the task as given: {}{}",
                f.reason,
                f.log.map(|l| format!("\n{l}")).unwrap_or_default()
            );
        }
        let sealed = Reference::seal(&made.keep(), &dir)?;
        self.reference = Some(Shown::Sealed(sealed));
        Ok(())
    }

    fn run(
        &mut self,
        script: &str,
        dir: &Path,
        tree: TreeAccess,
        stage: Stage,
        round: Option<RoundSeed>,
    ) -> Result<Outcome, Failure> {
        let mut env = self.base_env.clone();
        env.push(("HOME".into(), dir.display().to_string()));
        env.push(("TMPDIR".into(), "/tmp".into()));
        // Fresh and unpredictable for every run, so a candidate cannot key on it.
        env.push(("POLYMORPH_SEED".into(), rand::random::<u32>().to_string()));
        if let Some(RoundSeed(seed)) = round {
            env.push(("POLYMORPH_ROUND_SEED".into(), seed.to_string()));
        }
        if let Some(layout) = self.layout {
            env.push(("POLYMORPH_LAYOUT".into(), layout.to_string()));
        }
        if let Some(rel) = &self.workload {
            env.push((
                "POLYMORPH_WORKLOAD".into(),
                dir.join(rel).display().to_string(),
            ));
        }
        let mut dirs = Vec::new();
        match &self.reference {
            Some(Shown::Writing(out)) => dirs.push((out.clone(), TreeAccess::Writable)),
            Some(Shown::Sealed(r)) => {
                r.verify().map_err(|why| Failure::new(stage, why))?;
                dirs.push((r.dir.clone(), TreeAccess::ReadOnly));
            }
            None => {}
        }
        if let Some((d, _)) = dirs.first() {
            env.push((reference::VAR.into(), d.display().to_string()));
        }
        let spec = CommandSpec {
            script,
            cwd: dir,
            tree,
            devices: self.devices.clone(),
            dirs,
            env,
            timeout: self.task.commands.timeout,
            output_cap: OUTPUT_CAP,
            max_file_bytes: MAX_FILE_BYTES,
            max_memory_bytes: self.task.commands.memory_bytes,
            max_processes: self.task.commands.processes,
            tmp_bytes: self.task.commands.tmp_bytes,
        };
        // What kept bwrap from starting (a file it was to hide or bind, gone as it started) is
        // seldom there a second time: one more try before the machine is blamed.
        let outcome = match self.runner.run(&spec, &self.cancel) {
            Err(SandboxError::NotStarted(why)) => {
                tracing::warn!(script, %why, "the sandbox could not start a command; trying again");
                self.runner.run(&spec, &self.cancel)
            }
            other => other,
        };
        let outcome = outcome.map_err(|e| Failure {
            blame: match e {
                SandboxError::NotStarted(_) => Blame::Harness,
                _ => Blame::Candidate,
            },
            ..Failure::new(stage, format!("could not run `{script}`: {e}"))
        })?;
        self.process_time += outcome.wall;
        tracing::debug!(script, dir = %dir.display(), exit = ?outcome.exit, wall_ms = outcome.wall.as_millis() as u64, "command finished");
        Ok(outcome)
    }

    /// "build failed: kernel.c:12: error: ... (exit status 1)", with the output's tail as the log;
    /// a failure that looks like a limit reached names the limits.
    fn command_failure(&self, stage: Stage, what: &str, out: &Outcome) -> Failure {
        let c = &self.task.commands;
        let mut reason = format!("{what}: {}", summarize(out, c.timeout));
        if hit_a_limit(out) {
            reason.push_str(&format!(
                "; the command's limits: memory_mb = {}, processes = {}, tmp_mb = {} (raise them under [commands] in task.toml)",
                c.memory_bytes >> 20,
                c.processes,
                c.tmp_bytes >> 20
            ));
        }
        Failure {
            log: log_of(out),
            ..Failure::new(stage, reason)
        }
    }

    /// The task's `[commands] state` read now, as one short line; what went wrong instead when
    /// it failed (a state is an explanation of a sample, never a reason to drop it).
    fn machine_state(&mut self) -> Option<String> {
        let cmd = self.task.commands.state.as_ref()?;
        let path_var = self
            .task
            .path_var(&std::env::var("PATH").unwrap_or_default());
        let started = std::time::Instant::now();
        let read = crate::task::context::probe(cmd, &path_var);
        self.process_time += started.elapsed();
        let text = match read {
            Ok(Some(out)) => out.lines().map(str::trim).collect::<Vec<_>>().join("; "),
            Ok(None) => format!("`{cmd}` failed"),
            Err(e) => format!("{e:#}"),
        };
        Some(text.chars().take(STATE_CAP).collect())
    }

    fn locked_bench(&mut self, dir: &Path, round: RoundSeed) -> Result<Benched, Failure> {
        let state = self.machine_state();
        let bench = self.task.commands.bench.clone();
        let out = self.run(&bench, dir, TreeAccess::ReadOnly, Stage::Bench, Some(round))?;
        if !out.success() {
            return Err(self.command_failure(Stage::Bench, "bench failed", &out));
        }
        let mut sample = parse_sample(
            &out.stdout,
            &self.task.metric.name,
            self.task.metric.limit.as_deref(),
        )
        .map_err(|why| Failure {
            log: Some(tail(&out.stdout, LOG_CAP)),
            ..Failure::new(Stage::Bench, format!("bench output invalid: {why}"))
        })?;
        sample.state = state;
        Ok(Benched {
            sample,
            seconds: out.wall,
            unverified: unverified_cases(&out.stdout, &self.task.metric.name),
        })
    }
}

impl Processes for Spawned<'_> {
    fn build(&mut self, _tree: &FileTree, dir: &Path) -> Result<(), Failure> {
        let Some(build) = self.task.commands.build.clone() else {
            return Ok(());
        };
        let out = self.run(&build, dir, TreeAccess::Writable, Stage::Build, None)?;
        if !out.success() {
            return Err(self.command_failure(Stage::Build, "build failed", &out));
        }
        match self.task.interface.as_ref().and_then(|i| i.violation(dir)) {
            Some(why) => Err(Failure::new(Stage::Build, format!("build refused: {why}"))),
            None => Ok(()),
        }
    }

    fn test(&mut self, _tree: &FileTree, dir: &Path, stage: Stage) -> Result<(), Failure> {
        let test = self.task.commands.test.clone();
        let out = self.run(&test, dir, TreeAccess::ReadOnly, stage, None)?;
        if !out.success() {
            let what = if stage == Stage::Retest {
                "incorrect after benchmarking"
            } else {
                "incorrect"
            };
            return Err(self.command_failure(stage, what, &out));
        }
        Ok(())
    }

    /// Holds the machine-wide bench lock while the bench runs.
    fn bench(
        &mut self,
        _tree: &FileTree,
        dir: &Path,
        round: RoundSeed,
    ) -> Result<Benched, Failure> {
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.bench_lock)
            .map_err(|e| {
                Failure::new(
                    Stage::Bench,
                    format!("opening {}: {e}", self.bench_lock.display()),
                )
            })?;
        // Waiting for another benchmark on this machine counts with the task's processes, not
        // as polymorph's own time.
        let waiting = std::time::Instant::now();
        let locked = lock.lock();
        self.process_time += waiting.elapsed();
        locked.map_err(|e| {
            Failure::new(
                Stage::Bench,
                format!("locking {}: {e}", self.bench_lock.display()),
            )
        })?;
        let result = self.locked_bench(dir, round);
        let _ = lock.unlock();
        result
    }

    fn take_process_time(&mut self) -> Duration {
        std::mem::take(&mut self.process_time)
    }

    fn frozen_after_build(&self) -> bool {
        matches!(self.runner.isolation(), Isolation::Bwrap { .. })
    }

    fn set_layout(&mut self, layout: Option<u32>) {
        self.layout = layout;
    }
}
