//! Screening: after a few pairs, a candidate with no sign of the gain the judge asks for is
//! dropped without the rest of its pairs. It only ever rejects early; acceptance still needs the
//! full sequential judgement, so screening cannot raise the false-acceptance rate. A candidate
//! whose first pair is further under that gain than the noise of the pairs measured against
//! the incumbent explains is dropped after that one pair; a screen-only candidate whose first pair
//! is over twice the incumbent, with no case lost, is held after that pair.

use super::early::screened_out;
use super::judge::{Decision, Judge, Verdict};
use super::metric::pct;
use super::objective::Weights;
use super::sample::Sample;
use super::stats::median;

/// A screen-only candidate whose first pair is this many times better than the incumbent, with
/// no case past the tolerance, is held after that pair. Its second pair could not change the
/// screen's outcome; it would only sharpen the race's ranking, and among candidates that far
/// ahead (a race against a naive start) the families differ by tens of percent, which one pair
/// tells apart. The race takes it later for the near-ties at its top, as a screen of its own
/// (`proposers::Origin::Rescreen`), before its leader is judged in full.
const CLEAR: f64 = 2.0;
/// Degrees of freedom (pairs beyond each evaluation's first) needed before the spread is used.
const MIN_DF: usize = 8;

/// The noise of one pair's gain, pooled over the evaluations against the current incumbent:
/// each evaluation's pair gains (log ratios) about their own mean, so that a candidate's real
/// difference from the incumbent does not count as noise, while both sides' noise and slow
/// drift do.
#[derive(Debug, Default)]
pub struct Spread {
    sum_sq: f64,
    df: usize,
}

impl Spread {
    pub fn add(&mut self, weights: &Weights, pairs: &[(Sample, Sample)]) {
        let gains: Vec<f64> = pairs
            .iter()
            .map(|(a, b)| (weights.score(b) / weights.score(a)).ln())
            .filter(|g| g.is_finite())
            .collect();
        if gains.len() < 2 {
            return;
        }
        let mean = gains.iter().sum::<f64>() / gains.len() as f64;
        self.sum_sq += gains.iter().map(|g| (g - mean).powi(2)).sum::<f64>();
        self.df += gains.len() - 1;
    }

    /// A new incumbent: the pooled noise starts again from the judgement that made it one.
    pub fn restart(&mut self, weights: &Weights, pairs: &[(Sample, Sample)]) {
        *self = Spread::default();
        self.add(weights, pairs);
    }

    /// The standard deviation of one pair's gain, once enough pairs are pooled.
    pub fn sd(&self) -> Option<f64> {
        (self.df >= MIN_DF).then(|| (self.sum_sq / self.df as f64).sqrt())
    }
}

