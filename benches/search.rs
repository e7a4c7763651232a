//! Search strategies and their peers on recorded landscapes: Kernel Tuner's exhaustive cache
//! files of real GPUs (`benches/data/kernel-tuner/`, imported with `polymorph import`) and
//! polymorph's own recorded caches (`benches/data/*.json`). polymorph's strategies run through
//! the real loop and judge (`run --simulate`); the peers (random draws, Optuna's TPE, Kernel
//! Tuner's bayes_opt, genetic_algorithm and pso) run in `benches/peers/peers.py`, drawing
//! samples the same way. A bench process is one recorded repeat drawn at random from half of a
//! configuration's repeats; its truth is the mean of the other half (a Kernel Tuner file's first
//! repeat, a warm-up, in neither). Every one is charged in
//! bench processes and scored by the truth of what a user would ship at 25, 50, 100, 200 and
//! 400 processes (polymorph's accepted incumbent, a peer's best mean over what it drew),
//! against random search's expectation at the same budget: (q - E[q random]) / (1 - E[q
//! random]), 0 for random search, 1 for the best. Landscapes are split into a train half
//! (named in `benches/data/halves.toml`, which the search's constants were chosen on) and a
//! test half (every other one); the summary and the targets are the test half's.
//!
//! cargo bench --bench search [-- SEEDS [LANDSCAPES [STRATEGIES]]]
//!   SEEDS: default 25; LANDSCAPES: all (default), train, test, kernel-tuner, recorded, or one
//!   landscape's name (convolution/A100, softmax-c.json); STRATEGIES: default tpe,random and the
//!   peers draws,optuna-tpe,kt-bayes_opt,kt-genetic_algorithm,kt-pso; polymorph's model and
//!   hill, Optuna's GP (optuna-gp, scored up to 200 processes) and tpe's proposal rule alone
//!   (tpe-rule) run when named.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "search/landscape.rs"]
mod landscape;
#[path = "search/peers.rs"]
mod peers;
#[path = "search/replay.rs"]
mod replay;
#[path = "search/table.rs"]
mod table;
#[path = "search/verify.rs"]
mod verify;

use landscape::Landscape;
use polymorph::engine::Strategy;
use polymorph::record::RunProposer;
use std::collections::HashMap;
use std::path::Path;
use table::{BUDGETS, Row, Table};

/// Candidates a polymorph run may propose: more than any run here needs to spend the last
/// budget.
const CANDIDATES: usize = 300;

/// What one seeded polymorph run shipped at each budget, and its cost.
struct Outcome {
    quality: Vec<f64>,
    processes: usize,
    candidates: usize,
    repeats: usize,
}

async fn one(l: &Landscape, strategy: Strategy, seed: u64) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let opts = replay::options(l, RunProposer::Search, strategy, CANDIDATES, seed, false);
    let rows = replay::replay(dir.path(), l, &opts).await;
    let quality = |key: Option<&str>| {
        key.map_or(l.start, |k| l.truth.get(k).copied().unwrap_or(0.0)) / l.best
    };
    let (mut spent, mut incumbent, mut repeats) = (0, None::<String>, 0);
    let mut shipped = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for r in &rows {
        let key = r.key.clone();
        let pairs = r.pairs;
        while shipped.len() < BUDGETS.len() && spent + 2 * pairs > BUDGETS[shipped.len()] {
            shipped.push(quality(incumbent.as_deref()));
        }
        spent += 2 * pairs;
        let before = seen.get(&key).copied().unwrap_or(0);
        seen.insert(key.clone(), before + pairs);
        // Measured again may be only a race's leader, judged in full after its screen, and a
        // near-tie's screen taken in two parts, no longer in all than one screen.
        let allowed = match r.origin.parse::<proposers::Origin>().ok() {
            Some(proposers::Origin::Confirm) => true,
            Some(proposers::Origin::Rescreen) => before + pairs <= l.screen_pairs,
            _ => false,
        };
        repeats += usize::from(before > 0 && !allowed);
        if r.verdict == "accepted" {
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

/// The landscapes named in `benches/data/halves.toml`'s `train`.
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

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let seeds: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(25);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let train = train_half(root);
    let is_train = |name: &str| train.iter().any(|t| t == name);
    let mut chosen = landscape::all(root);
    let imported = |name: &str| !name.ends_with(".json");
    match args.get(1).map(String::as_str) {
        None | Some("all") => {}
        Some("train") => chosen.retain(|(n, _)| is_train(n)),
        Some("test") => chosen.retain(|(n, _)| !is_train(n)),
        Some("kernel-tuner") => chosen.retain(|(n, _)| imported(n)),
        Some("recorded") => chosen.retain(|(n, _)| !imported(n)),
        Some(one) => {
            chosen.retain(|(n, _)| n == one);
            assert!(!chosen.is_empty(), "no landscape named {one}");
        }
    }
    let default = format!("tpe,random,{}", peers::ALL.join(","));
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
    let groups: Vec<(std::path::PathBuf, Vec<&str>, Vec<usize>)> = [
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
    // The peers' picks are also taken on the verification's finer grid.
    let with_grid = |budgets: &[usize]| {
        let mut all: Vec<usize> = budgets.iter().chain(verify::GRID.iter()).copied().collect();
        all.sort_unstable();
        all.dedup();
        all
    };
    println!("{seeds} seeds. {}", table::LEGEND);
    let mut tables: Vec<Table> = Vec::new();
    for (name, path) in &chosen {
        let l = Landscape::load(root, name, path);
        let mut t = Table::new(&l, is_train(name));
        t.print_header();
        for &strategy in &strategies {
            let started = std::time::Instant::now();
            let mut outcomes = Vec::new();
            for seed in 0..seeds {
                outcomes.push(one(&l, strategy, seed).await);
            }
            let procs: Vec<f64> = outcomes.iter().map(|o| o.processes as f64).collect();
            let cands: Vec<f64> = outcomes.iter().map(|o| o.candidates as f64).collect();
            let repeats: usize = outcomes.iter().map(|o| o.repeats).sum();
            let row = Row::from_seeds(
                BUDGETS
                    .iter()
                    .enumerate()
                    .map(|(i, b)| (*b, outcomes.iter().map(|o| o.quality[i]).collect()))
                    .collect(),
            );
            t.add(
                &format!("polymorph {}", strategy.as_str()),
                row,
                &format!(
                    "({:.0} candidates, {:.0} processes a run; {repeats} repeats; {:.0} s)",
                    polymorph::measure::median(&cands),
                    polymorph::measure::median(&procs),
                    started.elapsed().as_secs_f64()
                ),
            );
        }
        for (python, names, budgets) in &groups {
            let (drawn, picks) = peers::run(
                python,
                root,
                &l.cache,
                &l.task,
                seeds,
                &with_grid(budgets),
                names,
            );
            for peer in names {
                if let Some(q) = drawn.get(*peer) {
                    let q = q.iter().filter(|(b, _)| budgets.contains(b));
                    t.add(
                        peer,
                        Row::from_seeds(q.map(|(b, v)| (*b, v.clone())).collect()),
                        "",
                    );
                }
            }
            let started = std::time::Instant::now();
            for (name, q) in verify::verified(&l, &picks, budgets).await {
                t.add(
                    &name,
                    Row::from_seeds(q),
                    &format!("({:.0} s)", started.elapsed().as_secs_f64()),
                );
            }
        }
        tables.push(t);
    }
    table::summary(&tables, "polymorph tpe");
}
