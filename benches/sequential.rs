//! The judge's error rates, simulated: the real `Judge` fed pair by pair with log-normal noise
//! and process-level slowdowns like this VM's, at a true gain of zero, exactly at the
//! threshold (`min_gain` = 2%), and at +5% and +10%. Acceptance at zero and at the threshold
//! is false acceptance and must stay within (1 - confidence) / 2 = 2.5%; at +5% it is power.
//! For comparison, the rule the judge used before (accept at any pair from 6 to 20 when the
//! 95% interval clears the threshold) is simulated on the same draws' settings.
//!
//! Then whole runs: 40 candidates, 37 with no gain and three with +5%, +10% and +20%, with noise
//! that drifts over the run (AR(1)) and candidates noisier than the incumbent, judged with one
//! series per candidate and with the confirmation series the engine runs: the false
//! acceptance per candidate and per run side by side, and the power on the real gains.
//!
//! cargo bench --bench sequential [-- SIMS [RUNS]]   (default 20000 per cell, 1000 runs)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use polymorph::measure::per_run::{RunNoise, RunShape, simulate_runs};
use polymorph::measure::power::{Noise, simulate};
use polymorph::measure::{Direction, JudgeSettings, Metric, signed_rank_interval};
use rand::SeedableRng;

/// Accepting whenever the fixed-level interval clears the threshold, at every pair.
fn fixed_level(true_gain: f64, noise: Noise, sims: usize, seed: u64) -> f64 {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let threshold = 1.02f64.ln();
    let mut accepted = 0;
    for _ in 0..sims {
        let mut gains = Vec::new();
        for n in 1..=20 {
            let (a, b) = (noise.draw(&mut rng), noise.draw(&mut rng));
            gains.push(true_gain + b - a);
            if n < 6 {
                continue;
            }
            let i = signed_rank_interval(&gains, 0.95).unwrap();
            if i.low >= threshold {
                accepted += 1;
                break;
            }
            if i.high < threshold {
                break;
            }
        }
    }
    accepted as f64 / sims as f64
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
        plausible_factor: 10.0,
        limit: None,
        bound: None,
        weights: Default::default(),
    };
    let settings = JudgeSettings {
        screen_pairs: 2,
        min_pairs: 6,
        max_pairs: 20,
        confidence: 0.95,
        floor: polymorph::measure::objective::Floor::Start,
    };
    println!(
        "judge: min_pairs 6, max_pairs 20, confidence 0.95, min_gain 2%; {sims} simulated candidates per cell"
    );
    println!(
        "{:<34} {:>10} {:>10} {:>10} {:>10}",
        "noise per bench process", "true gain", "accepted", "mean pairs", "old rule"
    );
    for (label, noise) in [
        (
            "sd 3%, 10% of processes 10% slow",
            Noise {
                sd: 0.03,
                slow_p: 0.1,
                slow: 0.1,
            },
        ),
        (
            "sd 5%",
            Noise {
                sd: 0.05,
                slow_p: 0.0,
                slow: 0.0,
            },
        ),
        (
            "sd 1% (a quiet GPU)",
            Noise {
                sd: 0.01,
                slow_p: 0.0,
                slow: 0.0,
            },
        ),
    ] {
        for (k, gain) in [0.0, 0.02, 0.05, 0.10].into_iter().enumerate() {
            let g = (1.0f64 + gain).ln();
            let seed = 1000 + k as u64;
            let new = simulate(&metric, &settings, g, noise, sims, seed);
            let old = fixed_level(g, noise, sims, seed);
            println!(
                "{label:<34} {:>9.0}% {:>9.2}% {:>10.1} {:>9.2}%",
                gain * 100.0,
                new.accepted * 100.0,
                new.mean_pairs,
                old * 100.0
            );
        }
    }
    whole_runs(&metric, &settings, runs);
}

/// Per-candidate and per-run false acceptance, and power, over whole simulated runs.
fn whole_runs(metric: &Metric, settings: &JudgeSettings, runs: usize) {
    let shape = RunShape {
        candidates: 40,
        real_gains: &[1.05f64.ln(), 1.10f64.ln(), 1.20f64.ln()],
    };
    println!();
    println!(
        "whole runs: 40 candidates (37 with no gain, three with +5%, +10%, +20%), {runs} runs a row"
    );
    println!(
        "{:<46} {:>8} {:>12} {:>9} {:>7} {:>6}",
        "noise (incumbent / candidate, drift)", "series", "per cand.", "per run", "power", "pairs"
    );
    let plain = |sd: f64| Noise {
        sd,
        slow_p: 0.0,
        slow: 0.0,
    };
    for (label, noise) in [
        (
            "3% / 3%, no drift",
            RunNoise {
                incumbent: plain(0.03),
                candidate: plain(0.03),
                drift_sd: 0.0,
                rho: 0.0,
            },
        ),
        (
            "5% / 5%, no drift",
            RunNoise {
                incumbent: plain(0.05),
                candidate: plain(0.05),
                drift_sd: 0.0,
                rho: 0.0,
            },
        ),
        (
            "10% / 10%, no drift",
            RunNoise {
                incumbent: plain(0.10),
                candidate: plain(0.10),
                drift_sd: 0.0,
                rho: 0.0,
            },
        ),
        (
            "3% / 6%, drift sd 3% AR(1) rho 0.9",
            RunNoise {
                incumbent: plain(0.03),
                candidate: plain(0.06),
                drift_sd: 0.03,
                rho: 0.9,
            },
        ),
    ] {
        for confirm in [false, true] {
            let r = simulate_runs(metric, settings, confirm, &shape, noise, runs, 7);
            println!(
                "{label:<46} {:>8} {:>11.3}% {:>8.1}% {:>6.0}% {:>6.1}",
                if confirm { "two" } else { "one" },
                r.per_candidate * 100.0,
                r.per_run * 100.0,
                r.power * 100.0,
                r.mean_pairs
            );
        }
    }
}
