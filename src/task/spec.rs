//! Tasks: `task.toml` loaded and validated into a `Task`. Every error names the file, the field
//! and what would fix it; nothing runs until a task loads cleanly.

use super::commands::{Commands, RawCommands, commands};
use super::files::{existing, globset};
use super::interface::{self, Interface, RawInterface};
use super::judging::{RawJudge, judge};
use super::node::{self, NodeEnv, RawNode};
use super::params::{ParamsSpec, parse_params};
use super::python::{self, PythonEnv, RawPython};
use super::requires::Requirement;
use crate::measure::metric::Bound;
use crate::measure::{Direction, JudgeSettings, Metric};
use anyhow::{Context as _, Result, bail};
use globset::GlobSet;
use proposers::Params;
use sandbox::{FileTree, RelPath};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a GPU task records at each bench process unless it says otherwise: the SM clock and
/// the temperature, read (never set).
pub const NVIDIA_STATE: &str =
    "nvidia-smi --query-gpu=clocks.sm,temperature.gpu --format=csv,noheader";
/// Implausible gain factor (DESIGN.md: 10x by default).
const DEFAULT_PLAUSIBLE_FACTOR: f64 = 10.0;
/// A case may end this much worse than the floor (the start, by default) before a candidate is refused.
const DEFAULT_CASE_TOLERANCE: f64 = 0.05;
/// Smallest gain worth accepting when a task names none: 2%.
const DEFAULT_MIN_GAIN: f64 = 0.02;
/// Toolchain probed for the context when a task names none.
const DEFAULT_TOOLCHAIN: &str = "cc --version";

/// A loaded, validated task.
#[derive(Debug, Clone)]
pub struct Task {
    pub dir: PathBuf,
    pub name: String,
    pub description: String,
    pub editable_globs: Vec<String>,
    pub editable: GlobSet,
    pub exclude: GlobSet,
    pub commands: Commands,
    pub metric: Metric,
    pub judge: JudgeSettings,
    /// `[run] budget`: the candidates a run evaluates unless `--budget` says otherwise.
    pub budget: Option<usize>,
    pub hand_tuned: Option<RelPath>,
    pub params: Option<ParamsSpec>,
    pub workload: Option<RelPath>,
    pub model: String,
    pub toolchain: Vec<String>,
    /// What the task needs of the machine (checked before anything runs).
    pub requires: Vec<Requirement>,
    /// The pinned Python packages its commands use, installed by `polymorph setup`.
    pub python: Option<PythonEnv>,
    /// The locked Node.js packages its commands use, installed by `polymorph setup`.
    pub node: Option<NodeEnv>,
    /// The objects a build makes of the editable files and the symbols they may define.
    pub interface: Option<Interface>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    name: String,
    #[serde(default)]
    description: String,
    files: RawFiles,
    commands: RawCommands,
    metric: RawMetric,
    #[serde(default)]
    baselines: RawBaselines,
    params: Option<toml::Table>,
    #[serde(default)]
    context: RawContext,
    #[serde(default)]
    judge: RawJudge,
    #[serde(default)]
    run: RawRun,
    #[serde(default)]
    requires: Vec<String>,
    python: Option<RawPython>,
    node: Option<RawNode>,
    interface: Option<RawInterface>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFiles {
    editable: Vec<String>,
    #[serde(default)]
    exclude: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetric {
    name: String,
    direction: String,
    min_gain: Option<f64>,
    case_tolerance: Option<f64>,
    plausible_factor: Option<f64>,
    limit: Option<String>,
    bound: Option<RawBound>,
}

/// `bound = 900.0` for every case, or `bound = { m1 = 900.0, m16 = 1100.0 }` per case.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawBound {
    Every(f64),
    Cases(BTreeMap<String, f64>),
}

/// `[run]`: what a run of the task does unless its command line says otherwise.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRun {
    budget: Option<usize>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawBaselines {
    hand_tuned: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawContext {
    workload: Option<String>,
    #[serde(default)]
    model: String,
    toolchain: Option<Vec<String>>,
}

impl Task {
    /// Loads `dir/task.toml`.
    pub fn load(dir: &Path) -> Result<Task> {
        let dir = dir
            .canonicalize()
            .with_context(|| format!("task directory {} not found", dir.display()))?;
        let file = dir.join("task.toml");
        let text = std::fs::read_to_string(&file).with_context(|| {
            format!(
                "{}: cannot read (is {} a task directory?)",
                file.display(),
                dir.display()
            )
        })?;
        let raw: RawTask = toml::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}: {}", file.display(), e.to_string().trim_end()))?;
        Self::validate(dir, &file, raw)
    }

    fn validate(dir: PathBuf, file: &Path, raw: RawTask) -> Result<Task> {
        let f = file.display();
        if raw.name.is_empty()
            || !raw
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            bail!(
                "{f}: name = {:?}: use letters, digits, '-', '_' or '.' (it names a git branch)",
                raw.name
            );
        }
        if raw.files.editable.is_empty() {
            bail!(
                "{f}: files.editable is empty: list the globs a candidate may change, e.g. [\"kernel.c\"]"
            );
        }
        let editable = globset(file, "files.editable", &raw.files.editable)?;
        let exclude = globset(file, "files.exclude", &raw.files.exclude)?;
        let hand_tuned = existing(
            &dir,
            file,
            "baselines.hand_tuned",
            raw.baselines.hand_tuned,
            true,
        )?;
        let workload = existing(
            &dir,
            file,
            "context.workload",
            raw.context.workload.filter(|w| !w.is_empty()),
            false,
        )?;
        let requires = raw
            .requires
            .iter()
            .map(|r| {
                r.parse::<Requirement>()
                    .map_err(|e| anyhow::anyhow!("{f}: requires: {e}"))
            })
            .collect::<Result<Vec<_>>>()?;
        let params = match raw.params {
            Some(table) => Some(parse_params(file, &editable, table)?),
            None => None,
        };
        let python = match &raw.python {
            Some(p) => Some(python::parse(&dir, &raw.name, file, p)?),
            None => None,
        };
        let node = match &raw.node {
            Some(n) => Some(node::parse(&dir, &raw.name, file, n)?),
            None => None,
        };
        if raw.run.budget == Some(0) {
            bail!("{f}: run.budget = 0: a run evaluates at least one candidate");
        }
        let cmds = commands(file, raw.commands)?;
        let interface = match raw.interface {
            Some(i) => Some(interface::parse(file, i)?),
            None => None,
        };
        Ok(Task {
            name: raw.name,
            description: raw.description.trim().to_string(),
            editable_globs: raw.files.editable,
            editable,
            exclude,
            commands: Commands {
                state: match cmds.state {
                    Some(s) if s.trim().is_empty() => None,
                    Some(s) => Some(s),
                    None => requires
                        .contains(&Requirement::NvidiaGpu)
                        .then(|| NVIDIA_STATE.to_string()),
                },
                ..cmds
            },
            metric: metric(file, raw.metric)?,
            judge: judge(file, raw.judge, hand_tuned.is_some())?,
            budget: raw.run.budget,
            hand_tuned,
            params,
            workload,
            model: raw.context.model,
            toolchain: raw
                .context
                .toolchain
                .unwrap_or_else(|| vec![DEFAULT_TOOLCHAIN.to_string()]),
            requires,
            python,
            node,
            interface,
            dir,
        })
    }

