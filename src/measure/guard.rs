//! The per-case guard against a fixed floor: no case may end worse than the floor (the branch's
//! start by default) by more than `case_tolerance`. A case's standing against the floor is its
//! gain over the incumbent in this candidate's own pairs, plus the incumbent's standing against
//! the floor (the loop tracks it per case), so the guard does not move with the incumbent: which
//! family is accepted first no longer decides which can ever be, and accepted steps cannot
//! ratchet a case down by the tolerance each.

use super::metric::{Metric, case_gains, pct_interval};
use super::objective::Floor;
use super::sample::Sample;
use super::stats::{Interval, signed_rank_interval};
use std::collections::BTreeMap;

/// The per-case guard: the case whose estimate, measured against the incumbent in `pairs` and
/// moved by `offsets` (each case's log gain of the incumbent over the floor; none: the
/// incumbent is the floor), ends furthest below the floor beyond the tolerance.
pub fn below_floor(
    metric: &Metric,
    confidence: f64,
    offsets: &BTreeMap<String, f64>,
    pairs: &[(Sample, Sample)],
) -> Option<(String, Interval)> {
    let limit = (1.0 - metric.case_tolerance).ln();
    let first = &pairs.first()?.0;
    let mut worst: Option<(String, Interval)> = None;
    for case in first.cases.keys() {
        let shift = offsets.get(case).copied().unwrap_or(0.0);
        let diffs: Vec<f64> = case_gains(metric.direction, pairs, case)
            .map(|g| g + shift)
            .collect();
        let Some(i) = signed_rank_interval(&diffs, confidence) else {
            continue;
        };
        if i.estimate < limit && worst.as_ref().is_none_or(|(_, w)| i.estimate < w.estimate) {
            worst = Some((case.clone(), i));
        }
    }
    worst
}

/// The reason a candidate is refused by the per-case guard.
pub fn floor_reason(metric: &Metric, floor: Floor, case: &str, i: &Interval) -> String {
    let against = match floor {
        Floor::Incumbent => "regresses".to_string(),
        Floor::Start => "would end below the start".to_string(),
        Floor::HandTuned => "would end below the hand-tuned baseline".to_string(),
    };
    format!(
        "case {case} {against}: {}, beyond the {:.0}% tolerance",
        pct_interval(i),
        metric.case_tolerance * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric() -> Metric {
        crate::measure::metric::test_metric()
    }

    /// Pairs in which case `a` moves by `ra` and case `b` by `rb` against the incumbent.
    fn pairs(ra: f64, rb: f64) -> Vec<(Sample, Sample)> {
        let s = |a: f64, b: f64| Sample {
            cases: BTreeMap::from([("a".to_string(), a), ("b".to_string(), b)]),
            limit: None,
            state: None,
        };
        (0..8)
            .map(|i| {
                let w = 1.0 + 0.002 * (i % 3) as f64;
                (s(100.0, 100.0), s(100.0 * ra * w, 100.0 * rb * w))
            })
            .collect()
    }

    #[test]
    fn a_case_is_judged_against_the_floor_not_the_incumbent() {
        let m = metric();
        let trade = pairs(0.7, 1.6);
        // Against the incumbent, case a's 30% loss is refused.
        let none = BTreeMap::new();
        let (case, _) = below_floor(&m, 0.95, &none, &trade).unwrap();
        assert_eq!(case, "a");
        // The incumbent is 2x the start on case a: 0.7 of it is still 1.4x the start.
        let ahead = BTreeMap::from([("a".to_string(), 2f64.ln()), ("b".to_string(), 0.0)]);
        assert!(below_floor(&m, 0.95, &ahead, &trade).is_none());
        // A ten-step chain of -4% steps on case a, each within the tolerance against its
        // incumbent, is stopped once the case would end more than 5% below the floor.
        let step = pairs(0.96, 1.3);
        let mut standing = BTreeMap::from([("a".to_string(), 0.0), ("b".to_string(), 0.0)]);
        let mut accepted = 0;
        for _ in 0..10 {
            if below_floor(&m, 0.95, &standing, &step).is_some() {
                break;
            }
            accepted += 1;
            *standing.get_mut("a").unwrap() += 0.96f64.ln();
            *standing.get_mut("b").unwrap() += 1.3f64.ln();
        }
        assert_eq!(accepted, 1, "{standing:?}");
        assert!(standing["a"] >= (1.0f64 - m.case_tolerance).ln());
        let (case, i) = below_floor(&m, 0.95, &standing, &step).unwrap();
        assert!(floor_reason(&m, Floor::Start, &case, &i).contains("would end below the start"));
    }
}
