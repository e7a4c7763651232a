//! The judge's error rates and costs, simulated: the real `Judge` fed pair by pair, with the
//! rule it uses now (`Rule::Mean`: the signed-rank and mean bounds at each look, an early look
//! when the spread is known) beside the rule before 2026-12-05 (`Rule::PseudoMedian`).
//!
//! 1. One candidate at a time, same-shaped noise on both sides: acceptance at a true gain of 0,
//!    at the threshold (`min_gain` = 2%), at +5% and +10%.
//! 2. Whole runs of 40 candidates, every one exactly at the threshold in its *mean* gain (the
//!    worst case of the per-run bound), with the confirmation series, for noise shapes where the
//!    candidate's noise differs from the incumbent's: skewed, bimodal, heavy-tailed, drifting.
//! 3. What a clear gain costs: bench processes per acceptance (both series, both sides) against
//!    the gain in spreads of a pair's gain, once the spread is known.
//! 4. Whole runs with 37 nulls and real gains of +5%, +10%, +20%: power and pairs.
//!
//! cargo bench --bench sequential [-- SIMS [RUNS]]   (default 20000 per cell, 1000 runs)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use polymorph::measure::per_run::{RunNoise, RunShape, cost_of_acceptance, simulate_runs};
use polymorph::measure::power::{Noise, Shape, simulate};
use polymorph::measure::{Direction, JudgeSettings, Metric, Rule};

fn settings(rule: Rule) -> JudgeSettings {
    JudgeSettings {
        screen_pairs: 2,
        min_pairs: 6,
        max_pairs: 20,
        confidence: 0.95,
        floor: polymorph::measure::objective::Floor::Start,
        rule,
    }
}

/// Noise with a slow mode: `slow_p` of the processes `slow` (log) slower.
fn bimodal(sd: f64, slow_p: f64, slow: f64) -> Noise {
    Noise {
        slow_p,
        slow,
        ..Noise::normal(sd)
    }
}

fn shaped(sd: f64, shape: Shape) -> Noise {
    Noise {
        shape,
        ..Noise::normal(sd)
    }
}

/// The noise shapes of the whole-run table: (label, noise).
fn shapes() -> Vec<(&'static str, RunNoise)> {
    let n = Noise::normal;
    vec![
        ("normal 3% / normal 3%", RunNoise::still(n(0.03), n(0.03))),
        (
            "3%, 10% of processes 10% slow, both sides",
            RunNoise::still(bimodal(0.03, 0.1, 0.1), bimodal(0.03, 0.1, 0.1)),
        ),
        (
            "normal 1% / skewed 5% (exponential)",
            RunNoise::still(n(0.01), shaped(0.05, Shape::Skewed)),
        ),
        (
            "normal 1% / heavy 3% (t, 3 df)",
            RunNoise::still(n(0.01), shaped(0.03, Shape::Heavy)),
        ),
        (
            "normal 1% / 1%, 20% of processes 35% slow",
            RunNoise::still(n(0.01), bimodal(0.01, 0.2, 0.35)),
        ),
        (
            "normal 1% / 1%, 10% of processes 30% slow",
            RunNoise::still(n(0.01), bimodal(0.01, 0.1, 0.30)),
        ),
        (
            "normal 1% / 1%, 5% of processes 30% slow",
            RunNoise::still(n(0.01), bimodal(0.01, 0.05, 0.30)),
        ),
        (
            "10% of processes 20% slow / normal 3%",
            RunNoise::still(bimodal(0.03, 0.1, 0.2), n(0.03)),
        ),
        (
            "3% / 6%, drift sd 3% AR(1) rho 0.9",
            RunNoise {
                incumbent: n(0.03),
                candidate: n(0.06),
                drift_sd: 0.03,
                rho: 0.9,
            },
        ),
    ]
}

fn main() {
    let numbers: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sims = numbers.first().copied().unwrap_or(20_000);
    let runs = numbers.get(1).copied().unwrap_or(1_000);
    let metric = Metric {
        name: "x".into(),
        direction: Direction::Maximize,
        min_gain: 0.02,
        case_tolerance: 0.5,
        plausible_factor: 1e6,
        limit: None,
        bound: None,
        weights: Default::default(),
    };
    let (new, old) = (settings(Rule::Mean), settings(Rule::PseudoMedian));
    println!(
        "judge: screen_pairs 2, min_pairs 6, max_pairs 20, confidence 0.95, min_gain 2%; now (mean) and before 2026-12-05 (pseudo-median)"
    );
    single(&metric, (&new, &old), sims);
    at_the_threshold(&metric, (&new, &old), runs);
    cost(&metric, (&new, &old), sims / 10);
    with_real_gains(&metric, (&new, &old), runs);
}

