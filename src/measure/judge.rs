//! The judge: decides from paired benchmark samples whether a candidate is a verified
//! improvement. Pure logic, no IO: the caller feeds it one (incumbent, candidate) pair at a time
//! and stops when it says so. A gain is accepted only when, at one of the sequential design's
//! looks, the lower bound of the signed-rank interval on the paired log-ratio (at that look's
//! level) clears `min_gain`, no case regresses beyond tolerance, and the gain is plausible.

use super::early::{first_pair_out, screened_out};
use super::guard::{below_floor, floor_reason};
use super::metric::{JudgeSettings, Metric, log_gain, pct, pct_interval};
use super::sample::Sample;
use super::sequential::level_at;
use super::stats::{Interval, median, signed_rank_interval, signed_rank_interval_tails};
use super::text_enum::text_enum;
use std::collections::BTreeMap;

text_enum! {
    /// What became of a candidate.
    pub enum Verdict {
        Accepted = "accepted",
        Rejected = "rejected",
        /// A screen-only proposal that passed its screen: a contender of the search's race,
        /// never judged in full (so never accepted) and not a refusal either.
        Held = "held",
        Failed = "failed",
        Quarantined = "quarantined",
    }
}

/// The numbers behind a verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Paired log-ratio gain (positive = better in the metric's direction) and its interval.
    pub gain: Interval,
    /// Median score of each side over the pairs.
    pub incumbent_score: f64,
    pub candidate_score: f64,
    pub pairs: usize,
}

/// A pair's gain beyond this (a factor of a billion either way) is no measurement of a kernel
/// but a broken or lying bench: the samples are invalid, never a verdict. (Below it, a gain
/// over the plausibility factor goes to a human.)
const MAX_ABS_LOG_GAIN: f64 = 20.723_265_836_946_41; // ln(1e9)

#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Not clear yet: benchmark another pair.
    Continue,
    /// The samples cannot be judged (a non-finite or absurd ratio): the candidate fails.
    Invalid { reason: String },
    Done {
        verdict: Verdict,
        reason: String,
        summary: Summary,
    },
}

pub struct Judge<'a> {
    pub metric: &'a Metric,
    pub settings: &'a JudgeSettings,
    /// The hand-tuned baseline's score in this context, when known: a gain is implausible only
    /// when it is far beyond both the incumbent and this.
    pub reference: Option<f64>,
    /// The spread of one pair's gain against the current incumbent (a standard deviation of
    /// log ratios, from `Spread`), once enough pairs are known: a candidate whose first pair is
    /// far under the gain asked for is then dropped after it (`early::first_pair_out`).
    pub spread: Option<f64>,
    /// Each case's log gain of the incumbent over the floor (`JudgeSettings::floor`); a case
    /// not in it (all, when the floor is the incumbent) stands at the floor.
    pub floor: &'a BTreeMap<String, f64>,
}

