//! New hardware, on real hardware: the same 2-D convolution kernel moving between the six GPUs
//! Kernel Tuner recorded it on (`benches/data/kernel-tuner/convolution/`, imported with
//! `polymorph import`; draws from half of each configuration's repeats, truth the mean of the
//! other half). For every ordered pair (source, target):
//! - transferred: the target's true quality (its best time over this one's) of the source's
//!   exhaustive best, or "fails" where that configuration failed on the target;
//! - warm: bench processes a `tpe` run on the target spends until its incumbent's truth is within
//!   95% of the target's best, when the source's best was accepted in the same store first (the
//!   run then starts from it through the warm-start path, re-measured on the target). With
//!   `--searched-sources` the source is tuned first as a user would have tuned it, by a `tpe`
//!   run of as many candidates, and its exhaustive best is then proposed over that run's
//!   incumbent, so what is carried may be a near-tie of it and the source's store holds a
//!   search's measurements;
//! - naive: the same from the task as given, with no neighbour.
//!
//! A run that never gets there within its candidates counts as what it spent, marked `>`.
//! Medians over seeds per pair; the summary gives the pairs where warm costs more than naive and
//! the median ratio warm / naive over pairs.
//!
//! cargo bench --bench transfer [-- SEEDS [TARGETS] [--searched-sources]]   (default 10 seeds;
//! TARGETS: GPUs to move to, comma-separated, for example `A100,A4000,W7800`, the search bench's
//! train half; default all six)
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "search/copy.rs"]
mod copy;
// The random-search expectation the search bench scores with, and a candidate's origin, are
// not used here.
#[allow(dead_code)]
#[path = "search/landscape.rs"]
mod landscape;
#[allow(dead_code)]
#[path = "search/replay.rs"]
mod replay;

use copy::copy_dir;
use landscape::Landscape;
use polymorph::engine::Strategy;
use polymorph::measure::median;
use polymorph::record::RunProposer;
use std::path::Path;

/// Share of the target's best that counts as reaching it.
const REACH: f64 = 0.95;
/// Candidates a run on the target may propose.
const CANDIDATES: usize = 300;

/// Bench processes until the incumbent reached `REACH` of the best, or (never) all spent.
#[derive(Clone, Copy)]
struct Reached {
    processes: usize,
    reached: bool,
}

impl Reached {
    fn show(xs: &[Reached]) -> String {
        let p: Vec<f64> = xs.iter().map(|r| r.processes as f64).collect();
        let never = xs.iter().filter(|r| !r.reached).count();
        let (lo, hi) = (
            p.iter().copied().fold(f64::INFINITY, f64::min),
            p.iter().copied().fold(0.0, f64::max),
        );
        let mark = if never > 0 {
            format!(", {never} never")
        } else {
            String::new()
        };
        format!("{:>5.0} [{lo:.0}-{hi:.0}{mark}]", median(&p))
    }
}

/// Where a tuning run on `l` in `state` (warm or not) reaches `REACH` of the best.
async fn reach(state: &Path, l: &Landscape, seed: u64, warm: bool) -> Reached {
    let opts = replay::options(
        l,
        RunProposer::Search,
        Strategy::Tpe,
        CANDIDATES,
        seed,
        warm,
    );
    let rows = replay::replay(state, l, &opts).await;
    let goal = REACH * l.best;
    let mut spent = 0;
    if l.start >= goal {
        return Reached {
            processes: 0,
            reached: true,
        };
    }
    for r in rows {
        spent += 2 * r.pairs;
        if r.verdict == "accepted" && l.truth.get(&r.key).is_some_and(|t| *t >= goal) {
            return Reached {
                processes: spent,
                reached: true,
            };
        }
    }
    Reached {
        processes: spent,
        reached: false,
    }
}