/// 1: one candidate, same-shaped noise, no spread known.
fn single(metric: &Metric, (new, old): (&JudgeSettings, &JudgeSettings), sims: usize) {
    println!("\n1. one candidate, one series, {sims} a cell");
    println!(
        "{:<36} {:>9} {:>10} {:>10} {:>10}",
        "noise per bench process", "true gain", "now", "pairs", "before"
    );
    for (label, noise) in [
        ("sd 3%, 10% of processes 10% slow", bimodal(0.03, 0.1, 0.1)),
        ("sd 5%", Noise::normal(0.05)),
        ("sd 1% (a quiet GPU)", Noise::normal(0.01)),
    ] {
        for (k, gain) in [0.0, 0.02, 0.05, 0.10].into_iter().enumerate() {
            let g = (1.0f64 + gain).ln();
            let seed = 1000 + k as u64;
            let a = simulate(metric, new, g, noise, sims, seed);
            let b = simulate(metric, old, g, noise, sims, seed);
            println!(
                "{label:<36} {:>8.0}% {:>9.2}% {:>10.1} {:>9.2}%",
                gain * 100.0,
                a.accepted * 100.0,
                a.mean_pairs,
                b.accepted * 100.0
            );
        }
    }
}

/// 2: whole runs of 40 candidates at the threshold, both series.
fn at_the_threshold(metric: &Metric, (new, old): (&JudgeSettings, &JudgeSettings), runs: usize) {
    let at = RunShape {
        candidates: 40,
        real_gains: &[],
        null_gain: 1.02f64.ln(),
    };
    println!(
        "\n2. whole runs of 40 candidates, each exactly at the threshold in its mean gain, with the confirmation series; {runs} runs a row"
    );
    println!(
        "{:<44} {:>11} {:>9} {:>11} {:>9} {:>6}",
        "noise (incumbent / candidate)", "now: cand.", "run", "before: cand.", "run", "pairs"
    );
    for (label, noise) in shapes() {
        let a = simulate_runs(metric, new, true, &at, noise, runs, 7);
        let b = simulate_runs(metric, old, true, &at, noise, runs, 7);
        println!(
            "{label:<44} {:>10.3}% {:>8.1}% {:>12.3}% {:>8.1}% {:>6.1}",
            a.per_candidate * 100.0,
            a.per_run * 100.0,
            b.per_candidate * 100.0,
            b.per_run * 100.0,
            a.mean_pairs
        );
    }
}

/// 3: bench processes per acceptance against the gain in spreads.
fn cost(metric: &Metric, (new, old): (&JudgeSettings, &JudgeSettings), sims: usize) {
    let noise = RunNoise::still(Noise::normal(0.03), Noise::normal(0.03));
    let spread = 0.03 * 2f64.sqrt();
    println!(
        "\n3. processes per acceptance (both series, both sides), normal 3% a process (a pair's gain: sd {:.2}%), spread known; {sims} a row",
        spread * 100.0
    );
    println!(
        "{:>14} {:>8} {:>11} {:>10} {:>12} {:>10}",
        "gain / spread", "gain", "now: acc.", "processes", "before: acc.", "processes"
    );
    for k in [1.0, 2.0, 5.0, 10.0, 12.0, 15.0, 20.0, 50.0] {
        let gain = k * spread;
        let (a, pa) = cost_of_acceptance(metric, new, noise, gain, sims, 11);
        let (b, pb) = cost_of_acceptance(metric, old, noise, gain, sims, 11);
        println!(
            "{k:>14.0} {:>7.1}% {:>10.1}% {pa:>10.1} {:>11.1}% {pb:>10.1}",
            (gain.exp() - 1.0) * 100.0,
            a * 100.0,
            b * 100.0
        );
    }
}

/// 4: whole runs with real gains among the nulls.
fn with_real_gains(metric: &Metric, (new, old): (&JudgeSettings, &JudgeSettings), runs: usize) {
    let shape = RunShape {
        candidates: 40,
        real_gains: &[1.05f64.ln(), 1.10f64.ln(), 1.20f64.ln()],
        null_gain: 0.0,
    };
    println!(
        "\n4. whole runs: 40 candidates (37 with no gain, three with +5%, +10%, +20%), both series, {runs} runs a row"
    );
    println!(
        "{:<40} {:>7} {:>10} {:>8} {:>7} {:>6}",
        "noise (incumbent / candidate, drift)", "rule", "per cand.", "per run", "power", "pairs"
    );
    for (label, noise) in [
        (
            "3% / 3%, no drift",
            RunNoise::still(Noise::normal(0.03), Noise::normal(0.03)),
        ),
        (
            "10% / 10%, no drift",
            RunNoise::still(Noise::normal(0.10), Noise::normal(0.10)),
        ),
        (
            "3% / 6%, drift sd 3% AR(1) rho 0.9",
            RunNoise {
                incumbent: Noise::normal(0.03),
                candidate: Noise::normal(0.06),
                drift_sd: 0.03,
                rho: 0.9,
            },
        ),
    ] {
        for (rule, s) in [("now", new), ("before", old)] {
            let r = simulate_runs(metric, s, true, &shape, noise, runs, 7);
            println!(
                "{label:<40} {rule:>7} {:>9.3}% {:>7.1}% {:>6.0}% {:>6.1}",
                r.per_candidate * 100.0,
                r.per_run * 100.0,
                r.power * 100.0,
                r.mean_pairs
            );
        }
    }
}
