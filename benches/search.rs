//! Search strategies and their peers on recorded caches (`polymorph record`: every assignment
//! of a task's space, 5 bench processes each, per case). polymorph's strategies run through the
//! real loop and judge (`run --simulate`); the peers (random draws, Optuna's TPE, Kernel
//! Tuner's bayes_opt, genetic_algorithm and pso) run in `benches/peers/peers.py`, drawing
//! samples the same way. Every one is charged in bench processes and judged by what a user
//! would ship at 100, 300 and 1,000 processes: polymorph's accepted incumbent, a peer's best
//! mean over what it drew; quality is that configuration's true score (the geometric mean of
//! its case means) over the exhaustive best's. Caches are split into a train half (named in
//! `benches/data/halves.toml`, which the search's constants were chosen on) and a test half
//! (every other cache); the summary is the test half's.
//!
//! cargo bench --bench search [-- SEEDS [CACHES [STRATEGIES]]]
//!   SEEDS: default 20; CACHES: all (default), train, test or one cache's path;
//!   STRATEGIES: default tpe,model,random and the peers draws,optuna-tpe,kt-bayes_opt,
//!   kt-genetic_algorithm,kt-pso; polymorph's hill and Optuna's GP (optuna-gp, scored up to
//!   300 processes: its cost grows with the trials) run when named.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "search/peers.rs"]
mod peers;

use polymorph::engine::simulate::{Cache, params_key_of};
use polymorph::engine::{RunOptions, Strategy, run};
use polymorph::measure::{Direction, geomean, median};
use polymorph::record::{ProposerChoice, RunProposer, Store};
use sandbox::{Isolation, Runner};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The budgets, in bench processes, at which what each would ship is scored.
const BUDGETS: [usize; 3] = [100, 300, 1_000];
/// Candidates a polymorph run may propose: more than any run here needs to spend the last
/// budget or the space.
const CANDIDATES: usize = 400;
/// The quality a seed should reach, and by which budget.
const GOOD: f64 = 0.95;
const GOOD_BY: usize = 300;

/// One cache's landscape: each assignment's true score and the best.
struct Landscape {
    name: String,
    task: PathBuf,
    cache: PathBuf,
    workload: PathBuf,
    truth: BTreeMap<String, f64>,
    start: f64,
    best: f64,
    screen_pairs: usize,
}

impl Landscape {
    fn load(root: &Path, cache_path: &Path) -> Self {
        let cache = Cache::load(cache_path).unwrap();
        let task = as_recorded(root, &cache.task);
        let spec = polymorph::task::Task::load(&task).unwrap();
        let sign = match spec.metric.direction {
            Direction::Maximize => 1.0,
            Direction::Minimize => -1.0,
        };
        // The objective the judge applies: the mean per-case log gain (equal weights here).
        let score = |t: &polymorph::engine::simulate::RecordedTree| {
            geomean(t.case_means().values().copied()).powf(sign)
        };
        let ok = |t: &&polymorph::engine::simulate::RecordedTree| {
            t.failed.is_none() && !t.samples.is_empty()
        };
        let truth: BTreeMap<String, f64> = cache
            .trees
            .iter()
            .filter(ok)
            .filter_map(|t| Some((params_key_of(t)?, score(t))))
            .collect();
        let start = cache.trees.iter().filter(ok).find(|t| t.label == "start");
        Landscape {
            name: cache_path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned(),
            workload: task.join(&cache.workload),
            task,
            cache: cache_path.to_path_buf(),
            best: truth.values().copied().fold(f64::NEG_INFINITY, f64::max),
            start: score(start.expect("the cache has the task as given")),
            truth,
            screen_pairs: spec.judge.screen_pairs,
        }
    }
}

