//! What a candidate is judged on. One objective per workload: the weighted mean of the per-case
//! log gains (a workload may weight its cases by their share of traffic or time; equal weights
//! when it does not), which is the log of a weighted geometric mean of the figures. And the
//! floor no case may end below by more than `case_tolerance` (`guard.rs` applies it).

use super::sample::Sample;
use super::stats::median;
use super::text_enum::text_enum;
use std::collections::BTreeMap;

/// Each case's weight in the objective; empty: every case alike.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Weights(BTreeMap<String, f64>);

impl Weights {
    /// Weights as a workload gives them: each a positive, finite number.
    pub fn new(weights: BTreeMap<String, f64>) -> Result<Self, String> {
        if let Some((case, w)) = weights.iter().find(|(_, w)| !(w.is_finite() && **w > 0.0)) {
            return Err(format!(
                "case {case} has weight {w}: a weight must be a positive number"
            ));
        }
        Ok(Weights(weights))
    }

    /// Each weighted case's weight, as the workload gives it.
    pub fn as_map(&self) -> &BTreeMap<String, f64> {
        &self.0
    }

    /// A case's weight: its own, or 1 for every case when the workload gives none.
    fn weight(&self, case: &str) -> f64 {
        if self.0.is_empty() {
            1.0
        } else {
            self.0.get(case).copied().unwrap_or(0.0)
        }
    }

    /// The sample's score: the weighted geometric mean of its cases. On the judge's path for
    /// every pair it looks at, so it allocates nothing.
    pub fn score(&self, s: &Sample) -> f64 {
        let total: f64 = s.cases.keys().map(|c| self.weight(c)).sum();
        s.cases
            .iter()
            .map(|(c, v)| {
                let share = if total > 0.0 {
                    self.weight(c) / total
                } else {
                    0.0
                };
                share * v.ln()
            })
            .sum::<f64>()
            .exp()
    }

    /// The median of the samples' scores.
    pub fn median_score(&self, samples: &[Sample]) -> f64 {
        median(&samples.iter().map(|s| self.score(s)).collect::<Vec<_>>())
    }

    /// Why a sample cannot be scored: a case it has that the weights do not name, or a weighted
    /// case it lacks.
    pub fn check(&self, s: &Sample) -> Result<(), String> {
        if self.0.is_empty() {
            return Ok(());
        }
        if let Some(case) = s.cases.keys().find(|c| !self.0.contains_key(*c)) {
            return Err(format!(
                "case {case} has no weight in the workload's \"weights\""
            ));
        }
        if let Some(case) = self.0.keys().find(|c| !s.cases.contains_key(*c)) {
            return Err(format!(
                "the workload weights case {case}, which the bench did not print"
            ));
        }
        Ok(())
    }
}

/// The floor's offsets when the incumbent is the floor: every case stands at it.
pub static AT_INCUMBENT: BTreeMap<String, f64> = BTreeMap::new();

text_enum! {
    /// What no case may end worse than, by more than `case_tolerance` (`[judge] floor`).
    pub enum Floor {
        /// The branch's start: the task as given.
        Start = "start",
        /// The hand-tuned (or production) baseline.
        HandTuned = "hand_tuned",
        /// The incumbent of the moment: the strictest, and path-dependent.
        Incumbent = "incumbent",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(a: f64, b: f64) -> Sample {
        Sample {
            cases: BTreeMap::from([("a".to_string(), a), ("b".to_string(), b)]),
            limit: None,
            state: None,
        }
    }

    #[test]
    fn the_score_is_the_weighted_geometric_mean_and_equal_weights_are_the_default() {
        let s = sample(2.0, 8.0);
        assert!((Weights::default().score(&s) - 4.0).abs() < 1e-12);
        let w = Weights::new(BTreeMap::from([("a".into(), 3.0), ("b".into(), 1.0)])).unwrap();
        // 2^0.75 * 8^0.25 = 2^1.5
        assert!((w.score(&s) - 2f64.powf(1.5)).abs() < 1e-12);
        assert!(w.check(&s).is_ok());
        let only_a = Weights::new(BTreeMap::from([("a".into(), 1.0)])).unwrap();
        assert!(
            only_a
                .check(&s)
                .unwrap_err()
                .contains("case b has no weight")
        );
        assert!(Weights::new(BTreeMap::from([("a".into(), 0.0)])).is_err());
    }
}
