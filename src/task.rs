//! Tasks: `task.toml` loaded and validated into a `Task`. Every error names the file, the field
//! and what would fix it; nothing runs until a task loads cleanly.

use agent::Params;
use anyhow::{Context as _, Result, bail};
use globset::{Glob, GlobSet, GlobSetBuilder};
use sandbox::{FileTree, ParamFormat, RelPath};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Per-command limit when a task names none: long enough for a real build.
const DEFAULT_TIMEOUT_S: u64 = 300;
/// Implausible gain factor (DESIGN.md: 10x by default).
const DEFAULT_PLAUSIBLE_FACTOR: f64 = 10.0;
/// A case may be this much slower than on the incumbent before the candidate is refused.
const DEFAULT_CASE_TOLERANCE: f64 = 0.05;
/// Fewest benchmark pairs before any verdict: with 6 pairs the signed-rank interval can reach 95%.
const DEFAULT_MIN_PAIRS: usize = 6;
/// Most benchmark pairs before an unclear candidate is rejected as inconclusive.
const DEFAULT_MAX_PAIRS: usize = 20;
/// Toolchain probed for the context when a task names none.
const DEFAULT_TOOLCHAIN: &str = "cc --version";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Maximize,
    Minimize,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Maximize => "maximize",
            Direction::Minimize => "minimize",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Metric {
    pub name: String,
    pub direction: Direction,
    pub min_gain: f64,
    pub case_tolerance: f64,
    pub plausible_factor: f64,
}

#[derive(Debug, Clone)]
pub struct JudgeSettings {
    pub min_pairs: usize,
    pub max_pairs: usize,
    pub confidence: f64,
}

#[derive(Debug, Clone)]
pub struct ParamsSpec {
    pub values: BTreeMap<String, Vec<Value>>,
    pub constraints: BTreeMap<String, String>,
    pub file: RelPath,
    pub format: ParamFormat,
}

#[derive(Debug, Clone)]
pub struct Commands {
    pub build: Option<String>,
    pub test: String,
    pub bench: String,
    pub timeout: Duration,
    /// Extra environment variables passed through to commands (never secrets).
    pub env: Vec<String>,
}

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
    pub hand_tuned: Option<RelPath>,
    pub params: Option<ParamsSpec>,
    pub workload: Option<RelPath>,
    pub model: String,
    pub toolchain: Vec<String>,
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
struct RawCommands {
    build: Option<String>,
    test: Option<String>,
    bench: Option<String>,
    timeout_s: Option<u64>,
    #[serde(default)]
    env: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetric {
    name: String,
    direction: String,
    min_gain: Option<f64>,
    case_tolerance: Option<f64>,
    plausible_factor: Option<f64>,
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

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawJudge {
    min_pairs: Option<usize>,
    max_pairs: Option<usize>,
    confidence: Option<f64>,
}

fn globset(file: &Path, field: &str, globs: &[String]) -> Result<GlobSet> {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        let glob =
            Glob::new(g).with_context(|| format!("{}: {field}: bad glob {g:?}", file.display()))?;
        b.add(glob);
    }
    b.build()
        .with_context(|| format!("{}: {field}", file.display()))
}

/// Names that must never reach a task's commands, even when a task asks for them.
fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"]
        .iter()
        .any(|w| upper.contains(w))
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
        let missing = |field: &str, example: &str| {
            anyhow::anyhow!("{f}: commands.{field} is missing: add e.g. {field} = {example:?}")
        };
        let test = raw
            .commands
            .test
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| missing("test", "./check"))?;
        let bench = raw
            .commands
            .bench
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| missing("bench", "./bench"))?;
        let timeout_s = raw.commands.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
        if timeout_s == 0 {
            bail!("{f}: commands.timeout_s = 0: give a positive number of seconds");
        }
        if let Some(secret) = raw.commands.env.iter().find(|n| is_secret_name(n)) {
            bail!("{f}: commands.env names {secret:?}: secrets are never passed to task commands");
        }
        let direction = match raw.metric.direction.as_str() {
            "maximize" => Direction::Maximize,
            "minimize" => Direction::Minimize,
            other => {
                bail!("{f}: metric.direction = {other:?}: expected \"maximize\" or \"minimize\"")
            }
        };
        let min_gain = raw.metric.min_gain.unwrap_or(0.02);
        if !(0.0..1.0).contains(&min_gain) {
            bail!(
                "{f}: metric.min_gain = {min_gain}: expected a fraction in [0, 1), e.g. 0.02 for 2%"
            );
        }
        let case_tolerance = raw.metric.case_tolerance.unwrap_or(DEFAULT_CASE_TOLERANCE);
        if !(0.0..1.0).contains(&case_tolerance) {
            bail!("{f}: metric.case_tolerance = {case_tolerance}: expected a fraction in [0, 1)");
        }
        let plausible_factor = raw
            .metric
            .plausible_factor
            .unwrap_or(DEFAULT_PLAUSIBLE_FACTOR);
        if plausible_factor.is_nan() || plausible_factor <= 1.0 {
            bail!(
                "{f}: metric.plausible_factor = {plausible_factor}: expected a factor above 1, e.g. 10"
            );
        }
        let judge = JudgeSettings {
            min_pairs: raw.judge.min_pairs.unwrap_or(DEFAULT_MIN_PAIRS),
            max_pairs: raw.judge.max_pairs.unwrap_or(DEFAULT_MAX_PAIRS),
            confidence: raw.judge.confidence.unwrap_or(0.95),
        };
        if judge.min_pairs < 6 || judge.max_pairs < judge.min_pairs || judge.max_pairs > 200 {
            bail!(
                "{f}: judge.min_pairs = {}, judge.max_pairs = {}: need 6 <= min_pairs <= max_pairs <= 200",
                judge.min_pairs,
                judge.max_pairs
            );
        }
        if !(0.5..1.0).contains(&judge.confidence) {
            bail!(
                "{f}: judge.confidence = {}: expected a level in [0.5, 1), e.g. 0.95",
                judge.confidence
            );
        }
        let rel = |field: &str, raw: &str| -> Result<RelPath> {
            RelPath::new(raw.trim_end_matches('/'))
                .map_err(|e| anyhow::anyhow!("{f}: {field}: {e}"))
        };
        let hand_tuned = match raw.baselines.hand_tuned {
            Some(h) => {
                let p = rel("baselines.hand_tuned", &h)?;
                if !p.under(&dir).is_dir() {
                    bail!(
                        "{f}: baselines.hand_tuned = {h:?}: no such directory under {}",
                        dir.display()
                    );
                }
                Some(p)
            }
            None => None,
        };
        let workload = match raw.context.workload.filter(|w| !w.is_empty()) {
            Some(w) => {
                let p = rel("context.workload", &w)?;
                if !p.under(&dir).is_file() {
                    bail!(
                        "{f}: context.workload = {w:?}: no such file under {}",
                        dir.display()
                    );
                }
                Some(p)
            }
            None => None,
        };
        let params = match raw.params {
            Some(table) => Some(parse_params(file, &editable, table)?),
            None => None,
        };
        Ok(Task {
            name: raw.name,
            description: raw.description.trim().to_string(),
            editable_globs: raw.files.editable,
            editable,
            exclude,
            commands: Commands {
                build: raw.commands.build.filter(|b| !b.trim().is_empty()),
                test,
                bench,
                timeout: Duration::from_secs(timeout_s),
                env: raw.commands.env,
            },
            metric: Metric {
                name: raw.metric.name,
                direction,
                min_gain,
                case_tolerance,
                plausible_factor,
            },
            judge,
            hand_tuned,
            params,
            workload,
            model: raw.context.model,
            toolchain: raw
                .context
                .toolchain
                .unwrap_or_else(|| vec![DEFAULT_TOOLCHAIN.to_string()]),
            dir,
        })
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

