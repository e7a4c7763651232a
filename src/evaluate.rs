//! Evaluating candidates: a fresh workspace per tree, the hash check of harness-owned files
//! before every command, build -> test (fresh seed) -> benchmarks interleaved with the incumbent
//! (one at a time on this machine) -> the judge -> the test again after benchmarking. Every
//! outcome is an `Evaluation` with a stage and a reason a person can read.

use crate::bench::{Sample, parse_sample, same_cases};
use crate::judge::{Decision, Judge, Summary, Verdict};
use crate::stats::median;
use crate::task::Task;
use agent::{Proposal, ProposedChange};
use anyhow::{Context as _, Result, bail};
use sandbox::{
    Change, CommandSpec, ExitKind, FileTree, Limits, Manifest, Outcome, RelPath, Runner, Workspace,
    verify_change,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Tail of each command's stdout/stderr kept: enough for a compiler's first errors.
const OUTPUT_CAP: usize = 64 * 1024;
/// Part of a failing command's output stored with its evaluation.
const LOG_CAP: usize = 8 * 1024;
/// Largest file a task command may write; builds of real projects stay far below.
const MAX_FILE_BYTES: u64 = 1 << 30;
/// Where a workload given on the command line is placed inside each tree.
const EXTERNAL_WORKLOAD: &str = ".polymorph/workload.json";
/// Environment variables a task command always gets from polymorph's own environment.
const ENV_ALLOWLIST: [&str; 4] = ["PATH", "LANG", "LC_ALL", "TZ"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Verify,
    Build,
    Test,
    Bench,
    Judge,
    Retest,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Verify => "verify",
            Stage::Build => "build",
            Stage::Test => "test",
            Stage::Bench => "bench",
            Stage::Judge => "judge",
            Stage::Retest => "retest",
        }
    }
}

/// Why a candidate did not get through, with the output that shows it.
#[derive(Debug, Clone)]
pub struct Failure {
    pub stage: Stage,
    pub reason: String,
    pub log: Option<String>,
}

impl Failure {
    fn new(stage: Stage, reason: impl Into<String>) -> Self {
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
}

/// Everything known about one evaluated candidate.
pub struct Evaluation {
    pub verdict: Verdict,
    pub stage: Stage,
    pub reason: String,
    pub log: Option<String>,
    pub summary: Option<Summary>,
    /// (round, incumbent sample, candidate sample)
    pub pairs: Vec<(Sample, Sample)>,
    pub diff: Option<String>,
    /// The candidate's tree, built, when it got that far.
    pub built: Option<Built>,
    pub bench_seconds: f64,
    pub process_seconds: f64,
    /// True when the run was cancelled during this evaluation: it is not recorded.
    pub cancelled: bool,
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
    limits: Limits,
    /// Wall time spent in task processes (and waiting for the bench lock) since `take_times`.
    process_time: Duration,
    bench_time: Duration,
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

/// A unified diff of what `after` changes in `before` (files that differ only).
pub fn tree_diff(before: &FileTree, after: &FileTree) -> String {
    let mut out = String::new();
    let paths: std::collections::BTreeSet<&RelPath> = before
        .iter()
        .map(|(p, _)| p)
        .chain(after.iter().map(|(p, _)| p))
        .collect();
    for p in paths {
        let (a, b) = (before.get(p), after.get(p));
        if a == b {
            continue;
        }
        let a = String::from_utf8_lossy(a.unwrap_or_default());
        let b = String::from_utf8_lossy(b.unwrap_or_default());
        let patch = diffy::create_patch(&a, &b).to_string();
        // diffy writes "--- original\n+++ modified\n"; name the file the way git does.
        let body = patch.splitn(3, '\n').nth(2).unwrap_or("");
        out.push_str(&format!("--- a/{p}\n+++ b/{p}\n{body}"));
    }
    out
}

impl<'a> Harness<'a> {
    pub fn new(
        task: &'a Task,
        source: &FileTree,
        runner: &'a Runner,
        cancel: sandbox::CancelFlag,
        workload: Option<&crate::context::Workload>,
    ) -> Result<Self> {
        let manifest = Manifest::of(source, |p| !task.is_editable(p));
        let base_env = ENV_ALLOWLIST
            .iter()
            .map(|s| s.to_string())
            .chain(task.commands.env.iter().cloned())
            .filter_map(|k| std::env::var(&k).ok().map(|v| (k, v)))
            .collect();
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
            process_time: Duration::ZERO,
            bench_time: Duration::ZERO,
        })
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    /// Process and bench wall time since the last call, reset.
    pub fn take_times(&mut self) -> (Duration, Duration) {
        let t = (self.process_time, self.bench_time);
        self.process_time = Duration::ZERO;
        self.bench_time = Duration::ZERO;
        t
    }

