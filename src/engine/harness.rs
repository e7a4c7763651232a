//! The harness: a task's commands run for one context, each in a fresh workspace per tree, with
//! the hash check of harness-owned files before every command, build -> test (fresh seed), and
//! bench processes one at a time on this machine, each one sample (in a simulated run, recorded
//! samples replayed and no task process at all). Failures carry their stage and a reason a
//! person can read.

use super::simulate::Simulation;
use crate::measure::{Sample, parse_sample, same_cases};
use crate::record::Stage;
use crate::task::requires::gpu_devices;
use crate::task::{Requirement, Task, Workload};
use anyhow::{Context as _, Result, bail};
use sandbox::{
    CommandSpec, ExitKind, FileTree, Isolation, Limits, Manifest, Outcome, RelPath, Runner,
    Snapshot, TreeAccess, Workspace,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Tail of each command's stdout/stderr kept: enough for a compiler's first errors.
const OUTPUT_CAP: usize = 64 * 1024;
/// Part of a failing command's output stored with its evaluation.
const LOG_CAP: usize = 8 * 1024;
/// Largest file a task command may write; builds of real projects stay far below.
const MAX_FILE_BYTES: u64 = 1 << 30;
/// Characters of a machine state kept per sample.
const STATE_CAP: usize = 200;
/// Where a workload given on the command line is placed inside each tree.
const EXTERNAL_WORKLOAD: &str = ".polymorph/workload.json";
/// Environment variables a task command always gets from polymorph's own environment.
const ENV_ALLOWLIST: [&str; 4] = ["PATH", "LANG", "LC_ALL", "TZ"];

/// Why a candidate did not get through, with the output that shows it.
#[derive(Debug, Clone)]
pub struct Failure {
    pub stage: Stage,
    pub reason: String,
    pub log: Option<String>,
}

impl Failure {
    pub(super) fn new(stage: Stage, reason: impl Into<String>) -> Self {
        Failure {
            stage,
            reason: reason.into(),
            log: None,
        }
    }
}

/// A tree built and tested in its own workspace.
pub struct Built {
    pub ws: Workspace,
    pub tree: FileTree,
    /// The workspace right after the build: every later command first checks it is unchanged.
    pub outputs: Snapshot,
}

/// Runs a task's commands for one context.
pub struct Harness<'a> {
    pub task: &'a Task,
    runner: &'a Runner,
    cancel: sandbox::CancelFlag,
    manifest: Manifest,
    base_env: Vec<(String, String)>,
    /// Workload path relative to a tree, and the file to place there when it is external.
    workload: Option<(String, Option<Vec<u8>>)>,
    bench_lock: PathBuf,
    pub(super) limits: Limits,
    /// Device nodes the task's commands see (a GPU's, when the task requires one).
    devices: Vec<PathBuf>,
    /// Wall time spent in task processes (and waiting for the bench lock) since `take_times`.
    process_time: Duration,
    bench_time: Duration,
    /// A recorded cache replayed instead of the task's processes (`run --simulate`).
    sim: Option<Simulation>,
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

fn log_of(outcome: &Outcome) -> Option<String> {
    let text = format!("{}{}", outcome.stdout, outcome.stderr);
    (!text.is_empty()).then(|| tail(&text, LOG_CAP))
}

impl<'a> Harness<'a> {
    pub fn new(
        task: &'a Task,
        source: &FileTree,
        runner: &'a Runner,
        cancel: sandbox::CancelFlag,
        workload: Option<&Workload>,
    ) -> Result<Self> {
        let manifest = Manifest::of(source, |p| !task.is_editable(p));
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
        if task.python.is_some() {
            // Bytecode caches written next to the sources would change the tree after the build.
            base_env.push(("PYTHONDONTWRITEBYTECODE".into(), "1".into()));
        }
        let workload = match workload {
            None => None,
            Some(w) => match w.path.strip_prefix(&task.dir) {
                Ok(rel) => Some((rel.display().to_string(), None)),
                Err(_) => {
                    let bytes = std::fs::read(&w.path)
                        .with_context(|| format!("reading workload {}", w.path.display()))?;
                    Some((EXTERNAL_WORKLOAD.to_string(), Some(bytes)))
                }
            },
        };
        Ok(Harness {
            task,
            runner,
            cancel,
            manifest,
            base_env,
            workload,
            bench_lock: std::env::temp_dir().join("polymorph-bench.lock"),
            limits: Limits::default(),
            devices: if task.requires.contains(&Requirement::NvidiaGpu) {
                gpu_devices(Path::new("/dev"))
            } else {
                Vec::new()
            },
            process_time: Duration::ZERO,
            bench_time: Duration::ZERO,
            sim: None,
        })
    }

    /// From now on, builds, tests and benchmarks are replayed from `sim`: no task process runs.
    pub fn simulate(&mut self, sim: Simulation) {
        self.sim = Some(sim);
    }

    pub(super) fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    /// Process and bench wall time since the last call, reset.
    pub fn take_times(&mut self) -> (Duration, Duration) {
        let t = (self.process_time, self.bench_time);
        self.process_time = Duration::ZERO;
        self.bench_time = Duration::ZERO;
        t
    }

    fn run(
        &mut self,
        script: &str,
        dir: &Path,
        tree: TreeAccess,
        stage: Stage,
    ) -> Result<Outcome, Failure> {
        let mut env = self.base_env.clone();
        env.push(("HOME".into(), dir.display().to_string()));
        env.push(("TMPDIR".into(), "/tmp".into()));
        // Fresh and unpredictable for every run, so a candidate cannot key on it.
        env.push(("POLYMORPH_SEED".into(), rand::random::<u32>().to_string()));
        if let Some((rel, _)) = &self.workload {
            env.push((
                "POLYMORPH_WORKLOAD".into(),
                dir.join(rel).display().to_string(),
            ));
        }
        let spec = CommandSpec {
            script,
            cwd: dir,
            tree,
            devices: self.devices.clone(),
            env,
            timeout: self.task.commands.timeout,
            output_cap: OUTPUT_CAP,
            max_file_bytes: MAX_FILE_BYTES,
        };
        let outcome = self
            .runner
            .run(&spec, &self.cancel)
            .map_err(|e| Failure::new(stage, format!("could not run `{script}`: {e}")))?;
        self.process_time += outcome.wall;
        tracing::debug!(script, dir = %dir.display(), exit = ?outcome.exit, wall_ms = outcome.wall.as_millis() as u64, "command finished");
        Ok(outcome)
    }

    /// "build failed: kernel.c:12: error: ... (exit status 1)", with the output's tail as the log.
    fn command_failure(&self, stage: Stage, what: &str, out: &Outcome) -> Failure {
        Failure {
            stage,
            reason: format!("{what}: {}", summarize(out, self.task.commands.timeout)),
            log: log_of(out),
        }
    }

    /// The built tree's snapshot, settled for quick checks where `check_harness` makes them.
    fn snapshot(&self, dir: &Path) -> Result<Snapshot, Failure> {
        if self.quick_checks() {
            Snapshot::of_dir_settling(dir)
        } else {
            Snapshot::of_dir(dir)
        }
        .map_err(|e| Failure::new(Stage::Build, e.to_string()))
    }

    /// Under bwrap no command after the build can write the tree or outlive itself, so a
    /// file's stamp is proof enough; without it every file is read again.
    fn quick_checks(&self) -> bool {
        matches!(self.runner.isolation(), Isolation::Bwrap { .. })
    }

    /// Before every command: up to the build, the harness-owned files hash as the task's; after
    /// it, the workspace is exactly as the build left it (its snapshot was taken only once the
    /// harness files were verified again, so it covers them too).
    fn check_harness(
        &self,
        dir: &Path,
        outputs: Option<&Snapshot>,
        stage: Stage,
    ) -> Result<(), Failure> {
        match outputs {
            None => self.manifest.verify(dir),
            Some(o) if self.quick_checks() => o.verify_stamps(dir),
            Some(o) => o.verify(dir),
        }
        .map_err(|e| Failure::new(stage, e.to_string()))
    }

    /// Whether `built` is still exactly what was built and tested.
    pub fn intact(&self, built: &Built) -> Result<(), Failure> {
        self.check_harness(built.ws.path(), Some(&built.outputs), Stage::Bench)
    }

    /// Writes `tree` into a fresh workspace, builds it and runs the test once.
    pub fn prepare(&mut self, tree: FileTree) -> Result<Built, Failure> {
        let ws = Workspace::create(&tree, None)
            .map_err(|e| Failure::new(Stage::Build, e.to_string()))?;
        // An external workload goes into the workspace only: it is not part of the tree that
        // reaches the ledger.
        if let Some((rel, Some(bytes))) = &self.workload {
            let mut extra = FileTree::default();
            extra.insert(
                RelPath::new(rel).map_err(|e| Failure::new(Stage::Verify, e.to_string()))?,
                bytes.clone(),
            );
            extra
                .write_to(ws.path())
                .map_err(|e| Failure::new(Stage::Build, e.to_string()))?;
        }
        if let Some(sim) = &self.sim {
            sim.prepare(self.task, &tree)?;
            let outputs = self.snapshot(ws.path())?;
            return Ok(Built { ws, tree, outputs });
        }
        if let Some(build) = self.task.commands.build.clone() {
            self.check_harness(ws.path(), None, Stage::Build)?;
            let out = self.run(&build, ws.path(), TreeAccess::Writable, Stage::Build)?;
            if !out.success() {
                return Err(self.command_failure(Stage::Build, "build failed", &out));
            }
        }
        // The build may not have touched the harness; from here on the tree is frozen:
        // read-only under bwrap, and checked against this snapshot before every command.
        self.check_harness(ws.path(), None, Stage::Test)?;
        let outputs = self.snapshot(ws.path())?;
        self.test(ws.path(), &outputs, Stage::Test)?;
        Ok(Built { ws, tree, outputs })
    }

    pub(super) fn test(
        &mut self,
        dir: &Path,
        outputs: &Snapshot,
        stage: Stage,
    ) -> Result<(), Failure> {
        self.check_harness(dir, Some(outputs), stage)?;
        if self.sim.is_some() {
            // The recorded test passed (or `prepare` refused the tree).
            return Ok(());
        }
        let test = self.task.commands.test.clone();
        let out = self.run(&test, dir, TreeAccess::ReadOnly, stage)?;
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

    /// One bench process on `built`: one sample. Holds the machine-wide bench lock meanwhile.
    pub fn bench(&mut self, built: &Built) -> Result<Sample, Failure> {
        self.check_harness(built.ws.path(), Some(&built.outputs), Stage::Bench)?;
        if let Some(sim) = &mut self.sim {
            // The recorded seconds count as bench time, never as process time: polymorph's
            // own overhead stays what it really was.
            let (sample, seconds) = sim.bench(self.task, &built.tree)?;
            self.bench_time += Duration::from_secs_f64(seconds);
            return Ok(sample);
        }
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
        let state = self.machine_state();
        let bench = self.task.commands.bench.clone();
        let result = self.run(&bench, built.ws.path(), TreeAccess::ReadOnly, Stage::Bench);
        let _ = lock.unlock();
        let out = result?;
        self.bench_time += out.wall;
        if !out.success() {
            return Err(self.command_failure(Stage::Bench, "bench failed", &out));
        }
        let mut sample = parse_sample(
            &out.stdout,
            &self.task.metric.name,
            self.task.metric.limit.as_deref(),
        )
        .map_err(|why| Failure {
            stage: Stage::Bench,
            reason: format!("bench output invalid: {why}"),
            log: Some(tail(&out.stdout, LOG_CAP)),
        })?;
        sample.state = state;
        Ok(sample)
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

    /// Interleaved samples of several built trees, `rounds` each, in rotating order.
    pub fn measure(&mut self, trees: &[&Built], rounds: usize) -> Result<Vec<Vec<Sample>>> {
        let mut out = vec![Vec::new(); trees.len()];
        for round in 0..rounds {
            for k in 0..trees.len() {
                let i = (k + round) % trees.len();
                if self.cancelled() {
                    bail!("cancelled");
                }
                let s = self
                    .bench(trees[i])
                    .map_err(|f| anyhow::anyhow!("{}", f.reason))?;
                if let Some(first) = out[i].first() {
                    same_cases(first, &s).map_err(|e| anyhow::anyhow!(e))?;
                }
                out[i].push(s);
            }
        }
        Ok(out)
    }
}