fn parse_params(file: &Path, editable: &GlobSet, mut table: toml::Table) -> Result<ParamsSpec> {
    let f = file.display();
    let render = match table.remove("render") {
        Some(toml::Value::Table(t)) => t,
        _ => bail!(
            "{f}: [params.render] is missing: add file = \"params.h\" (and format = \"c-define\", \"json\" or \"env\")"
        ),
    };
    let constraints = match table.remove("constraints") {
        None => BTreeMap::new(),
        Some(toml::Value::Table(t)) => t
            .into_iter()
            .map(|(k, v)| match v {
                toml::Value::String(s) => Ok((k, s)),
                _ => bail!("{f}: params.constraints.{k}: expected an expression string like \"A * B <= 4096\""),
            })
            .collect::<Result<_>>()?,
        Some(_) => bail!("{f}: params.constraints must be a table of name = \"expression\""),
    };
    let file_name = match render.get("file") {
        Some(toml::Value::String(s)) => s.clone(),
        _ => bail!("{f}: params.render.file is missing: name the file an assignment is written to"),
    };
    let format_name = match render.get("format") {
        None => "c-define".to_string(),
        Some(toml::Value::String(s)) => s.clone(),
        Some(_) => bail!("{f}: params.render.format must be a string"),
    };
    let format = ParamFormat::parse(&format_name)
        .ok_or_else(|| anyhow::anyhow!("{f}: params.render.format = {format_name:?}: expected \"c-define\", \"json\" or \"env\""))?;
    let rel =
        RelPath::new(&file_name).map_err(|e| anyhow::anyhow!("{f}: params.render.file: {e}"))?;
    if !editable.is_match(rel.as_str()) {
        bail!("{f}: params.render.file = {file_name:?} is not editable: add it to files.editable");
    }
    let mut values = BTreeMap::new();
    for (k, v) in table {
        if !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            || k.starts_with(|c: char| c.is_ascii_digit())
        {
            bail!("{f}: params.{k}: parameter names are identifiers (letters, digits, '_')");
        }
        let toml::Value::Array(items) = v else {
            bail!("{f}: params.{k}: expected a list of values, e.g. {k} = [16, 32, 64]");
        };
        if items.is_empty() {
            bail!("{f}: params.{k}: the list of values is empty");
        }
        let vals = items
            .into_iter()
            .map(|i| match i {
                toml::Value::Integer(n) => Ok(Value::from(n)),
                toml::Value::Float(x) => Ok(Value::from(x)),
                toml::Value::Boolean(b) => Ok(Value::from(b)),
                toml::Value::String(s) => Ok(Value::from(s)),
                other => bail!("{f}: params.{k}: {other} is not a number, string or boolean"),
            })
            .collect::<Result<Vec<_>>>()?;
        values.insert(k, vals);
    }
    if values.is_empty() {
        bail!("{f}: [params] declares no parameters");
    }
    agent::ParamSpace::new(values.clone(), &constraints)
        .map_err(|e| anyhow::anyhow!("{f}: {e}"))?;
    Ok(ParamsSpec {
        values,
        constraints,
        file: rel,
        format,
    })
}