    fn run(&mut self, script: &str, dir: &Path, stage: Stage) -> Result<Outcome, Failure> {
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

    fn check_harness(&self, dir: &Path, stage: Stage) -> Result<(), Failure> {
        self.manifest
            .verify(dir)
            .map_err(|e| Failure::new(stage, e.to_string()))
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
        if let Some(build) = self.task.commands.build.clone() {
            self.check_harness(ws.path(), Stage::Build)?;
            let out = self.run(&build, ws.path(), Stage::Build)?;
            if !out.success() {
                return Err(self.command_failure(Stage::Build, "build failed", &out));
            }
        }
        self.test(ws.path(), Stage::Test)?;
        Ok(Built { ws, tree })
    }

    fn test(&mut self, dir: &Path, stage: Stage) -> Result<(), Failure> {
        self.check_harness(dir, stage)?;
        let test = self.task.commands.test.clone();
        let out = self.run(&test, dir, stage)?;
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
        self.check_harness(built.ws.path(), Stage::Bench)?;
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
        let bench = self.task.commands.bench.clone();
        let result = self.run(&bench, built.ws.path(), Stage::Bench);
        let _ = lock.unlock();
        let out = result?;
        self.bench_time += out.wall;
        if !out.success() {
            return Err(self.command_failure(Stage::Bench, "bench failed", &out));
        }
        parse_sample(&out.stdout, &self.task.metric.name).map_err(|why| Failure {
            stage: Stage::Bench,
            reason: format!("bench output invalid: {why}"),
            log: Some(tail(&out.stdout, LOG_CAP)),
        })
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

    /// Turns a proposal into a change the sandbox can verify.
    fn to_change(&self, proposal: &Proposal) -> Result<Change, Failure> {
        match &proposal.change {
            ProposedChange::Diff(d) => Ok(Change::Diff(d.clone())),
            ProposedChange::Files(f) => Ok(Change::Files(f.clone())),
            ProposedChange::Params(p) => {
                let Some(spec) = &self.task.params else {
                    return Err(Failure::new(
                        Stage::Verify,
                        "a parameter assignment, but the task declares no [params]",
                    ));
                };
                let space = agent::ParamSpace::new(spec.values.clone(), &spec.constraints)
                    .map_err(|e| Failure::new(Stage::Verify, e.to_string()))?;
                if let Some(why) = space.invalid(p) {
                    return Err(Failure::new(
                        Stage::Verify,
                        format!("invalid assignment: {why}"),
                    ));
                }
                let text = sandbox::render_params(spec.format, p);
                Ok(Change::Files(BTreeMap::from([(
                    spec.file.to_string(),
                    text,
                )])))
            }
        }
    }

    /// Evaluates one proposal against the incumbent.
    pub fn evaluate(
        &mut self,
        proposal: &Proposal,
        incumbent: &Built,
        judge: &Judge<'_>,
    ) -> Evaluation {
        self.take_times();
        let mut ev = Evaluation {
            verdict: Verdict::Failed,
            stage: Stage::Verify,
            reason: String::new(),
            log: None,
            summary: None,
            pairs: Vec::new(),
            diff: None,
            built: None,
            bench_seconds: 0.0,
            process_seconds: 0.0,
            cancelled: false,
        };
        let result = self.evaluate_inner(proposal, incumbent, judge, &mut ev);
        if let Err(f) = result {
            ev.verdict = Verdict::Failed;
            ev.stage = f.stage;
            ev.reason = f.reason;
            ev.log = f.log;
            ev.built = None;
        }
        ev.cancelled = self.cancelled();
        let (process, bench) = self.take_times();
        ev.process_seconds = process.as_secs_f64();
        ev.bench_seconds = bench.as_secs_f64();
        ev
    }

    fn evaluate_inner(
        &mut self,
        proposal: &Proposal,
        incumbent: &Built,
        judge: &Judge<'_>,
        ev: &mut Evaluation,
    ) -> Result<(), Failure> {
        let change = self.to_change(proposal)?;
        let verified = verify_change(&change, &incumbent.tree, &self.task.editable, &self.limits)
            .map_err(|e| Failure::new(Stage::Verify, e.to_string()))?;
        let tree = incumbent.tree.apply(&verified);
        ev.diff = Some(tree_diff(&incumbent.tree, &tree));
        let built = self.prepare(tree)?;
        let mut round = 0;
        let summary = loop {
            if self.cancelled() {
                return Err(Failure::new(Stage::Bench, "cancelled"));
            }
            // A B, B A, A B ...: alternating who goes first cancels slow drift.
            let (inc, cand) = if round % 2 == 0 {
                let a = self.bench(incumbent).map_err(|f| Failure {
                    reason: format!("incumbent {}", f.reason),
                    ..f
                })?;
                (a, self.bench(&built)?)
            } else {
                let b = self.bench(&built)?;
                (
                    self.bench(incumbent).map_err(|f| Failure {
                        reason: format!("incumbent {}", f.reason),
                        ..f
                    })?,
                    b,
                )
            };
            same_cases(&inc, &cand)
                .map_err(|e| Failure::new(Stage::Bench, format!("bench output invalid: {e}")))?;
            ev.pairs.push((inc, cand));
            round += 1;
            match judge.decide(&ev.pairs) {
                Decision::Continue => continue,
                Decision::Done {
                    verdict,
                    reason,
                    summary,
                } => {
                    ev.verdict = verdict;
                    ev.reason = reason;
                    ev.stage = Stage::Judge;
                    break summary;
                }
            }
        };
        ev.summary = Some(summary);
        if matches!(ev.verdict, Verdict::Accepted | Verdict::Quarantined) {
            self.test(built.ws.path(), Stage::Retest)?;
        }
        ev.built = Some(built);
        Ok(())
    }
}

/// Median score of samples.
pub fn median_score(samples: &[Sample]) -> f64 {
    median(&samples.iter().map(Sample::score).collect::<Vec<_>>())
}
