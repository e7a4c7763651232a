//! Compares search strategies on a recorded cache of matmul-c's whole parameter space (5 bench
//! processes per assignment, per case), replayed through the real loop and judge (`run
//! --simulate`): for each strategy and seed, the bench processes spent until the exhaustive best
//! is first evaluated and until it is the accepted incumbent (and the bench seconds until then,
//! the recorded seconds of the samples drawn), and the final incumbent's true score (its mean
//! over the cache) as a share of the best's.
//!
//! cargo bench --bench search [-- SEEDS [BUDGET [CACHE [STRATEGIES]]]]   (default 20 seeds, 50
//! candidates, every cache in benches/data, hill,random,model)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use polymorph::engine::simulate::{Cache, RecordedTree, case_means};
use polymorph::engine::{RunOptions, Strategy, run};
use polymorph::measure::{geomean, median};
use polymorph::record::{ProposerChoice, RunProposer, Store};
use rand::{Rng, SeedableRng};
use sandbox::{Isolation, Runner};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// What one seeded run of one strategy did.
struct Outcome {
    /// Bench processes (both sides of every pair) up to and including the best's evaluation.
    to_evaluate: Option<usize>,
    /// The same, up to the candidate whose acceptance made the best the incumbent.
    to_accept: Option<usize>,
    /// Bench seconds (the recorded seconds of the processes drawn) up to that candidate.
    seconds_to_accept: Option<f64>,
    /// Bench processes of the whole run (proposals only; the reference figures are apart).
    total: usize,
    /// Bench seconds of the whole run (proposals only).
    seconds: f64,
    /// The final incumbent's true score over the best's.
    quality: f64,
    repeats: usize,
}

/// The landscape every run is scored on: the cache and task, and each assignment's true score.
struct Bench {
    task: PathBuf,
    cache: PathBuf,
    workload: PathBuf,
    truth: BTreeMap<String, f64>,
    best_key: String,
    /// The pairs the judge's screen takes.
    screen_pairs: usize,
}

async fn one(b: &Bench, strategy: Strategy, seed: u64, budget: usize) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("runs.db")).await.unwrap();
    let opts = RunOptions {
        proposer: ProposerChoice::Given(RunProposer::Search),
        budget,
        seed: Some(seed),
        workload: Some(b.workload.clone()),
        progress: false,
        warm_start: false,
        agent: None,
        simulate: Some(b.cache.clone()),
        strategy,
        targets: None,
    };
    let runner = Runner::new(Isolation::detect(""));
    let cancel = Arc::new(AtomicBool::new(false));
    let report = run(
        &store,
        &dir.path().join("ledger"),
        &b.task,
        &opts,
        &runner,
        cancel,
    )
    .await
    .unwrap()
    .remove(0);
    let (_, rows) = store
        .query_readonly(&format!(
            "SELECT c.params_key, e.pairs, e.verdict, c.origin, e.bench_seconds FROM candidates c JOIN evaluations e ON e.candidate_id = c.id \
             WHERE c.run_id = {} ORDER BY c.seq",
            report.run_id
        ))
        .await
        .unwrap();
    let (mut spent, mut to_evaluate, mut to_accept) = (0, None, None);
    let (mut seconds, mut seconds_to_accept) = (0.0, None);
    // Pairs measured of each assignment so far.
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut repeats = 0;
    for r in &rows {
        let key = r[0].as_str().unwrap_or_default();
        let pairs = r[1].as_i64().unwrap_or(0) as usize;
        spent += 2 * pairs;
        seconds += r[4].as_f64().unwrap_or(0.0);
        let slot = seen.entry(key.to_string()).or_default();
        let before = *slot;
        *slot += pairs;
        // Measured again are only a race's leader, judged in full after its screen, and a
        // near-tie's screen taken in two parts, no longer in all than one screen.
        let allowed = match r[3].as_str().and_then(|o| o.parse::<agent::Origin>().ok()) {
            Some(agent::Origin::Confirm) => true,
            Some(agent::Origin::Rescreen) => before + pairs <= b.screen_pairs,
            _ => false,
        };
        repeats += usize::from(before > 0 && !allowed);
        if key == b.best_key {
            to_evaluate.get_or_insert(spent);
            if r[2].as_str() == Some("accepted") {
                to_accept.get_or_insert(spent);
                seconds_to_accept.get_or_insert(seconds);
            }
        }
    }
    let (_, best) = store
        .query_readonly(&format!(
            "SELECT params FROM ledger_entries WHERE id = {}",
            report.best_entry.unwrap()
        ))
        .await
        .unwrap();
    let final_key = best[0][0].as_str().unwrap_or_default();
    Outcome {
        to_evaluate,
        to_accept,
        seconds_to_accept,
        total: spent,
        seconds,
        quality: b.truth.get(final_key).copied().unwrap_or(0.0) / b.truth[&b.best_key],
        repeats,
    }
}

