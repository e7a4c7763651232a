//! The landscapes the search benches replay: polymorph's own recorded caches
//! (`benches/data/*.json`) and Kernel Tuner's cache files (`benches/data/kernel-tuner/KERNEL/GPU.json.gz`,
//! imported with `polymorph import`). Either way a configuration's draws come from half of its
//! recorded repeats and its truth is the mean of the other half.

use polymorph::engine::simulate::{Cache, RecordedTree, import, params_key_of, score};
use polymorph::measure::{Direction, geomean};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One landscape: each assignment's true score (higher is better) and the best.
pub struct Landscape {
    /// `matmul-c-decode.json`, or `convolution/A100` for an imported Kernel Tuner file.
    pub name: String,
    pub task: PathBuf,
    pub cache: PathBuf,
    pub workload: Option<PathBuf>,
    pub truth: BTreeMap<String, f64>,
    pub start: f64,
    pub best: f64,
    pub screen_pairs: usize,
}

/// Every landscape under `benches/data`, polymorph's caches first, by name.
pub fn all(root: &Path) -> Vec<(String, PathBuf)> {
    let data = root.join("benches/data");
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for e in std::fs::read_dir(&data).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            out.push((file_name(&p), p));
        }
    }
    out.sort();
    let mut imported = Vec::new();
    for kernel in std::fs::read_dir(data.join("kernel-tuner")).unwrap() {
        let dir = kernel.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if let Some(gpu) = file_name(&p).strip_suffix(".json.gz") {
                imported.push((format!("{}/{gpu}", file_name(&dir)), p));
            }
        }
    }
    imported.sort();
    out.extend(imported);
    out
}

fn file_name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

impl Landscape {
    /// Loads the landscape `name` from `path` (a cache, or a Kernel Tuner file), into a folder
    /// of this process's own, so that two benches can run at once.
    pub fn load(root: &Path, name: &str, path: &Path) -> Self {
        let work = root
            .join("target/search-landscapes")
            .join(std::process::id().to_string())
            .join(name.replace('/', "-"));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(work.parent().unwrap()).unwrap();
        if file_name(path).ends_with(".json.gz") {
            let t1 = path.with_file_name("t1.json");
            let done = import::import(path, t1.exists().then_some(t1.as_path()), &work)
                .unwrap_or_else(|e| panic!("importing {}: {e:#}", path.display()));
            Self::from_cache(name, done.task_dir, done.cache, None)
        } else {
            let cache = Cache::load(path).unwrap();
            let task = as_recorded(root, &cache.task);
            let workload = task.join(&cache.workload);
            let split = work.with_extension("json");
            held_out_half(cache).save(&split).unwrap();
            Self::from_cache(name, task, split, Some(workload))
        }
    }

    fn from_cache(
        name: &str,
        task: PathBuf,
        cache_path: PathBuf,
        workload: Option<PathBuf>,
    ) -> Self {
        let cache = Cache::load(&cache_path).unwrap();
        let spec = polymorph::task::Task::load(&task).unwrap();
        let sign = match spec.metric.direction {
            Direction::Maximize => 1.0,
            Direction::Minimize => -1.0,
        };
        // The objective the judge applies: the mean per-case log gain (equal weights here).
        let score = |t: &RecordedTree| geomean(t.case_means().values().copied()).powf(sign);
        let ok = |t: &&RecordedTree| t.failed.is_none() && !t.samples.is_empty();
        let truth: BTreeMap<String, f64> = cache
            .trees
            .iter()
            .filter(ok)
            .filter_map(|t| Some((params_key_of(t)?, score(t))))
            .collect();
        let start = cache.trees.iter().filter(ok).find(|t| t.label == "start");
        Landscape {
            name: name.to_string(),
            task,
            cache: cache_path,
            workload,
            best: truth.values().copied().fold(f64::NEG_INFINITY, f64::max),
            start: score(start.expect("the cache has the task as given")),
            truth,
            screen_pairs: spec.judge.screen_pairs,
        }
    }

    /// Each configuration's quality (its true score over the best), ascending.
    pub fn qualities(&self) -> Vec<f64> {
        let mut q: Vec<f64> = self.truth.values().map(|v| v / self.best).collect();
        q.sort_by(f64::total_cmp);
        q
    }

    /// The expected quality of the best of `k` configurations drawn uniformly without
    /// replacement, judged by their truth: random search's expectation at `k` evaluations.
    pub fn random_expectation(&self, k: usize) -> f64 {
        score::expected_best(&self.qualities(), k)
    }
}

/// The cache with each tree's draws and truth split as `polymorph import` splits a Kernel Tuner
/// file's repeats after its warm-up (each of polymorph's samples is a process of its own: none
/// is a warm-up).
fn held_out_half(mut cache: Cache) -> Cache {
    cache.trees.iter_mut().for_each(RecordedTree::hold_out_half);
    cache.samples_per_tree = cache.samples_per_tree.div_ceil(2);
    cache
}

/// A copy of `tasks/NAME` (under target/) with the harness files the committed caches were
/// recorded with laid over it (`tests/fixtures/recorded-harness/NAME`, where the harness has
/// changed since): a cache replays only against the harness it measured.
fn as_recorded(root: &Path, name: &str) -> PathBuf {
    let dst = root
        .join("target/search-tasks")
        .join(std::process::id().to_string())
        .join(name);
    let _ = std::fs::remove_dir_all(&dst);
    std::fs::create_dir_all(&dst).unwrap();
    let recorded = root.join("tests/fixtures/recorded-harness").join(name);
    for src in [root.join("tasks").join(name), recorded] {
        if src.is_dir() {
            let ok = std::process::Command::new("cp")
                .arg("-rT")
                .args([&src, &dst])
                .status()
                .unwrap();
            assert!(ok.success(), "copying {}", src.display());
        }
    }
    dst
}
