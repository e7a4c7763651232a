//! Lower bounds on the mean of the paired log gains: the gain a user gets on average, which the
//! signed-rank interval does not bound when the candidate's noise has another shape than the
//! incumbent's (a candidate 5% faster in most processes and 30% slower in a few has a positive
//! pseudo-median and a negative mean). The judge accepts only when both bounds clear the
//! threshold. Neither bound can see a slow mode that none of the pairs drew; docs/judging.md
//! gives the rates per noise shape.

use super::student;

/// Mean and sample standard deviation (n - 1) of `xs`; the deviation is `None` below two values.
fn mean_sd(xs: &[f64]) -> (f64, Option<f64>) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let sd = (xs.len() >= 2).then(|| {
        let ss: f64 = xs.iter().map(|x| (x - mean).powi(2)).sum();
        (ss / (n - 1.0)).sqrt()
    });
    (mean, sd)
}

/// A one-sided lower bound on the mean of `gains` at level `alpha`: Student's t on the sample's
/// standard deviation, never taken below `sd_floor` (the pooled spread of a pair's gain against
/// this incumbent, when known), so a candidate whose few pairs happen to agree is not credited
/// with less noise than the machine has. `None` below two pairs.
pub fn t_lower(gains: &[f64], alpha: f64, sd_floor: Option<f64>) -> Option<f64> {
    let (mean, sd) = mean_sd(gains);
    let sd = sd?.max(sd_floor.unwrap_or(0.0));
    let n = gains.len() as f64;
    Some(mean - student::quantile(alpha, n - 1.0) * sd / n.sqrt())
}

/// Degrees of freedom the pooled spread is given when the early look pools it with the
/// candidate's own pairs: the fewest the judge waits for before it uses the spread.
const SPREAD_DF: f64 = 8.0;

/// The early look's bound: Cantelli's one-sided inequality, P(mean - mu >= k sd / sqrt(n)) <=
/// 1 / (1 + k^2), which holds for any distribution whose standard deviation is at most `sd`.
/// `sd` pools the spread measured against this incumbent (as `SPREAD_DF` degrees of freedom)
/// with the pairs' own deviation, so a candidate whose pairs disagree far more than the
/// machine's noise explains is not settled here. The bound clears the threshold only for a
/// gain many spreads above it (about 8 at two pairs and 0.75%).
pub fn cantelli_lower(gains: &[f64], alpha: f64, spread: f64) -> f64 {
    let (mean, own) = mean_sd(gains);
    let own_df = gains.len() as f64 - 1.0;
    let variance =
        (SPREAD_DF * spread.powi(2) + own_df * own.unwrap_or(0.0).powi(2)) / (SPREAD_DF + own_df);
    let k = (1.0 / alpha - 1.0).sqrt();
    mean - k * variance.sqrt() / (gains.len() as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_t_bound_is_below_the_mean_and_the_floor_widens_it() {
        let g = [0.05, 0.06, 0.04, 0.05, 0.055, 0.045];
        let plain = t_lower(&g, 0.01, None).unwrap_or(f64::NAN);
        assert!(plain < 0.05 && plain > 0.04, "{plain}");
        let floored = t_lower(&g, 0.01, Some(0.05)).unwrap_or(f64::NAN);
        assert!(floored < plain - 0.03, "{floored}");
        assert!(t_lower(&[0.1], 0.01, Some(0.01)).is_none());
    }

    #[test]
    fn a_slow_mode_in_the_pairs_pulls_the_mean_bound_down_but_not_the_median() {
        // 19 pairs at +5% and one at -70%: the median is +5%, the mean +1.25%.
        let mut g = vec![0.05; 19];
        g.push(-0.70);
        assert!(t_lower(&g, 0.005, None).unwrap_or(f64::NAN) < 0.0);
        let ranks = crate::measure::stats::signed_rank_interval_tails(&g, 0.005);
        assert!(ranks.is_some_and(|i| i.low > 0.02), "{ranks:?}");
    }

    #[test]
    fn cantelli_asks_for_about_eight_spreads_at_two_pairs() {
        let margin = 0.3 - cantelli_lower(&[0.3, 0.3], 0.0075, 0.01);
        // k = sqrt(1 / 0.0075 - 1) = 11.5, over sqrt(2) pairs, on 8/9 of the spread's variance.
        assert!((margin - 0.0767).abs() < 1e-3, "{margin}");
        // Pairs that disagree far more than the spread widen it: their own sd is 14%.
        assert!(cantelli_lower(&[0.2, 0.4], 0.0075, 0.01) < 0.3 - 0.35);
    }
}