/// Resamples of the cache in which the best is counted.
const RESAMPLES: usize = 1_000;

/// The share of bootstrap resamples of the cache (each assignment's samples drawn again, with
/// replacement) in which the exhaustive best is still the best: how far the cache itself can
/// tell it from the runners-up.
fn best_in_resamples(cache: &Cache, best_key: &str) -> f64 {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let trees: Vec<(String, &RecordedTree)> = cache
        .trees
        .iter()
        .filter(|t| t.failed.is_none() && !t.samples.is_empty())
        .filter_map(|t| Some((polymorph::engine::simulate::params_key_of(t)?, t)))
        .collect();
    let mut wins = 0;
    for _ in 0..RESAMPLES {
        let mut top = (f64::NEG_INFINITY, "");
        for (key, t) in &trees {
            // Scored as the truth is: the geometric mean of the case means.
            let drawn =
                (0..t.samples.len()).map(|_| &t.samples[rng.random_range(0..t.samples.len())]);
            let score = geomean(case_means(drawn).values().copied());
            if score > top.0 {
                top = (score, key);
            }
        }
        wins += usize::from(top.1 == best_key);
    }
    wins as f64 / RESAMPLES as f64
}

/// Bench processes of each side a comparison needs to tell the best from the runner-up with 95%
/// confidence (one-sided, normal approximation), from the spread of each one's per-process score
/// (the log geometric mean of one sample's cases); with the runner-up's gap.
fn processes_to_tell(cache: &Cache, truth: &BTreeMap<String, f64>, best_key: &str) -> (f64, f64) {
    let variance = |key: &str| {
        let t = cache
            .trees
            .iter()
            .find(|t| polymorph::engine::simulate::params_key_of(t).as_deref() == Some(key))
            .unwrap();
        let logs: Vec<f64> = t
            .samples
            .iter()
            .map(|s| geomean(s.cases.values().copied()).ln())
            .collect();
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (logs.len() - 1).max(1) as f64
    };
    let (second_key, second) = truth
        .iter()
        .filter(|(k, _)| *k != best_key)
        .max_by(|a, b| a.1.total_cmp(b.1))
        .unwrap();
    let gap = (truth[best_key] / second).ln();
    let sd = (variance(best_key) + variance(second_key)).sqrt();
    ((1.645 * sd / gap).powi(2).ceil().max(1.0), gap)
}

