//! The judge: decides from paired benchmark samples whether a candidate is a verified
//! improvement. Pure logic, no IO: the caller feeds it one (incumbent, candidate) pair at a time
//! and stops when it says so. A gain is accepted only when, at one of the sequential design's
//! looks, the lower bound of the signed-rank interval on the paired log-ratio and the lower bound
//! on its mean (both at that look's level) clear `min_gain`, no case regresses beyond
//! tolerance, and the gain is plausible; at the early look (two pairs, when the spread is known)
//! a bound that holds for any noise of that spread must clear it.

use super::early::{first_pair_out, screened_out};
use super::guard::{below_floor, floor_reason};
use super::mean_gain::t_lower;
use super::metric::Rule;
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
    /// log ratios, from `Spread`), once enough pairs are known before this series: a candidate
    /// whose first pair is far under the gain asked for is then dropped after it
    /// (`early::first_pair_out`), one many spreads over it is accepted at the early look, and
    /// the bound on the mean never takes the noise for less than this.
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
        self.decide_series(pairs, true)
    }

    /// `decide`, with the early look's acceptance only when `may_settle_early` (a screen-only
    /// series never accepts).
    pub(super) fn decide_series(
        &self,
        pairs: &[(Sample, Sample)],
        may_settle_early: bool,
    ) -> Decision {
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
            if may_settle_early && let Some(reason) = self.settled_early(pairs, &gains) {
                let summary = self.early_summary(&inc_scores, &cand_scores, &gains);
                return Decision::Done {
                    verdict: Verdict::Accepted,
                    reason,
                    summary,
                };
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
        let level = level_at(self.settings, self.spread.is_some(), n);
        let at_look = level.and_then(|a| signed_rank_interval_tails(gains, a)?.reaching(a));
        let mean_low = match (self.settings.rule, level) {
            (Rule::Mean, Some(a)) => t_lower(gains, a, self.spread),
            _ => None,
        };
        let mean_clears =
            self.settings.rule == Rule::PseudoMedian || mean_low.is_some_and(|m| m >= threshold);
        if let Some(bound) = at_look.filter(|b| b.low >= threshold && mean_clears) {
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
                let strict = match (&at_look, mean_low) {
                    (Some(b), _) if gain.low >= threshold && b.low < threshold => format!(
                        " (at this look's {:.1}% level its lower bound is {})",
                        b.confidence * 100.0,
                        pct(b.low)
                    ),
                    (_, Some(m)) if gain.low >= threshold && m < threshold => format!(
                        " (at this look's level the bound on its mean gain is {}: slow processes pull the mean under the median)",
                        pct(m)
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
    pub(super) fn implausible(&self, summary: &Summary) -> Option<String> {
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
    pub(super) fn case_regression(&self, pairs: &[(Sample, Sample)]) -> Option<String> {
        let (case, i) = below_floor(self.metric, self.settings.confidence, self.floor, pairs)?;
        Some(floor_reason(self.metric, self.settings.floor, &case, &i))
    }
}

#[cfg(test)]
mod tests;