/// A copy of `tasks/NAME` (under target/) with the harness files the committed caches were
/// recorded with laid over it (`tests/fixtures/recorded-harness/NAME`, where the harness has
/// changed since): a cache replays only against the harness it measured.
fn as_recorded(root: &Path, name: &str) -> PathBuf {
    let dst = root.join("target/search-tasks").join(name);
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

/// What one seeded polymorph run shipped at each budget, and its cost.
struct Outcome {
    quality: Vec<f64>,
    processes: usize,
    candidates: usize,
    repeats: usize,
}

async fn one(l: &Landscape, strategy: Strategy, seed: u64) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("runs.db")).await.unwrap();
    let opts = RunOptions {
        proposer: ProposerChoice::Given(RunProposer::Search),
        budget: CANDIDATES,
        seed: Some(seed),
        workload: Some(l.workload.clone()),
        progress: false,
        warm_start: false,
        agent: None,
        simulate: Some(l.cache.clone()),
        strategy,
        targets: None,
    };
    let runner = Runner::new(Isolation::detect(""));
    let cancel = Arc::new(AtomicBool::new(false));
    let ledger = dir.path().join("ledger");
    let report = run(&store, &ledger, &l.task, &opts, &runner, cancel)
        .await
        .unwrap()
        .remove(0);
    let (_, rows) = store
        .query_readonly(&format!(
            "SELECT c.params_key, e.pairs, e.verdict, c.origin FROM candidates c \
             JOIN evaluations e ON e.candidate_id = c.id WHERE c.run_id = {} ORDER BY c.seq",
            report.run_id
        ))
        .await
        .unwrap();
    let quality = |key: Option<&str>| {
        key.map_or(l.start, |k| l.truth.get(k).copied().unwrap_or(0.0)) / l.best
    };
    let (mut spent, mut incumbent, mut repeats) = (0, None::<String>, 0);
    let mut shipped = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for r in &rows {
        let key = r[0].as_str().unwrap_or_default().to_string();
        let pairs = r[1].as_i64().unwrap_or(0) as usize;
        while shipped.len() < BUDGETS.len() && spent + 2 * pairs > BUDGETS[shipped.len()] {
            shipped.push(quality(incumbent.as_deref()));
        }
        spent += 2 * pairs;
        let before = seen.get(&key).copied().unwrap_or(0);
        seen.insert(key.clone(), before + pairs);
        // Measured again may be only a race's leader, judged in full after its screen, and a
        // near-tie's screen taken in two parts, no longer in all than one screen.
        let allowed = match r[3].as_str().and_then(|o| o.parse::<agent::Origin>().ok()) {
            Some(agent::Origin::Confirm) => true,
            Some(agent::Origin::Rescreen) => before + pairs <= l.screen_pairs,
            _ => false,
        };
        repeats += usize::from(before > 0 && !allowed);
        if r[2].as_str() == Some("accepted") {
            incumbent = Some(key);
        }
    }
    while shipped.len() < BUDGETS.len() {
        shipped.push(quality(incumbent.as_deref()));
    }
    Outcome {
        quality: shipped,
        processes: spent,
        candidates: rows.len(),
        repeats,
    }
}

