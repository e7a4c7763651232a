//! Screening: after a few pairs, a candidate with no sign of the gain the judge asks for is
//! dropped without the rest of its pairs. It only ever rejects early; acceptance still needs the
//! full sequential judgement, so screening cannot raise the false-acceptance rate.

use super::metric::{Metric, case_gains, pct};
use super::sample::Sample;

/// Why screening drops a candidate after `pairs`: no pair showed the gain `min_gain` asks for,
/// or one case lost beyond `case_tolerance` in every pair (the per-case guard would refuse it).
pub fn screened_out(metric: &Metric, pairs: &[(Sample, Sample)], gains: &[f64]) -> Option<String> {
    let n = pairs.len();
    let threshold = (1.0 + metric.min_gain).ln();
    let best = gains.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if best < threshold {
        let what = if best < 0.0 { "slower" } else { "no gain" };
        return Some(format!(
            "{what} in screening: the best of {n} pairs was {}, under the {} asked for",
            pct(best),
            pct(threshold)
        ));
    }
    let limit = (1.0 - metric.case_tolerance).ln();
    let first = &pairs.first()?.0;
    first.cases.keys().find_map(|case| {
        let best_of_case =
            case_gains(metric.direction, pairs, case).fold(f64::NEG_INFINITY, f64::max);
        (best_of_case < limit).then(|| {
            format!(
                "case {case} regresses in screening: {} at best over {n} pairs, beyond the {:.0}% tolerance",
                pct(best_of_case),
                metric.case_tolerance * 100.0
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Decision, Direction, Judge, JudgeSettings, Verdict};
    use std::collections::BTreeMap;

    fn metric() -> Metric {
        Metric {
            name: "ops".into(),
            direction: Direction::Maximize,
            min_gain: 0.02,
            case_tolerance: 0.05,
            plausible_factor: 10.0,
            limit: None,
        }
    }

    fn pair(inc: (f64, f64), cand: (f64, f64)) -> (Sample, Sample) {
        let s = |(a, b): (f64, f64)| Sample {
            cases: BTreeMap::from([("a".to_string(), a), ("b".to_string(), b)]),
            limit: None,
            state: None,
        };
        (s(inc), s(cand))
    }

    fn settings() -> JudgeSettings {
        JudgeSettings {
            screen_pairs: 2,
            min_pairs: 6,
            max_pairs: 20,
            confidence: 0.95,
        }
    }

    fn decide(pairs: &[(Sample, Sample)]) -> Decision {
        let (m, s) = (metric(), settings());
        Judge {
            metric: &m,
            settings: &s,
            reference: None,
        }
        .decide(pairs)
    }

    fn reason(d: Decision) -> String {
        match d {
            Decision::Done {
                verdict: Verdict::Rejected,
                reason,
                ..
            } => reason,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn a_candidate_no_pair_shows_better_is_dropped_at_the_screen() {
        let slower = [
            pair((10.0, 10.0), (9.0, 9.0)),
            pair((10.0, 10.0), (9.5, 9.4)),
        ];
        assert_eq!(decide(&slower[..1]), Decision::Continue);
        let r = reason(decide(&slower));
        assert!(
            r.starts_with("slower in screening: the best of 2 pairs was -5.5%"),
            "{r}"
        );
        let flat = [
            pair((10.0, 10.0), (10.1, 10.1)),
            pair((10.0, 10.0), (9.9, 10.0)),
        ];
        assert!(reason(decide(&flat)).starts_with("no gain in screening"));
    }

    #[test]
    fn a_case_lost_in_every_pair_is_dropped_but_one_lucky_pair_goes_on() {
        let lost = [
            pair((10.0, 10.0), (16.0, 9.0)),
            pair((10.0, 10.0), (15.0, 9.4)),
        ];
        let r = reason(decide(&lost));
        assert!(
            r.starts_with("case b regresses in screening: -6.0% at best"),
            "{r}"
        );
        // One pair with the gain is enough to go on to the full judgement.
        let mixed = [
            pair((10.0, 10.0), (9.0, 9.0)),
            pair((10.0, 10.0), (10.5, 10.5)),
        ];
        assert_eq!(decide(&mixed), Decision::Continue);
    }

    #[test]
    fn screening_never_accepts_and_later_pairs_are_judged_as_before() {
        let clear: Vec<_> = (0..2).map(|_| pair((10.0, 10.0), (13.0, 13.0))).collect();
        assert_eq!(decide(&clear), Decision::Continue);
        let mut slow_later = clear.clone();
        slow_later.push(pair((10.0, 10.0), (9.0, 9.0)));
        assert_eq!(decide(&slow_later), Decision::Continue);
    }

    #[test]
    fn a_screen_only_candidate_is_held_after_its_screen_and_never_accepted() {
        let (m, s) = (metric(), settings());
        let judge = Judge {
            metric: &m,
            settings: &s,
            reference: None,
        };
        let clear: Vec<_> = (0..2).map(|_| pair((10.0, 10.0), (13.0, 13.0))).collect();
        assert_eq!(judge.screen(&clear[..1]), Decision::Continue);
        match judge.screen(&clear) {
            Decision::Done {
                verdict: Verdict::Rejected,
                reason,
                summary,
            } => {
                assert!(
                    reason.starts_with("held after screening: +30.0%"),
                    "{reason}"
                );
                assert_eq!(summary.pairs, 2);
                assert_eq!(summary.candidate_score, 13.0);
            }
            other => panic!("expected a held contender, got {other:?}"),
        }
        // One that screening drops is dropped as before.
        let slower = [
            pair((10.0, 10.0), (9.0, 9.0)),
            pair((10.0, 10.0), (9.5, 9.4)),
        ];
        assert!(reason(judge.screen(&slower)).starts_with("slower in screening"));
    }
}
