//! A recorded cache of bench samples (every tree of a task's parameter space, several samples
//! each, per case), as `polymorph record` writes it. The cache names the task, workload and
//! harness it was recorded for; a run refuses one that does not match.

use crate::task::{Resolved, Task};
use anyhow::{Context as _, Result, bail};
use proposers::{Params, params_key};
use sandbox::{FileTree, sha256_hex};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Version of the cache format written by `polymorph record`.
pub const CACHE_FORMAT: u32 = 1;

/// One bench process as recorded: its wall time and what it printed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecordedSample {
    pub seconds: f64,
    pub cases: BTreeMap<String, f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<f64>,
}

/// One tree: the task as given, its hand-tuned baseline, or a parameter assignment.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecordedTree {
    /// `tree_key` of the tree.
    pub key: String,
    /// `start`, `hand_tuned` or `params`.
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Params>,
    /// Why it did not build or pass its test, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    pub samples: Vec<RecordedSample>,
    /// Each case's mean over repeats kept out of `samples` (an imported recording's other
    /// half), when the cache holds them: the tree's true figures, out of the draws' sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truth: Option<BTreeMap<String, f64>>,
}

impl RecordedTree {
    /// The tree's true figures in the simulation: its held-out means where the cache has them,
    /// else the mean over its samples of each case.
    pub fn case_means(&self) -> BTreeMap<String, f64> {
        self.truth
            .clone()
            .unwrap_or_else(|| case_means(&self.samples))
    }

    /// Keeps its samples 1, 3, 5, ... (counting from 1) as the draws and makes the mean of
    /// samples 2, 4, 6, ... its truth, so that a search picking a lucky draw pays for it. A
    /// tree with fewer than two samples, or a truth already, is left as it is.
    pub fn hold_out_half(&mut self) {
        if self.samples.len() < 2 || self.truth.is_some() {
            return;
        }
        let held_out: Vec<RecordedSample> =
            self.samples.iter().skip(1).step_by(2).cloned().collect();
        self.truth = Some(case_means(&held_out));
        self.samples = self.samples.iter().step_by(2).cloned().collect();
    }
}

/// The mean of each case over `samples`.
pub fn case_means<'a>(
    samples: impl IntoIterator<Item = &'a RecordedSample>,
) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    let mut n = 0usize;
    for s in samples {
        n += 1;
        for (c, v) in &s.cases {
            *sums.entry(c.clone()).or_default() += v;
        }
    }
    let n = n.max(1) as f64;
    sums.into_iter().map(|(c, v)| (c, v / n)).collect()
}

/// A whole recorded cache, as written to disk (JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cache {
    pub format: u32,
    pub task: String,
    pub metric: String,
    /// The machine it was recorded on (`cpu_model, cores`, then its GPUs as `nvidia-smi` names
    /// them, if any), for people.
    pub machine: String,
    pub workload: String,
    pub workload_sha256: String,
    pub harness_sha256: String,
    pub samples_per_tree: usize,
    pub trees: Vec<RecordedTree>,
}

impl Cache {
    /// A new, empty cache for the resolved task.
    pub fn for_task(r: &Resolved, samples_per_tree: usize) -> Self {
        let f = &r.fingerprint;
        Cache {
            format: CACHE_FORMAT,
            task: r.task.name.clone(),
            metric: r.task.metric.name.clone(),
            machine: std::iter::once(format!("{}, {} cores", f.cpu_model, f.cpu_cores))
                .chain(f.gpus.iter().cloned())
                .collect::<Vec<_>>()
                .join("; "),
            workload: f.workload.clone(),
            workload_sha256: f.workload_sha256.clone(),
            harness_sha256: f.harness_sha256.clone(),
            samples_per_tree,
            trees: Vec::new(),
        }
    }

    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the cache {}", path.display()))?;
        let cache: Cache = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a measurement cache written by `polymorph record`",
                path.display()
            )
        })?;
        if cache.format != CACHE_FORMAT {
            bail!(
                "{}: cache format {} (this polymorph reads {CACHE_FORMAT}); record it again",
                path.display(),
                cache.format
            );
        }
        Ok(cache)
    }

    /// Writes the cache whole: to a temporary file beside it, then renamed over it.
    pub fn save(&self, path: &Path) -> Result<()> {
        let tmp = path.with_extension("partial");
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(&tmp, text + "\n").with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
    }

    /// Fails, saying what differs, unless the cache was recorded for this task as resolved.
    pub fn check_matches(&self, r: &Resolved, path: &Path) -> Result<()> {
        let f = &r.fingerprint;
        let what = if self.task != r.task.name {
            format!("task {} (this is {})", self.task, r.task.name)
        } else if self.workload_sha256 != f.workload_sha256 {
            format!("another workload ({})", self.workload)
        } else if self.harness_sha256 != f.harness_sha256 {
            "other harness files (the bench, check or build changed since)".to_string()
        } else if self.metric != r.task.metric.name {
            format!("metric {}", self.metric)
        } else {
            return Ok(());
        };
        bail!(
            "{} was recorded for {what}: give the workload it was recorded with (--workload), or record it again with `polymorph record {} --out {}`",
            path.display(),
            r.task.dir.display(),
            path.display()
        )
    }

    /// The sha256 of the cache file's content: a simulated run's context names it.
    pub fn digest(path: &Path) -> Result<String> {
        let bytes =
            std::fs::read(path).with_context(|| format!("reading the cache {}", path.display()))?;
        Ok(sha256_hex(&bytes))
    }
}

/// The `params_key` of a recorded parameter assignment (`None` for the start and baseline).
pub fn params_key_of(t: &RecordedTree) -> Option<String> {
    t.params.as_ref().map(params_key)
}

/// What identifies a tree in a cache: the hash of its editable files (the rest is the harness,
/// which the cache's `harness_sha256` pins).
pub fn tree_key(task: &Task, tree: &FileTree) -> String {
    let listing: String = tree
        .iter()
        .filter(|(p, _)| task.is_editable(p))
        .map(|(p, b)| format!("{p}\0{}\n", sha256_hex(b)))
        .collect();
    sha256_hex(listing.as_bytes())
}
