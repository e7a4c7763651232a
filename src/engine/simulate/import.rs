//! `polymorph import`: a Kernel Tuner cache file made a landscape polymorph replays. It writes
//! a task folder whose `params.h` is the configuration (`#define` lines, as Kernel Tuner passes
//! them to the kernel), the T1 conditions as `[params.constraints]`, and a cache in which a
//! bench process of a configuration is one of its repeats 2, 4, 6, ... and its truth is the
//! mean of repeats 3, 5, 7, ... (repeat 1, a warm-up, is left out), so a search that picks a
//! noisy winner pays for it.

use super::cache::{Cache, RecordedSample, RecordedTree, tree_key};
use super::kernel_tuner::{KtCache, Measured, T1};
use crate::task::resolve;
use anyhow::{Context as _, Result, bail};
use proposers::{ParamSpace, Params};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The metric of an imported task: the kernel's time per launch.
pub const METRIC: &str = "time_ms";

/// Leading repeats of each configuration left out as its warm-up.
const WARM_UP: usize = 1;

/// What an import wrote.
#[derive(Debug)]
pub struct Imported {
    pub task_dir: PathBuf,
    pub cache: PathBuf,
    pub name: String,
    pub measured: usize,
    pub failed: usize,
    pub constraints: usize,
    /// The configuration the task starts from, and whether it is the T1 defaults.
    pub start: Params,
    pub start_is_default: bool,
}

/// Imports `kt` (with the T1 description `t1`, if any) into the new folder `out`.
pub fn import(kt: &Path, t1: Option<&Path>, out: &Path) -> Result<Imported> {
    if out.exists() && std::fs::read_dir(out).map_or(true, |mut d| d.next().is_some()) {
        bail!(
            "{} exists and is not empty: give a new --out folder",
            out.display()
        );
    }
    let cache = KtCache::load(kt)?;
    let t1 = match t1 {
        Some(p) => T1::load(p)?,
        None => T1::default(),
    };
    let values: BTreeMap<String, Vec<Value>> = cache.params.iter().cloned().collect();
    let constraints: BTreeMap<String, String> = t1
        .conditions
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("condition_{}", i + 1), c.clone()))
        .collect();
    let space = ParamSpace::new(values.clone(), &constraints)
        .map_err(|e| anyhow::anyhow!("{}: {e}", kt.display()))?;
    for (p, _) in &cache.entries {
        if let Some(why) = space.invalid(p) {
            bail!(
                "{}: configuration {} is in the cache but {why}: the T1 conditions and the cache disagree",
                kt.display(),
                proposers::params_key(p)
            );
        }
    }
    let (start, start_is_default) = start_of(&cache, &t1.defaults);
    // The kernel's name alone, and a task.toml that names no device: the same kernel imported
    // from several GPUs is one task in several contexts, so a warm start carries across them.
    let name = task_name(&cache.kernel);
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    std::fs::write(
        out.join("params.h"),
        sandbox::render_params(sandbox::ParamFormat::CDefine, &start),
    )?;
    std::fs::write(
        out.join("task.toml"),
        task_toml(&name, &cache, kt, &values, &constraints)?,
    )?;
    let r = resolve(out, None)?;
    // The first repeat is left out of both halves: Kernel Tuner times it right after the
    // configuration's first launch, and it is the warm-up (its median over configurations is
    // 1.005-1.14x the median repeat's on the six convolution GPUs, its 90th percentile up to 3.2x).
    let kept = |m: &Measured| match m {
        Measured::Times(t) => t.iter().skip(WARM_UP).copied().collect(),
        Measured::Failed(_) => Vec::new(),
    };
    let samples_per_tree = cache
        .entries
        .iter()
        .map(|(_, m)| kept(m).len().div_ceil(2))
        .max()
        .unwrap_or(0);
    let mut c = Cache::for_task(&r, samples_per_tree);
    c.machine = format!("{} (Kernel Tuner cache {})", cache.device, kt.display());
    let spec = r
        .task
        .params
        .as_ref()
        .context("the written task has [params]")?;
    let recorded = |label: &str, p: &Params, m: &Measured, key: String| {
        let case = |ms: f64| BTreeMap::from([(cache.kernel_case(), ms)]);
        let failed = match m {
            Measured::Failed(why) if why == "RuntimeFailedConfig" => {
                Some(format!("test failed: {why} (Kernel Tuner)"))
            }
            Measured::Failed(why) => Some(format!("build failed: {why} (Kernel Tuner)")),
            Measured::Times(_) => None,
        };
        let mut tree = RecordedTree {
            key,
            label: label.to_string(),
            params: (label == "params").then(|| p.clone()),
            failed,
            samples: kept(m)
                .into_iter()
                .map(|ms| RecordedSample {
                    seconds: ms / 1e3,
                    cases: case(ms),
                    limit: None,
                })
                .collect(),
            truth: None,
        };
        tree.hold_out_half();
        tree
    };
    let start_m = cache.get(&start).context("the cache holds its start")?;
    c.trees.push(recorded(
        "start",
        &start,
        start_m,
        tree_key(&r.task, &r.source),
    ));
    for (p, m) in &cache.entries {
        let mut tree = r.source.clone();
        tree.insert(
            spec.file.clone(),
            sandbox::render_params(spec.format, p).into_bytes(),
        );
        c.trees
            .push(recorded("params", p, m, tree_key(&r.task, &tree)));
    }
    let path = out.join("cache.json");
    c.save(&path)?;
    Ok(Imported {
        task_dir: out.to_path_buf(),
        cache: path,
        name,
        measured: cache.entries.len(),
        failed: c
            .trees
            .iter()
            .skip(1)
            .filter(|t| t.failed.is_some())
            .count(),
        constraints: constraints.len(),
        start,
        start_is_default,
    })
}