impl Judge<'_> {
    /// Like `decide`, for a screen-only candidate: one that screening does not drop ends after
    /// the screening pairs as a held contender, never accepted (the
    /// search's race sends its leader to the full judgement, in fresh pairs, as a new candidate).
    pub fn screen(&self, pairs: &[(Sample, Sample)]) -> Decision {
        let decision = self.decide_series(pairs, false);
        let n = pairs.len();
        if decision != Decision::Continue {
            return decision;
        }
        let (inc_scores, cand_scores, gains) = self.scores(pairs);
        let settled_early = n == 1
            && gains[0] >= CLEAR.ln()
            && screened_out(self.metric, pairs, &gains, self.floor).is_none();
        if n < self.settings.screen_pairs.max(1) && !settled_early {
            return Decision::Continue;
        }
        Decision::Done {
            verdict: Verdict::Held,
            reason: format!(
                "held after screening: {} over the incumbent in {n} pair{}{}; a contender of the search's race, judged in full only if it leads",
                pct(median(&gains)),
                if n == 1 { "" } else { "s (median)" },
                if settled_early {
                    format!(" (over {CLEAR}x: the screen's outcome was settled)")
                } else {
                    String::new()
                }
            ),
            summary: self.early_summary(&inc_scores, &cand_scores, &gains),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Decision, Judge, JudgeSettings, Metric, Verdict};
    use std::collections::BTreeMap;

    fn metric() -> Metric {
        crate::measure::metric::test_metric()
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
            floor: crate::measure::objective::Floor::Start,
            rule: Default::default(),
        }
    }

    /// A judge with no spread known yet.
    fn without_spread<'a>(metric: &'a Metric, settings: &'a JudgeSettings) -> Judge<'a> {
        Judge {
            metric,
            settings,
            reference: None,
            spread: None,
            floor: &crate::measure::objective::AT_INCUMBENT,
        }
    }

    fn decide(pairs: &[(Sample, Sample)]) -> Decision {
        let (m, s) = (metric(), settings());
        without_spread(&m, &s).decide(pairs)
    }

    fn reason(d: Decision) -> String {
        ended(d, Verdict::Rejected).0
    }

    fn held(d: Decision) -> (String, crate::measure::Summary) {
        ended(d, Verdict::Held)
    }

    fn ended(d: Decision, expected: Verdict) -> (String, crate::measure::Summary) {
        match d {
            Decision::Done {
                verdict,
                reason,
                summary,
            } if verdict == expected => (reason, summary),
            other => panic!("expected {expected}, got {other:?}"),
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
            r.starts_with("case b ends below the floor in screening: -6.0% at best"),
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
        let judge = without_spread(&m, &s);
        let clear: Vec<_> = (0..2).map(|_| pair((10.0, 10.0), (13.0, 13.0))).collect();
        assert_eq!(judge.screen(&clear[..1]), Decision::Continue);
        let (why, summary) = held(judge.screen(&clear));
        assert!(why.starts_with("held after screening: +30.0%"), "{why}");
        assert_eq!(summary.pairs, 2);
        assert_eq!(summary.candidate_score, 13.0);
        // One that screening drops is dropped as before.
        let slower = [
            pair((10.0, 10.0), (9.0, 9.0)),
            pair((10.0, 10.0), (9.5, 9.4)),
        ];
        assert!(reason(judge.screen(&slower)).starts_with("slower in screening"));
    }

    #[test]
    fn a_first_pair_over_twice_the_incumbent_settles_a_screen_unless_a_case_is_lost() {
        let (m, s) = (metric(), settings());
        let judge = without_spread(&m, &s);
        let far = [pair((10.0, 10.0), (30.0, 25.0))];
        let (why, summary) = held(judge.screen(&far));
        assert!(
            why.starts_with("held after screening: +173.9% over the incumbent in 1 pair (over 2x: the screen's outcome was settled)"),
            "{why}"
        );
        assert_eq!(summary.pairs, 1);
        // Under twice the incumbent, or with one case past the tolerance, the second pair is
        // measured; a candidate judged in full is never settled by one pair.
        assert_eq!(
            judge.screen(&[pair((10.0, 10.0), (19.0, 19.0))]),
            Decision::Continue
        );
        assert_eq!(
            judge.screen(&[pair((10.0, 10.0), (90.0, 9.0))]),
            Decision::Continue
        );
        assert_eq!(judge.decide(&far), Decision::Continue);
    }

    #[test]
    fn a_first_pair_far_under_the_gain_asked_for_drops_the_candidate_after_it() {
        let (m, s) = (metric(), settings());
        let judge = |spread| Judge {
            metric: &m,
            settings: &s,
            reference: None,
            spread,
            floor: &crate::measure::objective::AT_INCUMBENT,
        };
        // 3 sd of a pair's gain: 6%.
        let sure = judge(Some(0.02));
        let at = |gain: f64| [pair((10.0, 10.0), (10.0 * gain, 10.0 * gain))];
        let slower = reason(sure.decide(&at(0.9)));
        assert!(
            slower.starts_with("slower in screening: its first pair was -10.0%, under the +2.0% asked for by more than the noise of its pairs explains (3 sd of a pair's gain: 6.0%)"),
            "{slower}"
        );
        // A screen-only candidate too.
        assert!(reason(sure.screen(&at(0.9))).starts_with("slower in screening: its first"));
        // Within the noise of the threshold, or with the noise not known yet, the screen goes
        // on to its second pair.
        assert_eq!(sure.decide(&at(0.99)), Decision::Continue);
        assert_eq!(sure.screen(&at(0.99)), Decision::Continue);
        assert_eq!(judge(None).decide(&at(0.5)), Decision::Continue);
        // With screening off, nothing ends before min_pairs.
        let off = JudgeSettings {
            screen_pairs: 0,
            ..settings()
        };
        let unscreened = Judge {
            metric: &m,
            settings: &off,
            reference: None,
            spread: Some(0.02),
            floor: &crate::measure::objective::AT_INCUMBENT,
        };
        assert_eq!(unscreened.decide(&at(0.5)), Decision::Continue);
    }

    #[test]
    fn the_spread_pools_each_evaluation_s_pairs_about_their_own_mean() {
        let mut spread = Spread::default();
        // Two evaluations of four pairs, at +0% and +50%, each off by ±1% per pair.
        let evaluation = |base: f64| -> Vec<(Sample, Sample)> {
            [1.01, 0.99, 1.01, 0.99]
                .iter()
                .map(|w| pair((10.0, 10.0), (10.0 * base * w, 10.0 * base * w)))
                .collect()
        };
        spread.add(&Weights::default(), &evaluation(1.0));
        assert_eq!(spread.sd(), None, "3 degrees of freedom are too few");
        spread.add(&Weights::default(), &evaluation(1.5));
        spread.add(&Weights::default(), &evaluation(1.0));
        let sd = spread.sd().unwrap_or(0.0);
        // The candidates' difference (+50%) is no noise: a pair's sd is about 1.15%.
        assert!((sd - 0.0115).abs() < 0.0005, "{sd}");
        // A new incumbent starts again from the evaluation that made it one.
        spread.restart(&Weights::default(), &evaluation(1.5));
        assert_eq!(spread.sd(), None);
        spread.add(&Weights::default(), &evaluation(1.0));
        spread.add(&Weights::default(), &evaluation(1.0));
        assert!(spread.sd().is_some());
    }
}
