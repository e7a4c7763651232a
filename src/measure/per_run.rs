//! Whole runs simulated, for the error rate a user lives with: a run of candidates, most with no
//! real gain and a few with one, each judged by the real judge pair by pair, with noise that
//! drifts over the run (an AR(1) machine state shared by both sides of a pair's processes) and a
//! candidate whose own noise may differ from the incumbent's. With `confirm`, an accepted
//! candidate is judged again in a fresh series and counts only when both accept, as the engine
//! does (`engine::evaluate::confirm`). The `sequential` bench prints per-candidate and per-run
//! rates side by side.

use super::objective::AT_INCUMBENT;
use super::power::Noise;
use super::{Decision, Judge, JudgeSettings, Metric, Sample, Verdict};
use rand::SeedableRng;
use std::collections::BTreeMap;

/// The noise of a run: each side's own per-process noise, and a drift shared by both.
#[derive(Debug, Clone, Copy)]
pub struct RunNoise {
    pub incumbent: Noise,
    pub candidate: Noise,
    /// The stationary sd of the machine's drift (log), and its correlation from one process to
    /// the next.
    pub drift_sd: f64,
    pub rho: f64,
}

/// What the judge did over many simulated runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunRates {
    /// Null candidates accepted, of all null candidates.
    pub per_candidate: f64,
    /// Runs that accepted at least one null candidate.
    pub per_run: f64,
    /// Candidates with a real gain accepted, of those.
    pub power: f64,
    /// Pairs per candidate, on average.
    pub mean_pairs: f64,
}

/// The run's shape: how many candidates, and the true gains (log-ratios) of the first few; the
/// others have none.
pub struct RunShape<'a> {
    pub candidates: usize,
    pub real_gains: &'a [f64],
}

struct Drift {
    state: f64,
    noise: RunNoise,
}

impl Drift {
    fn step(&mut self, rng: &mut impl rand::Rng) -> f64 {
        let innovation = Noise {
            sd: self.noise.drift_sd * (1.0 - self.noise.rho * self.noise.rho).sqrt(),
            slow_p: 0.0,
            slow: 0.0,
        };
        self.state = self.noise.rho * self.state + innovation.draw(rng);
        self.state
    }
}

fn sample(v: f64) -> Sample {
    Sample {
        cases: BTreeMap::from([("c".to_string(), v)]),
        limit: None,
        state: None,
    }
}

/// One series of pairs until the judge decides: whether it accepted, and its pairs.
fn series(
    judge: &Judge<'_>,
    gain: f64,
    drift: &mut Drift,
    rng: &mut impl rand::Rng,
) -> (bool, usize) {
    let mut pairs = Vec::new();
    loop {
        let inc = 100.0 * (drift.step(rng) + drift.noise.incumbent.draw(rng)).exp();
        let cand = 100.0 * (gain + drift.step(rng) + drift.noise.candidate.draw(rng)).exp();
        pairs.push((sample(inc), sample(cand)));
        match judge.decide(&pairs) {
            Decision::Continue => continue,
            Decision::Invalid { .. } => return (false, pairs.len()),
            Decision::Done { verdict, .. } => return (verdict == Verdict::Accepted, pairs.len()),
        }
    }
}

/// Simulates `runs` runs of `shape` with a seeded generator.
pub fn simulate_runs(
    metric: &Metric,
    settings: &JudgeSettings,
    confirm: bool,
    shape: &RunShape<'_>,
    noise: RunNoise,
    runs: usize,
    seed: u64,
) -> RunRates {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let judge = Judge {
        metric,
        settings,
        reference: None,
        spread: None,
        floor: &AT_INCUMBENT,
    };
    let (mut null_accepted, mut nulls, mut bad_runs) = (0usize, 0usize, 0usize);
    let (mut real_accepted, mut reals, mut pairs) = (0usize, 0usize, 0usize);
    for _ in 0..runs {
        let mut drift = Drift { state: 0.0, noise };
        let mut bad = false;
        for k in 0..shape.candidates {
            let gain = shape.real_gains.get(k).copied().unwrap_or(0.0);
            let (mut accepted, n) = series(&judge, gain, &mut drift, &mut rng);
            pairs += n;
            if accepted && confirm {
                let (again, m) = series(&judge, gain, &mut drift, &mut rng);
                accepted = again;
                pairs += m;
            }
            if k < shape.real_gains.len() {
                reals += 1;
                real_accepted += usize::from(accepted);
            } else {
                nulls += 1;
                null_accepted += usize::from(accepted);
                bad |= accepted;
            }
        }
        bad_runs += usize::from(bad);
    }
    let rate = |a: usize, n: usize| if n == 0 { 0.0 } else { a as f64 / n as f64 };
    RunRates {
        per_candidate: rate(null_accepted, nulls),
        per_run: rate(bad_runs, runs),
        power: rate(real_accepted, reals),
        mean_pairs: rate(pairs, runs * shape.candidates),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_confirmation_series_keeps_runs_of_nulls_within_their_bound() {
        let metric = crate::measure::metric::test_metric();
        let settings = JudgeSettings {
            screen_pairs: 0,
            min_pairs: 6,
            max_pairs: 20,
            confidence: 0.95,
            floor: crate::measure::objective::Floor::Incumbent,
        };
        let quiet = Noise {
            sd: 0.05,
            slow_p: 0.0,
            slow: 0.0,
        };
        let noise = RunNoise {
            incumbent: quiet,
            candidate: quiet,
            drift_sd: 0.0,
            rho: 0.0,
        };
        // Candidates exactly at the threshold: the judge's worst case, 2.5% a series.
        let at = RunShape {
            candidates: 40,
            real_gains: &[1.02f64.ln(); 40],
        };
        let one = simulate_runs(&metric, &settings, false, &at, noise, 60, 1);
        let two = simulate_runs(&metric, &settings, true, &at, noise, 60, 1);
        assert!(
            one.power > 0.005 && two.power < one.power / 4.0,
            "{one:?} {two:?}"
        );
        // Nulls: a run of 40 with both series stays under 40 * 2.5%^2 = 2.5%.
        let nulls = RunShape {
            candidates: 40,
            real_gains: &[],
        };
        let runs = simulate_runs(&metric, &settings, true, &nulls, noise, 150, 2);
        assert!(runs.per_run <= 0.025, "{runs:?}");
    }
}