impl KtCache {
    /// The one case of an imported task: the kernel's name.
    fn kernel_case(&self) -> String {
        if self.kernel.is_empty() {
            "kernel".to_string()
        } else {
            self.kernel.clone()
        }
    }
}

/// The T1 defaults when Kernel Tuner measured them (a parameter without a default takes its
/// first declared value), else the first measured configuration in the cache's order.
fn start_of(cache: &KtCache, defaults: &Params) -> (Params, bool) {
    let wanted: Params = cache
        .params
        .iter()
        .map(|(k, v)| (k.clone(), defaults.get(k).unwrap_or(&v[0]).clone()))
        .collect();
    if matches!(cache.get(&wanted), Some(Measured::Times(_))) {
        return (wanted, true);
    }
    let first = cache
        .entries
        .iter()
        .find(|(_, m)| matches!(m, Measured::Times(_)))
        .map(|(p, _)| p.clone());
    (first.unwrap_or(wanted), false)
}

/// The kernel's name in the letters a task name (and a git branch) may use.
fn task_name(kernel: &str) -> String {
    let raw = kernel.to_lowercase();
    let mut name: String = raw
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    while name.contains("--") {
        name = name.replace("--", "-");
    }
    let name = name.trim_matches('-').to_string();
    if name.is_empty() {
        "kernel-tuner".to_string()
    } else {
        name
    }
}

fn task_toml(
    name: &str,
    cache: &KtCache,
    kt: &Path,
    values: &BTreeMap<String, Vec<Value>>,
    constraints: &BTreeMap<String, String>,
) -> Result<String> {
    let to_toml = |v: &Value| -> Result<toml::Value> {
        Ok(match v {
            Value::Number(n) if n.is_i64() => toml::Value::Integer(n.as_i64().unwrap_or_default()),
            Value::Number(n) => toml::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            Value::String(s) => toml::Value::String(s.clone()),
            Value::Bool(b) => toml::Value::Boolean(*b),
            other => bail!(
                "{}: a parameter value {other} is neither a number nor a string",
                kt.display()
            ),
        })
    };
    let mut params = toml::Table::new();
    for (k, vs) in values {
        params.insert(
            k.clone(),
            toml::Value::Array(vs.iter().map(to_toml).collect::<Result<_>>()?),
        );
    }
    let mut render = toml::Table::new();
    render.insert("file".into(), "params.h".into());
    render.insert("format".into(), "c-define".into());
    params.insert("render".into(), toml::Value::Table(render));
    params.insert(
        "constraints".into(),
        toml::Value::Table(
            constraints
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().into()))
                .collect(),
        ),
    );
    let mut doc: toml::Table = toml::from_str(
        r#"
[files]
editable = ["params.h"]
exclude = ["cache.json"]   # the recording it replays, not part of the task

[commands]
build = "true"
test = "true"
bench = "echo 'this task replays a recording: run it with --simulate cache.json' >&2; exit 1"

[metric]
direction = "minimize"
min_gain = 0.02
# Every figure is Kernel Tuner's recording, none a candidate's: the plausibility guard has
# nothing to catch, and recorded configurations differ by more than 10x (15x on an MI250X).
plausible_factor = 1000.0
"#,
    )?;
    doc.insert("name".into(), name.into());
    doc.insert(
        "description".into(),
        format!(
            "{}, imported from a Kernel Tuner cache by `polymorph import`: it replays that recording (run --simulate cache.json; the cache names the device) and runs nothing.",
            cache.kernel_case()
        )
        .into(),
    );
    if let Some(toml::Value::Table(m)) = doc.get_mut("metric") {
        m.insert("name".into(), METRIC.into());
    }
    doc.insert("params".into(), toml::Value::Table(params));
    Ok(toml::to_string(&doc)?)
}
