//! The early look: when the spread of a pair's gain against the incumbent was known before a
//! candidate's series began, a gain many spreads above the threshold is accepted after two
//! pairs, on a bound that holds for any noise of that spread (`mean_gain::cantelli_lower`), at
//! the share of the error the sequential design gives that look. So a clear gain costs 8
//! bench processes with its confirmation, where the full looks would take 24.

use super::judge::{Judge, Summary};
use super::mean_gain::cantelli_lower;
use super::metric::pct;
use super::sample::Sample;
use super::sequential::{EARLY_PAIRS, level_at};
use super::stats::{Interval, median};

impl Judge<'_> {
    /// The early look's acceptance, with its numbers: the spread was known before this series,
    /// this is the early look, the bound that holds for any noise of that spread clears the
    /// threshold, no case ends below the floor, and the gain is plausible (an implausible one
    /// goes on to the first full look, where it is quarantined).
    pub(super) fn settled_early(
        &self,
        pairs: &[(Sample, Sample)],
        gains: &[f64],
    ) -> Option<String> {
        let spread = self.spread?;
        let n = gains.len();
        let alpha = level_at(self.settings, true, n).filter(|_| n == EARLY_PAIRS)?;
        let low = cantelli_lower(gains, alpha, spread);
        let threshold = (1.0 + self.metric.min_gain).ln();
        let mean = gains.iter().sum::<f64>() / n as f64;
        let (inc, cand, _) = self.scores(pairs);
        let summary = Summary {
            gain: Interval {
                estimate: mean,
                low,
                high: mean,
                confidence: 1.0 - 2.0 * alpha,
            },
            incumbent_score: median(&inc),
            candidate_score: median(&cand),
            pairs: n,
        };
        if low < threshold
            || self.implausible(&summary).is_some()
            || self.case_regression(pairs).is_some()
        {
            return None;
        }
        Some(format!(
            "faster: {} over the incumbent in {n} pairs, settled early: at least {} for any noise of the spread measured against this incumbent ({:.1}% a pair)",
            pct(mean),
            pct(low),
            spread * 100.0
        ))
    }
}
