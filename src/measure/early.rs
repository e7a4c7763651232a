//! The rules that end a candidate's series early, before its full judgement: a first pair far
//! under the gain asked for, or a screen with no sign of it. They only ever reject; acceptance
//! still needs the full sequential judgement.

use super::metric::{Metric, case_gains, pct};
use super::sample::Sample;
use std::collections::BTreeMap;

/// How many spreads of one pair's gain a candidate's first pair must fall under the gain the
/// judge asks for to be dropped after it.
const FAR: f64 = 3.0;
/// Why a candidate is dropped after its first pair (`gain`, a log ratio), given `spread`, the
/// standard deviation of a pair's gain against this incumbent: that pair is more than `FAR`
/// spreads under the gain the judge asks for.
pub fn first_pair_out(metric: &Metric, gain: f64, spread: f64) -> Option<String> {
    let margin = FAR * spread;
    let threshold = (1.0 + metric.min_gain).ln();
    (gain + margin < threshold).then(|| {
        format!(
            "{} in screening: its first pair was {}, under the {} asked for by more than the noise of its pairs explains ({FAR} sd of a pair's gain: {:.1}%)",
            if gain < 0.0 { "slower" } else { "no gain" },
            pct(gain),
            pct(threshold),
            margin * 100.0
        )
    })
}

/// Why screening drops a candidate after `pairs`: no pair showed the gain `min_gain` asks for,
/// or one case ended beyond `case_tolerance` below the floor in every pair (the per-case guard
/// would refuse it; `floor`: each case's log gain of the incumbent over the floor).
pub fn screened_out(
    metric: &Metric,
    pairs: &[(Sample, Sample)],
    gains: &[f64],
    floor: &BTreeMap<String, f64>,
) -> Option<String> {
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
        let shift = floor.get(case).copied().unwrap_or(0.0);
        let best_of_case = case_gains(metric.direction, pairs, case)
            .map(|g| g + shift)
            .fold(f64::NEG_INFINITY, f64::max);
        (best_of_case < limit).then(|| {
            format!(
                "case {case} ends below the floor in screening: {} at best over {n} pairs, beyond the {:.0}% tolerance",
                pct(best_of_case),
                metric.case_tolerance * 100.0
            )
        })
    })
}