/// The configuration with the best truth on `l`, as a params key.
fn best_key(l: &Landscape) -> &str {
    l.truth
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(k, _)| k.as_str())
        .unwrap()
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let seeds: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(10);
    let searched = std::env::args().any(|a| a == "--searched-sources");
    let targets: Option<Vec<&str>> = args.get(1).map(|a| a.split(',').collect());
    let is_target = |l: &Landscape| targets.as_ref().is_none_or(|t| t.contains(&gpu(&l.name)));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let gpus: Vec<Landscape> = landscape::all(root)
        .into_iter()
        .filter(|(n, _)| n.starts_with("convolution/"))
        .map(|(n, p)| Landscape::load(root, &n, &p))
        .collect();
    assert!(
        gpus.len() >= 2,
        "benches/data/kernel-tuner/convolution/ holds fewer than two GPUs"
    );
    for g in &gpus {
        println!(
            "{}: the task as given is {:.3} of the best",
            g.name,
            g.start / g.best
        );
    }
    println!(
        "{seeds} seeds, tpe, {CANDIDATES} candidates a run; processes to {REACH} of the target's best: \
         median [range] over seeds"
    );
    let started = std::time::Instant::now();
    let mut naive = Vec::new();
    for t in &gpus {
        let mut r = Vec::new();
        if !is_target(t) {
            naive.push(r);
            continue;
        }
        for seed in 0..seeds {
            let dir = tempfile::tempdir().unwrap();
            r.push(reach(dir.path(), t, seed, false).await);
        }
        naive.push(r);
    }
    println!(
        "{:<24} {:>11} {:>24} {:>24} {:>7}",
        "source -> target", "transferred", "warm", "naive", "ratio"
    );
    let (mut ratios, mut worse, mut refused, mut tuned_sources) = (Vec::new(), 0, 0, 0);
    for s in &gpus {
        // A source carried to no target (the only target is itself) is not tuned.
        if !gpus.iter().any(|t| !std::ptr::eq(s, t) && is_target(t)) {
            continue;
        }
        let pick: serde_json::Value = serde_json::from_str(best_key(s)).unwrap();
        // The source tuned once per seed; each target's warm run starts from a copy of it.
        let mut sources = Vec::new();
        for seed in 0..seeds {
            let dir = tempfile::tempdir().unwrap();
            if searched {
                let opts = replay::options(
                    s,
                    RunProposer::Search,
                    Strategy::Tpe,
                    CANDIDATES,
                    seed,
                    false,
                );
                replay::replay(dir.path(), s, &opts).await;
            }
            let best = replay::propose_one(dir.path(), s, &pick, seed).await;
            // Refused over the incumbent (within noise of it, or it is that one): then the
            // start, or the search's incumbent, is what a warm start carries.
            refused += usize::from(!best.iter().any(|r| r.verdict == "accepted"));
            tuned_sources += 1;
            sources.push(dir);
        }
        for (ti, t) in gpus.iter().enumerate() {
            if std::ptr::eq(s, t) || !is_target(t) {
                continue;
            }
            let transferred = t
                .truth
                .get(best_key(s))
                .map_or("fails".to_string(), |v| format!("{:.3}", v / t.best));
            let mut warm = Vec::new();
            for (seed, tuned) in (0..seeds).zip(&sources) {
                let dir = tempfile::tempdir().unwrap();
                copy_dir(tuned.path(), dir.path());
                warm.push(reach(dir.path(), t, seed, true).await);
            }
            let med =
                |xs: &[Reached]| median(&xs.iter().map(|r| r.processes as f64).collect::<Vec<_>>());
            let (w, n) = (med(&warm), med(&naive[ti]));
            let ratio = w / n.max(1.0);
            worse += usize::from(w > n);
            ratios.push(ratio);
            println!(
                "{:<24} {transferred:>11} {:>24} {:>24} {ratio:>7.2}",
                format!("{} -> {}", gpu(&s.name), gpu(&t.name)),
                Reached::show(&warm),
                Reached::show(&naive[ti]),
            );
        }
    }
    println!(
        "\n{refused} of {} sources (one a GPU and seed, each carried to every target) refused their exhaustive best \
         over {}",
        tuned_sources,
        if searched {
            "their search's incumbent"
        } else {
            "their start"
        }
    );
    println!(
        "{} pairs; warm costs more than naive (medians) in {worse}; median ratio warm/naive {:.2}; {:.0} s",
        ratios.len(),
        median(&ratios),
        started.elapsed().as_secs_f64()
    );
    println!(
        "targets: warm never costs more {}; at most half in the median pair {}",
        if worse == 0 { "met" } else { "MISSED" },
        if median(&ratios) <= 0.5 {
            "met"
        } else {
            "MISSED"
        }
    );
}

fn gpu(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}