    /// `PATH` for the task's commands and probes: its Python environment's and its Node.js
    /// install's `bin` first, when it has them.
    pub fn path_var(&self, host: &str) -> String {
        let node = match &self.node {
            Some(n) => format!("{}:{host}", n.bin().display()),
            None => host.to_string(),
        };
        match &self.python {
            Some(p) => p.path_var(&node),
            None => node,
        }
    }

    pub fn is_editable(&self, path: &RelPath) -> bool {
        self.editable.is_match(path.as_str())
    }

    /// The task's source as given (build outputs matched by `files.exclude` left out).
    pub fn source_tree(&self) -> Result<FileTree> {
        FileTree::read_dir(&self.dir, &self.exclude)
            .with_context(|| format!("reading task {}", self.dir.display()))
    }

    /// The hand-tuned tree: the task's source with the baseline directory overlaid at the root.
    /// The overlay may only replace editable files, so both trees share one harness.
    pub fn hand_tuned_tree(&self, source: &FileTree) -> Result<Option<FileTree>> {
        let Some(base) = &self.hand_tuned else {
            return Ok(None);
        };
        let overlay = FileTree::read_dir(&base.under(&self.dir), &self.exclude)
            .with_context(|| format!("reading baseline {}", base))?;
        let mut tree = source.clone();
        for (path, bytes) in overlay.iter() {
            if !self.is_editable(path) {
                bail!(
                    "baseline {base}/{path} replaces a file that is not editable; a baseline may only replace editable files"
                );
            }
            tree.insert(path.clone(), bytes.clone());
        }
        Ok(Some(tree))
    }

    /// The parameter assignment the given tree's rendered file holds.
    pub fn params_of(&self, tree: &FileTree) -> Option<Params> {
        let spec = self.params.as_ref()?;
        let text = std::str::from_utf8(tree.get(&spec.file)?).ok()?;
        sandbox::parse_params(spec.format, text).ok()
    }
}

