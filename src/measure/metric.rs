//! What a task measures and how a result is judged: the metric and its direction, the judge's
//! settings, the machine's bound on the work, and gains as paired log-ratios (positive = better
//! in the metric's direction).

use super::objective::{Floor, Weights};
use super::sample::Sample;
use super::stats::Interval;
use super::text_enum::text_enum;
use std::collections::BTreeMap;

text_enum! {
    /// Which way the metric improves.
    pub enum Direction {
        Maximize = "maximize",
        Minimize = "minimize",
    }
}

/// The task's metric as `[metric]` declares it.
#[derive(Debug, Clone)]
pub struct Metric {
    /// The `"metric"` name the bench prints.
    pub name: String,
    pub direction: Direction,
    /// Smallest gain worth accepting, as a fraction (0.02 = 2%).
    pub min_gain: f64,
    /// How much worse than the floor (`JudgeSettings::floor`) any one case may end.
    pub case_tolerance: f64,
    /// A gain over this factor (against the incumbent and the hand-tuned baseline) needs a human.
    pub plausible_factor: f64,
    /// The metric line the bench prints with the hardware's limit in the same unit (e.g.
    /// `copy_gbps`): a candidate measured above it needs a human, and `check` shows each figure
    /// as a fraction of it.
    pub limit: Option<String>,
    /// The machine's bound on the task's work as the task declares it (`[metric] bound`): a
    /// case measured past it needs a human, and `check` shows each figure as a fraction of it.
    pub bound: Option<Bound>,
    /// Each case's weight in the objective, from the workload's `"weights"` (empty: equal).
    pub weights: Weights,
}

/// How many pairs the judge may look at, and at which confidence it decides.
#[derive(Debug, Clone)]
pub struct JudgeSettings {
    /// After this many pairs (fewer than `min_pairs`; 0 = never), a candidate that no pair showed
    /// `min_gain` better, or that lost beyond `case_tolerance` on one case in every pair, is
    /// rejected without the rest: screening only ever rejects early, never accepts.
    pub screen_pairs: usize,
    pub min_pairs: usize,
    pub max_pairs: usize,
    pub confidence: f64,
    /// What no case may end worse than by more than `case_tolerance`.
    pub floor: Floor,
    /// The decision rule.
    pub rule: Rule,
}

/// The judge's decision rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rule {
    /// At a look, the signed-rank bound and the bound on the mean gain both clear the
    /// threshold, with an early look at two pairs when the spread is known (since 2026-12-05).
    #[default]
    Mean,
    /// The signed-rank bound alone, with no early look: the rule before 2026-12-05, which
    /// bounds the pseudo-median only. Kept so that the `sequential` bench shows both.
    PseudoMedian,
}

/// The machine's bound on a task's work, as the task declares it (`[metric] bound`): the most
/// any code can reach on this machine (peak FLOP/s or bytes/s for a metric to maximize, the
/// least time the work can take for one to minimize). A result past it is no speed-up but a
/// lie or a broken bench, at any step and whatever the gain over the incumbent. One bound for
/// every case, or a bound per case (a case left out is unbounded).
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    Every(f64),
    Cases(BTreeMap<String, f64>),
}

impl Bound {
    /// The bound of `case`, if it has one.
    pub fn of(&self, case: &str) -> Option<f64> {
        match self {
            Bound::Every(b) => Some(*b),
            Bound::Cases(m) => m.get(case).copied(),
        }
    }

    /// Each value as a fraction of its bound: 1.0 is the bound reached, above it is past it.
    pub fn fraction(direction: Direction, value: f64, bound: f64) -> f64 {
        match direction {
            Direction::Maximize => value / bound,
            Direction::Minimize => bound / value,
        }
    }

    /// The first case of `sample` past its bound, as (case, value, bound).
    pub fn past(&self, direction: Direction, sample: &Sample) -> Option<(String, f64, f64)> {
        sample.cases.iter().find_map(|(case, &v)| {
            let b = self.of(case)?;
            (Self::fraction(direction, v, b) > 1.0).then(|| (case.clone(), v, b))
        })
    }
}

/// Log-ratio gain of `candidate` over `incumbent`, positive when the candidate is better.
pub fn log_gain(direction: Direction, incumbent: f64, candidate: f64) -> f64 {
    match direction {
        Direction::Maximize => (candidate / incumbent).ln(),
        Direction::Minimize => (incumbent / candidate).ln(),
    }
}

/// Each pair's log-ratio gain on one case (pairs that lack the case are skipped); `pairs` holds
/// (incumbent, candidate) samples.
pub fn case_gains<'a>(
    direction: Direction,
    pairs: &'a [(Sample, Sample)],
    case: &'a str,
) -> impl Iterator<Item = f64> + 'a {
    pairs.iter().filter_map(move |(a, b)| {
        Some(log_gain(
            direction,
            *a.cases.get(case)?,
            *b.cases.get(case)?,
        ))
    })
}

/// Gain as a percentage with sign, from a log-ratio.
pub fn pct(log_ratio: f64) -> String {
    format!("{:+.1}%", (log_ratio.exp() - 1.0) * 100.0)
}

/// `+9.5% [+4.1, +15.2]`: an interval of log-ratios as percentages.
pub fn pct_interval(i: &Interval) -> String {
    format!(
        "{} [{}, {}]",
        pct(i.estimate),
        pct(i.low).trim_end_matches('%'),
        pct(i.high).trim_end_matches('%')
    )
}

/// The metric the measure layer's tests judge: maximised, 2% asked for, 5% tolerance.
#[cfg(test)]
pub(crate) fn test_metric() -> Metric {
    Metric {
        name: "x".into(),
        direction: Direction::Maximize,
        min_gain: 0.02,
        case_tolerance: 0.05,
        plausible_factor: 10.0,
        limit: None,
        bound: None,
        weights: Default::default(),
    }
}

#[cfg(test)]
mod bound_tests {
    use super::*;

    fn sample(cases: &[(&str, f64)]) -> Sample {
        Sample {
            cases: cases.iter().map(|(c, v)| (c.to_string(), *v)).collect(),
            limit: None,
            state: None,
        }
    }

    #[test]
    fn a_case_past_its_bound_is_found_in_either_direction() {
        let every = Bound::Every(100.0);
        let s = sample(&[("a", 90.0), ("b", 120.0)]);
        assert_eq!(
            every.past(Direction::Maximize, &s),
            Some(("b".into(), 120.0, 100.0))
        );
        // Minimized (a time): below the least time the work can take is past the bound.
        assert_eq!(
            every.past(Direction::Minimize, &s),
            Some(("a".into(), 90.0, 100.0))
        );
        let per_case = Bound::Cases(BTreeMap::from([("a".to_string(), 95.0)]));
        assert_eq!(
            per_case.past(Direction::Maximize, &s),
            None,
            "b is unbounded"
        );
        assert_eq!(per_case.of("b"), None);
        assert!((Bound::fraction(Direction::Minimize, 200.0, 100.0) - 0.5).abs() < 1e-12);
    }
}