/// The median of `xs` with `decimals` digits, or "-" when there is none.
fn med(xs: &[f64], decimals: usize) -> String {
    if xs.is_empty() {
        return "-".into();
    }
    format!("{:.decimals$}", median(xs))
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let seeds: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(20);
    let budget: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(50);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let caches: Vec<PathBuf> = match args.get(2) {
        Some(one) if one != "all" => vec![PathBuf::from(one)],
        _ => {
            let mut all: Vec<PathBuf> = std::fs::read_dir(root.join("benches/data"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            all.sort();
            all
        }
    };
    let strategies: Vec<Strategy> = args
        .get(3)
        .map_or("hill,random,model", String::as_str)
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    for cache_path in caches {
        compare(root, cache_path, seeds, budget, &strategies).await;
        println!();
    }
    println!(
        "best found: seeds that evaluated the best; procs: median bench processes (both sides of every pair) until then, over those seeds;"
    );
    println!(
        "incumbent: seeds ending with the best accepted; within gain: ending within min_gain of it, closer than the judge resolves; quality: the final incumbent's true score over the best's (median, worst)"
    );
}

/// Every strategy on one cache, `seeds` runs each.
async fn compare(
    root: &Path,
    cache_path: PathBuf,
    seeds: u64,
    budget: usize,
    strategies: &[Strategy],
) {
    let task = root.join("tasks/matmul-c");
    let spec = polymorph::task::Task::load(&task).unwrap();
    let (min_gain, screen_pairs) = (spec.metric.min_gain, spec.judge.screen_pairs);
    let cache = Cache::load(&cache_path).unwrap();
    // The true score of every assignment: the geometric mean over cases of its mean samples.
    let truth: BTreeMap<String, f64> = cache
        .trees
        .iter()
        .filter(|t| t.failed.is_none())
        .filter_map(|t| {
            let key = polymorph::engine::simulate::params_key_of(t)?;
            Some((key, geomean(t.case_means().values().copied())))
        })
        .collect();
    let (best_key, best) = truth
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(k, v)| (k.clone(), *v))
        .unwrap();
    let near = truth.values().filter(|v| **v >= 0.95 * best).count();
    println!(
        "search benchmark: {} ({} assignments, {} samples each, recorded on {}); the best {best_key} at {best:.3} {}, {near} within 95% of it; min_gain {:.0}%",
        cache_path.file_name().unwrap().to_string_lossy(),
        truth.len(),
        cache.samples_per_tree,
        cache.machine,
        cache.metric,
        min_gain * 100.0
    );
    println!(
        "the best is still the best in {:.0}% of bootstrap resamples of the cache's own samples",
        100.0 * best_in_resamples(&cache, &best_key)
    );
    let (n, gap) = processes_to_tell(&cache, &truth, &best_key);
    println!(
        "telling it from the runner-up ({:.1}% behind) with 95% confidence takes about {n:.0} bench processes of each",
        gap.exp_m1() * 100.0
    );
    println!(
        "{seeds} seeds x {budget} candidates per strategy, through the real loop and judge (simulated benches)"
    );
    println!(
        "{:<8} {:>12} {:>14} {:>14} {:>14} {:>12} {:>12} {:>10} {:>10} {:>8}",
        "strategy",
        "best found",
        "procs to eval",
        "procs to accept",
        "secs to accept",
        "incumbent",
        "within gain",
        "quality",
        "worst q",
        "repeats"
    );
    let bench = Bench {
        workload: task.join(&cache.workload),
        task,
        cache: cache_path,
        truth,
        best_key,
        screen_pairs,
    };
    for &strategy in strategies {
        let started = std::time::Instant::now();
        let mut outcomes = Vec::new();
        for seed in 0..seeds {
            outcomes.push(one(&bench, strategy, seed, budget).await);
        }
        let count = |x: Option<usize>| x.map(|n| n as f64);
        let eval: Vec<f64> = outcomes
            .iter()
            .filter_map(|o| count(o.to_evaluate))
            .collect();
        let acc: Vec<f64> = outcomes.iter().filter_map(|o| count(o.to_accept)).collect();
        let acc_seconds: Vec<f64> = outcomes
            .iter()
            .filter_map(|o| o.seconds_to_accept)
            .collect();
        let quality: Vec<f64> = outcomes.iter().map(|o| o.quality).collect();
        let is_best = outcomes.iter().filter(|o| o.quality >= 1.0).count();
        let close = outcomes
            .iter()
            .filter(|o| o.quality * (1.0 + min_gain) >= 1.0)
            .count();
        println!(
            "{:<8} {:>12} {:>14} {:>14} {:>14} {:>12} {:>12} {:>10.3} {:>10.3} {:>8}   ({:.0} procs and {:.0} bench s a run, {:.1} s)",
            strategy.as_str(),
            format!("{}/{seeds}", eval.len()),
            med(&eval, 0),
            med(&acc, 0),
            med(&acc_seconds, 1),
            format!("{is_best}/{seeds}"),
            format!("{close}/{seeds}"),
            median(&quality),
            quality.iter().copied().fold(f64::INFINITY, f64::min),
            outcomes.iter().map(|o| o.repeats).sum::<usize>(),
            median(&outcomes.iter().map(|o| o.total as f64).collect::<Vec<_>>()),
            median(&outcomes.iter().map(|o| o.seconds).collect::<Vec<_>>()),
            started.elapsed().as_secs_f64()
        );
        let mut ends: Vec<(String, usize)> = Vec::new();
        let mut sorted = quality.clone();
        sorted.sort_by(|a, b| b.total_cmp(a));
        for q in sorted {
            let q = format!("{q:.3}");
            match ends.last_mut() {
                Some((last, n)) if *last == q => *n += 1,
                _ => ends.push((q, 1)),
            }
        }
        let ends: Vec<String> = ends.iter().map(|(q, n)| format!("{q} x{n}")).collect();
        println!("         ended on (quality x seeds): {}", ends.join(", "));
    }
}