/// The caches named in `benches/data/halves.toml`'s `train`.
fn train_half(root: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(root.join("benches/data/halves.toml")).unwrap();
    let doc: toml::Table = toml::from_str(&text).unwrap();
    doc["train"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

/// Each strategy's or peer's quality per seed at each budget, on one cache.
type Table = BTreeMap<String, BTreeMap<usize, Vec<f64>>>;

fn share_good(q: &[f64]) -> f64 {
    q.iter().filter(|x| **x >= GOOD).count() as f64 / q.len().max(1) as f64
}

fn print_row(name: &str, by_budget: &BTreeMap<usize, Vec<f64>>, extra: &str) {
    let cells: Vec<String> = BUDGETS
        .iter()
        .map(|b| match by_budget.get(b) {
            Some(q) => {
                let worst = q.iter().copied().fold(f64::INFINITY, f64::min);
                format!("{:>6.3} ({:.3})", median(q), worst)
            }
            None => format!("{:>14}", "-"),
        })
        .collect();
    let good = by_budget
        .get(&GOOD_BY)
        .map_or("-".into(), |q| format!("{:.0}", 100.0 * share_good(q)));
    println!("{name:<22} {}   {good:>4}%  {extra}", cells.join("  "));
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let seeds: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(20);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let train = train_half(root);
    let mut caches: Vec<PathBuf> = std::fs::read_dir(root.join("benches/data"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    caches.sort();
    let is_train = |p: &Path| {
        train
            .iter()
            .any(|t| p.file_name().is_some_and(|f| f == t.as_str()))
    };
    match args.get(1).map(String::as_str) {
        None | Some("all") => {}
        Some("train") => caches.retain(|p| is_train(p)),
        Some("test") => caches.retain(|p| !is_train(p)),
        Some(one) => caches = vec![PathBuf::from(one)],
    }
    let default = format!("tpe,model,random,{}", peers::ALL.join(","));
    let names: Vec<String> = args
        .get(2)
        .map_or(default.as_str(), String::as_str)
        .split(',')
        .map(str::to_string)
        .collect();
    let (peer_names, ours): (Vec<&str>, Vec<&str>) = names
        .iter()
        .map(String::as_str)
        .partition(|n| peers::known(n));
    let strategies: Vec<Strategy> = ours.iter().map(|s| s.parse().unwrap()).collect();
    // The GP peer runs in its own environment, to fewer processes.
    let (gp, others): (Vec<&str>, Vec<&str>) = peer_names.iter().partition(|n| **n == peers::GP);
    let groups: Vec<(PathBuf, Vec<&str>, Vec<usize>)> = [
        (others, BUDGETS.to_vec()),
        (
            gp,
            BUDGETS
                .iter()
                .copied()
                .filter(|b| *b <= peers::GP_MAX_BUDGET)
                .collect(),
        ),
    ]
    .into_iter()
    .filter(|(names, _)| !names.is_empty())
    .map(|(names, budgets)| (peers::python(root, names[0]), names, budgets))
    .collect();
    println!(
        "{seeds} seeds; quality: median (worst) of what each would ship after 100, 300 and 1,000 bench processes, over the exhaustive best; \
         >={GOOD}: seeds at {GOOD} or better by {GOOD_BY}"
    );
    let mut test_tables: Vec<(String, Table)> = Vec::new();
    for cache in &caches {
        let l = Landscape::load(root, cache);
        let half = if is_train(cache) { "train" } else { "test" };
        let near = l.truth.values().filter(|v| **v >= GOOD * l.best).count();
        println!(
            "\n{} ({half} half): {} assignments, {near} within 95% of the best; the start at {:.3} of it",
            l.name,
            l.truth.len(),
            l.start / l.best
        );
        println!(
            "{:<22} {:>14}  {:>14}  {:>14}   >={GOOD}",
            "", "100", "300", "1000"
        );
        let mut table = Table::new();
        for &strategy in &strategies {
            let started = std::time::Instant::now();
            let mut outcomes = Vec::new();
            for seed in 0..seeds {
                outcomes.push(one(&l, strategy, seed).await);
            }
            let row = table
                .entry(format!("polymorph {}", strategy.as_str()))
                .or_default();
            for (i, b) in BUDGETS.iter().enumerate() {
                row.insert(*b, outcomes.iter().map(|o| o.quality[i]).collect());
            }
            let procs: Vec<f64> = outcomes.iter().map(|o| o.processes as f64).collect();
            let cands: Vec<f64> = outcomes.iter().map(|o| o.candidates as f64).collect();
            let repeats: usize = outcomes.iter().map(|o| o.repeats).sum();
            print_row(
                &format!("polymorph {}", strategy.as_str()),
                row,
                &format!(
                    "({:.0} candidates, {:.0} processes a run; {repeats} repeats; {:.0} s)",
                    median(&cands),
                    median(&procs),
                    started.elapsed().as_secs_f64()
                ),
            );
        }
        for (python, names, budgets) in &groups {
            let drawn = peers::run(python, root, cache, &l.task, seeds, budgets, names);
            for peer in names {
                if let Some(row) = drawn.get(*peer) {
                    print_row(peer, row, "");
                    table.insert((*peer).to_string(), row.clone());
                }
            }
        }
        if half == "test" {
            test_tables.push((l.name.clone(), table));
        }
    }
    summary(&test_tables);
}

/// Medians over the test half's caches, and the target of the default strategy (`tpe`)
/// against the best peer on each.
fn summary(tables: &[(String, Table)]) {
    if tables.is_empty() {
        return;
    }
    println!(
        "\ntest half ({} caches): median over caches of each one's median quality at 100 / 300 / 1,000 processes; caches with >=90% of seeds at {GOOD} by {GOOD_BY}",
        tables.len()
    );
    let names: Vec<&String> = tables[0].1.keys().collect();
    for name in names {
        let per_budget: Vec<String> = BUDGETS
            .iter()
            .map(|b| {
                let meds: Vec<f64> = tables
                    .iter()
                    .filter_map(|(_, t)| t[name].get(b).map(|q| median(q)))
                    .collect();
                if meds.is_empty() {
                    "-".into()
                } else {
                    format!("{:.3}", median(&meds))
                }
            })
            .collect();
        let good = tables
            .iter()
            .filter(|(_, t)| t[name].get(&GOOD_BY).is_some_and(|q| share_good(q) >= 0.9))
            .count();
        println!(
            "{name:<22} {}   {good}/{}",
            per_budget.join(" / "),
            tables.len()
        );
    }
    let ours = "polymorph tpe";
    for (cache, t) in tables {
        let Some(mine) = t.get(ours) else { return };
        for b in BUDGETS {
            let best_peer = t
                .iter()
                .filter(|(n, _)| !n.starts_with("polymorph"))
                .filter_map(|(n, q)| q.get(&b).map(|q| (n, median(q))))
                .max_by(|a, c| a.1.total_cmp(&c.1));
            if let Some((peer, q)) = best_peer
                && median(&mine[&b]) < q
            {
                println!(
                    "target missed: {cache} at {b} processes, {ours} {:.3} < {peer} {q:.3}",
                    median(&mine[&b])
                );
            }
        }
    }
}
