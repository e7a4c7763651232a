//! The machine's bound on a task's work, as the task declares it (`[metric] bound`): the most
//! any code can reach on this machine (peak FLOP/s or bytes/s for a metric to maximize, the
//! least time the work can take for one to minimize). A result past it is no speed-up but a
//! lie or a broken bench, at any step and whatever the gain over the incumbent.

use super::metric::Direction;
use super::sample::Sample;
use std::collections::BTreeMap;

/// One bound for every case, or a bound per case (a case left out is unbounded).
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

#[cfg(test)]
mod tests {
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