/// `[metric]`: a known direction and fractions and factors in their ranges.
fn metric(file: &Path, raw: RawMetric) -> Result<Metric> {
    let f = file.display();
    let direction: Direction = raw.direction.parse().map_err(|_| {
        anyhow::anyhow!(
            "{f}: metric.direction = {:?}: expected \"maximize\" or \"minimize\"",
            raw.direction
        )
    })?;
    let min_gain = raw.min_gain.unwrap_or(DEFAULT_MIN_GAIN);
    if !(0.0..1.0).contains(&min_gain) {
        bail!("{f}: metric.min_gain = {min_gain}: expected a fraction in [0, 1), e.g. 0.02 for 2%");
    }
    let case_tolerance = raw.case_tolerance.unwrap_or(DEFAULT_CASE_TOLERANCE);
    if !(0.0..1.0).contains(&case_tolerance) {
        bail!("{f}: metric.case_tolerance = {case_tolerance}: expected a fraction in [0, 1)");
    }
    let plausible_factor = raw.plausible_factor.unwrap_or(DEFAULT_PLAUSIBLE_FACTOR);
    if plausible_factor.is_nan() || plausible_factor <= 1.0 {
        bail!(
            "{f}: metric.plausible_factor = {plausible_factor}: expected a factor above 1, e.g. 10"
        );
    }
    let limit = raw.limit.filter(|l| !l.trim().is_empty());
    if let Some(l) = &limit
        && (*l == raw.name || direction != Direction::Maximize)
    {
        bail!(
            "{f}: metric.limit = {l:?}: the limit is another metric line, an upper bound of a metric to maximize (e.g. copy_gbps for gbps)"
        );
    }
    let bound = raw
        .bound
        .map(|b| machine_bound(&f.to_string(), b))
        .transpose()?;
    Ok(Metric {
        name: raw.name,
        direction,
        min_gain,
        case_tolerance,
        plausible_factor,
        limit,
        bound,
        weights: Default::default(),
    })
}

/// `[metric] bound`: positive and finite, for every case or for the cases it names.
fn machine_bound(f: &str, raw: RawBound) -> Result<Bound> {
    let check = |what: String, v: f64| {
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            bail!("{f}: metric.bound{what} = {v}: expected a positive number in the metric's unit")
        }
    };
    Ok(match raw {
        RawBound::Every(v) => Bound::Every(check(String::new(), v)?),
        RawBound::Cases(m) => {
            if m.is_empty() {
                bail!("{f}: metric.bound = {{}}: name at least one case, or give one number");
            }
            let mut out = BTreeMap::new();
            for (case, v) in m {
                out.insert(case.clone(), check(format!(".{case}"), v)?);
            }
            Bound::Cases(out)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(extra_top: &str, extra_commands: &str, extra_metric: &str) -> Result<Task> {
        let dir = tempfile::tempdir().unwrap();
        let toml = format!(
            "name = \"t\"\n{extra_top}\n[files]\neditable = [\"k.c\"]\n[commands]\ntest = \"./check\"\nbench = \"./bench\"\n{extra_commands}\n[metric]\nname = \"m\"\ndirection = \"maximize\"\n{extra_metric}\n"
        );
        std::fs::write(dir.path().join("task.toml"), toml).unwrap();
        Task::load(dir.path())
    }

    fn loaded(extra_top: &str, extra_commands: &str) -> Task {
        load(extra_top, extra_commands, "").unwrap()
    }

    #[test]
    fn the_machine_bound_is_one_number_or_one_per_case_and_positive() {
        let every = load("", "", "bound = 900").unwrap().metric.bound;
        assert_eq!(every, Some(Bound::Every(900.0)));
        let cases = load("", "", "bound = { m1 = 1.5 }").unwrap().metric.bound;
        assert_eq!(cases.and_then(|b| b.of("m1")), Some(1.5));
        for bad in [
            "bound = 0",
            "bound = -3.0",
            "bound = { m1 = 0.0 }",
            "bound = {}",
        ] {
            let err = format!("{:#}", load("", "", bad).unwrap_err());
            assert!(err.contains("metric.bound"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_gpu_task_reads_its_clock_and_temperature_unless_told_otherwise() {
        let gpu = "requires = [\"nvidia-gpu\"]";
        assert_eq!(
            loaded(gpu, "").commands.state.as_deref(),
            Some(NVIDIA_STATE)
        );
        assert_eq!(loaded(gpu, "state = \"\"").commands.state, None);
        assert_eq!(
            loaded(gpu, "state = \"uptime\"").commands.state.as_deref(),
            Some("uptime")
        );
        assert_eq!(loaded("", "").commands.state, None);
    }
}