impl Judge<'_> {
    /// Decides after the pairs measured so far. `pairs` holds (incumbent, candidate) samples
    /// whose cases are already checked to match. Acceptance happens only at the looks of the
    /// sequential design, each at its own level; rejection at any pair; `max_pairs` always ends
    /// the series.
    pub fn decide(&self, pairs: &[(Sample, Sample)]) -> Decision {
        let n = pairs.len();
        let (inc_scores, cand_scores, gains) = self.scores(pairs);
        if let Some((i, g)) = gains
            .iter()
            .enumerate()
            .find(|(_, g)| !g.is_finite() || g.abs() > MAX_ABS_LOG_GAIN)
        {
            return Decision::Invalid {
                reason: format!(
                    "invalid samples: pair {} measured {} against {} ({}), beyond a factor of {:.0e} either way",
                    i + 1,
                    cand_scores[i],
                    inc_scores[i],
                    if g.is_finite() {
                        format!("{:.3e}x", g.exp())
                    } else {
                        "a non-finite ratio".into()
                    },
                    MAX_ABS_LOG_GAIN.exp()
                ),
            };
        }
        let early = |verdict, reason| Decision::Done {
            verdict,
            reason,
            summary: self.early_summary(&inc_scores, &cand_scores, &gains),
        };
        if let Some(why) = self.above_limit(pairs) {
            return early(Verdict::Quarantined, why);
        }
        if n < self.settings.min_pairs.min(self.settings.max_pairs) {
            if n == self.settings.screen_pairs
                && let Some(reason) = screened_out(self.metric, pairs, &gains, self.floor)
            {
                return early(Verdict::Rejected, reason);
            }
            if n == 1
                && n < self.settings.screen_pairs
                && let Some(reason) = self
                    .spread
                    .and_then(|sd| first_pair_out(self.metric, gains[0], sd))
            {
                return early(Verdict::Rejected, reason);
            }
            return Decision::Continue;
        }
        let Some(gain) = signed_rank_interval(&gains, self.settings.confidence) else {
            return Decision::Continue;
        };
        let summary = Summary {
            gain,
            incumbent_score: median(&inc_scores),
            candidate_score: median(&cand_scores),
            pairs: n,
        };
        self.verdict(pairs, &gains, summary)
            .unwrap_or(Decision::Continue)
    }

    /// Each pair's incumbent score, candidate score and gain (in the metric's direction).
    pub(super) fn scores(&self, pairs: &[(Sample, Sample)]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let score = |s: &Sample| self.metric.weights.score(s);
        let inc: Vec<f64> = pairs.iter().map(|(a, _)| score(a)).collect();
        let cand: Vec<f64> = pairs.iter().map(|(_, b)| score(b)).collect();
        let gains = inc
            .iter()
            .zip(&cand)
            .map(|(a, b)| log_gain(self.metric.direction, *a, *b))
            .collect();
        (inc, cand, gains)
    }

    /// The numbers behind a decision before the sequential design has enough pairs: an interval
    /// at whatever level the pairs reach, else the median alone.
    pub(super) fn early_summary(&self, inc: &[f64], cand: &[f64], gains: &[f64]) -> Summary {
        let at = median(gains);
        Summary {
            gain: signed_rank_interval(gains, self.settings.confidence).unwrap_or(Interval {
                estimate: at,
                low: at,
                high: at,
                confidence: 0.0,
            }),
            incumbent_score: median(inc),
            candidate_score: median(cand),
            pairs: gains.len(),
        }
    }

    /// The verdict after `summary.pairs` pairs, or `None` to measure another pair.
    fn verdict(
        &self,
        pairs: &[(Sample, Sample)],
        gains: &[f64],
        summary: Summary,
    ) -> Option<Decision> {
        let n = summary.pairs;
        let gain = summary.gain;
        let done = |verdict, reason: String, summary: Summary| {
            Some(Decision::Done {
                verdict,
                reason,
                summary,
            })
        };
        let threshold = (1.0 + self.metric.min_gain).ln();
        if let Some(why) = self.implausible(&summary) {
            return done(Verdict::Quarantined, why, summary);
        }
        let at_look = level_at(self.settings, n).and_then(|a| signed_rank_interval_tails(gains, a));
        if let Some(bound) = at_look.filter(|b| b.low >= threshold) {
            if let Some(reason) = self.case_regression(pairs) {
                return done(Verdict::Rejected, reason, summary);
            }
            let reason = format!(
                "faster: {} over the incumbent in {n} pairs",
                pct_interval(&bound)
            );
            return done(
                Verdict::Accepted,
                reason,
                Summary {
                    gain: bound,
                    ..summary
                },
            );
        }
        if gain.high < threshold || n >= self.settings.max_pairs {
            let need = pct(threshold);
            let reason = if gain.high < 0.0 {
                format!("slower: {}", pct_interval(&gain))
            } else if gain.high < threshold {
                format!("no significant gain: {}, needs {need}", pct_interval(&gain))
            } else {
                // At a look, the bound the judge accepts on is stricter than the 95% interval
                // shown; say so, or a 95% interval above the threshold reads as a refusal in error.
                let strict = match &at_look {
                    Some(b) if gain.low >= threshold => format!(
                        " (at this look's {:.1}% level its lower bound is {})",
                        b.confidence * 100.0,
                        pct(b.low)
                    ),
                    _ => String::new(),
                };
                format!(
                    "inconclusive: {} is not clearly above {need} after {n} pairs{strict}",
                    pct_interval(&gain)
                )
            };
            return done(Verdict::Rejected, reason, summary);
        }
        None
    }

    /// Why the gain needs a human: far beyond the incumbent and the hand-tuned baseline.
    fn implausible(&self, summary: &Summary) -> Option<String> {
        let factor = self.metric.plausible_factor.ln();
        let vs_reference = self
            .reference
            .map(|r| log_gain(self.metric.direction, r, summary.candidate_score));
        if summary.gain.estimate <= factor || vs_reference.is_some_and(|g| g <= factor) {
            return None;
        }
        let what = match vs_reference {
            Some(g) => format!(
                "{:.1}x the incumbent and {:.1}x the hand-tuned baseline",
                summary.gain.estimate.exp(),
                g.exp()
            ),
            None => format!("{:.1}x the incumbent", summary.gain.estimate.exp()),
        };
        Some(format!(
            "implausible gain: {what}, over the {}x plausibility factor; needs a human",
            self.metric.plausible_factor
        ))
    }

    /// The worst case whose estimated change is beyond the tolerance, as a reason.
    fn case_regression(&self, pairs: &[(Sample, Sample)]) -> Option<String> {
        let (case, i) = below_floor(self.metric, self.settings.confidence, self.floor, pairs)?;
        Some(floor_reason(self.metric, self.settings.floor, &case, &i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn metric() -> Metric {
        crate::measure::metric::test_metric()
    }

    fn settings() -> JudgeSettings {
        JudgeSettings {
            screen_pairs: 0,
            min_pairs: 6,
            max_pairs: 20,
            confidence: 0.95,
            floor: crate::measure::objective::Floor::Incumbent,
        }
    }

    /// No floor: every case stands at the incumbent.
    static NO_FLOOR: BTreeMap<String, f64> = BTreeMap::new();

    /// A judge with no reference, spread or floor.
    fn plain<'a>(metric: &'a Metric, settings: &'a JudgeSettings) -> Judge<'a> {
        Judge {
            metric,
            settings,
            reference: None,
            spread: None,
            floor: &NO_FLOOR,
        }
    }

    /// The reason of a quarantine decision; any other decision fails the test.
    fn quarantined(d: Decision) -> String {
        match d {
            Decision::Done {
                verdict: Verdict::Quarantined,
                reason,
                ..
            } => reason,
            other => panic!("{other:?}"),
        }
    }

    fn sample(a: f64, b: f64) -> Sample {
        Sample {
            cases: BTreeMap::from([("a".to_string(), a), ("b".to_string(), b)]),
            limit: None,
            state: None,
        }
    }

    /// Pairs with a deterministic wobble of +-1% around the given case ratios.
    fn pairs(n: usize, ra: f64, rb: f64) -> Vec<(Sample, Sample)> {
        (0..n)
            .map(|i| {
                let w = 1.0 + 0.01 * (((i * 7) % 5) as f64 - 2.0) / 2.0;
                (sample(100.0, 100.0), sample(100.0 * ra * w, 100.0 * rb * w))
            })
            .collect()
    }

    fn decide(p: &[(Sample, Sample)], reference: Option<f64>) -> (Option<Verdict>, String) {
        let (m, s) = (metric(), settings());
        match (Judge {
            metric: &m,
            settings: &s,
            reference,
            spread: None,
            floor: &Default::default(),
        })
        .decide(p)
        {
            Decision::Continue => (None, String::new()),
            Decision::Invalid { reason } => (Some(Verdict::Failed), reason),
            Decision::Done {
                verdict, reason, ..
            } => (Some(verdict), reason),
        }
    }

    #[test]
    fn waits_for_min_pairs() {
        assert_eq!(decide(&pairs(5, 1.5, 1.5), None).0, None);
    }

    #[test]
    fn accepts_a_clear_gain_with_its_interval() {
        let (v, reason) = decide(&pairs(6, 1.10, 1.10), None);
        assert_eq!(v, Some(Verdict::Accepted), "{reason}");
        // The wobble averages -0.3%, so the estimate is just under +10%.
        assert!(reason.starts_with("faster: +9."), "{reason}");
    }

    #[test]
    fn rejects_no_gain_and_slower() {
        assert!(
            decide(&pairs(6, 1.0, 1.0), None)
                .1
                .starts_with("no significant gain")
        );
        assert!(
            decide(&pairs(6, 0.9, 0.9), None)
                .1
                .starts_with("slower: -10.")
        );
    }

    #[test]
    fn rejects_a_gain_bought_with_a_regressed_case() {
        let (v, reason) = decide(&pairs(6, 1.5, 0.9), None);
        assert_eq!(v, Some(Verdict::Rejected));
        assert!(reason.starts_with("case b regresses: -10."), "{reason}");
    }

    #[test]
    fn quarantines_implausible_gains_unless_the_reference_makes_them_plausible() {
        assert_eq!(
            decide(&pairs(6, 20.0, 20.0), None).0,
            Some(Verdict::Quarantined)
        );
        // 20x a slow incumbent but only 1x the hand-tuned baseline: plausible.
        assert_eq!(
            decide(&pairs(6, 20.0, 20.0), Some(2000.0)).0,
            Some(Verdict::Accepted)
        );
    }

    #[test]
    fn borderline_is_inconclusive_at_the_cap() {
        let (v, reason) = decide(&pairs(20, 1.02, 1.02), None);
        assert_eq!(v, Some(Verdict::Rejected));
        assert!(reason.starts_with("inconclusive"), "{reason}");
    }

    #[test]
    fn an_inconclusive_gain_whose_95_percent_interval_clears_the_threshold_names_the_look_s_bound()
    {
        // Gains of about +3.8%, spread +-4%: the 95% interval clears +2%, the stricter level of
        // the last look does not.
        let p: Vec<_> = (0..20)
            .map(|i| {
                let r = 1.038 * (1.0 + 0.04 * (((i * 7) % 9) as f64 - 4.0) / 4.0);
                (sample(100.0, 100.0), sample(100.0 * r, 100.0 * r))
            })
            .collect();
        let (v, reason) = decide(&p, None);
        assert_eq!(v, Some(Verdict::Rejected), "{reason}");
        assert!(reason.starts_with("inconclusive: +"), "{reason}");
        let shown = reason
            .split('[')
            .nth(1)
            .and_then(|r| r.split(',').next())
            .and_then(|low| low.trim_start_matches('+').parse::<f64>().ok());
        assert!(shown.is_some_and(|low| low >= 2.0), "{reason}");
        assert!(reason.contains("at this look's 99."), "{reason}");
    }

    #[test]
    fn a_non_finite_or_absurd_ratio_is_an_invalid_sample_not_a_stall() {
        let mut m = metric();
        m.direction = crate::measure::Direction::Minimize;
        let s = settings();
        let judge = plain(&m, &s);
        // A subnormal time on a minimize task: incumbent / candidate overflows to infinity.
        let p = vec![(sample(100.0, 100.0), sample(5e-324, 5e-324)); 3];
        match judge.decide(&p) {
            Decision::Invalid { reason } => assert!(reason.contains("pair 1"), "{reason}"),
            other => panic!("{other:?}"),
        }
        let absurd = vec![(sample(100.0, 100.0), sample(1e-300, 1e-300)); 6];
        assert!(matches!(judge.decide(&absurd), Decision::Invalid { .. }));
    }

    #[test]
    fn max_pairs_always_ends_the_series() {
        let p = pairs(20, 1.03, 1.03);
        let (v, _) = decide(&p, None);
        assert!(v.is_some(), "a decision at max_pairs");
    }

    #[test]
    fn a_case_past_the_declared_bound_or_the_measured_limit_is_quarantined_at_once() {
        let (mut m, s) = (metric(), settings());
        m.bound = Some(crate::measure::metric::Bound::Every(150.0));
        // 1.6x the incumbent: far under the plausibility factor, past the machine's bound.
        let pair = |c: f64| [(sample(100.0, 100.0), sample(c, 100.0))];
        let reason = quarantined(plain(&m, &s).decide(&pair(160.0)));
        assert!(reason.contains("past the machine's bound: case a at 160.0000 x"));
        // Under the bound the series goes on.
        assert_eq!(plain(&m, &s).decide(&pair(140.0)), Decision::Continue);
        (m.bound, m.limit) = (None, Some("copy".into()));
        let mut fast = sample(130.0, 101.0);
        fast.limit = Some(120.0);
        let mut inc = sample(100.0, 100.0);
        inc.limit = Some(120.0);
        let reason = quarantined(plain(&m, &s).decide(&[(inc.clone(), fast.clone())]));
        assert!(reason.contains("case a at 130.0000 x, over the 120.0000 copy"));
        // Within 5% of the limit is the two measurements' noise: the series goes on.
        fast.limit = Some(125.0);
        assert_eq!(plain(&m, &s).decide(&[(inc, fast)]), Decision::Continue);
    }
}
