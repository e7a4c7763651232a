//! Statistics on paired differences: the Hodges-Lehmann estimate (median of Walsh averages)
//! with its exact Wilcoxon signed-rank confidence interval. Distribution-free and robust to the
//! outliers a shared machine produces, and exact at the small sample sizes the judge uses.

/// An estimate with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
    /// The confidence actually reached (at most the level asked for; less when n is tiny).
    pub confidence: f64,
}

impl Interval {
    /// This interval, when it reaches the one-sided level `alpha` asked for: under 2^-n (a
    /// six-pair look at 0.25%, below 1/64) no signed-rank bound can, and the smallest pair is no
    /// bound at that level.
    pub fn reaching(self, alpha: f64) -> Option<Interval> {
        (self.confidence >= 1.0 - 2.0 * alpha * (1.0 + 1e-9)).then_some(self)
    }
}

/// P(W+ <= w) for w = 0..=n(n+1)/2 under the null hypothesis (exact, by dynamic programming).
fn signed_rank_cdf(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    let mut counts = vec![0f64; max + 1];
    counts[0] = 1.0;
    for rank in 1..=n {
        for w in (rank..=max).rev() {
            counts[w] += counts[w - rank];
        }
    }
    let total = 2f64.powi(n as i32);
    let mut acc = 0.0;
    counts
        .into_iter()
        .map(|c| {
            acc += c;
            acc / total
        })
        .collect()
}

/// Hodges-Lehmann estimate and signed-rank interval of the center of `diffs` at `confidence`.
/// `None` for an empty input or non-finite values.
pub fn signed_rank_interval(diffs: &[f64], confidence: f64) -> Option<Interval> {
    signed_rank_interval_tails(diffs, (1.0 - confidence) / 2.0)
}

/// The same interval with at most `alpha_half` probability in each tail: its lower bound is a
/// one-sided bound at level `1 - alpha_half`.
pub fn signed_rank_interval_tails(diffs: &[f64], alpha_half: f64) -> Option<Interval> {
    let n = diffs.len();
    if n == 0 || diffs.iter().any(|d| !d.is_finite()) {
        return None;
    }
    let mut walsh = Vec::with_capacity(n * (n + 1) / 2);
    for i in 0..n {
        for j in i..n {
            walsh.push((diffs[i] + diffs[j]) / 2.0);
        }
    }
    walsh.sort_by(f64::total_cmp);
    let m = walsh.len();
    let estimate = if m % 2 == 1 {
        walsh[m / 2]
    } else {
        (walsh[m / 2 - 1] + walsh[m / 2]) / 2.0
    };
    let cdf = signed_rank_cdf(n);
    // Exact levels such as 1/64 must count as reachable despite rounding in the caller.
    let alpha_half = alpha_half * (1.0 + 1e-9);
    // The largest critical value c with P(W+ <= c) <= alpha/2; the interval drops c Walsh
    // averages at each end. When even c = 0 is too likely, the full range is the best there is.
    let c = cdf.iter().take_while(|&&p| p <= alpha_half).count();
    let (cut, reached) = if c == 0 {
        (0, 1.0 - 2.0 * cdf[0])
    } else {
        (c - 1, 1.0 - 2.0 * cdf[c - 1])
    };
    Some(Interval {
        estimate,
        low: walsh[cut],
        high: walsh[m - 1 - cut],
        confidence: reached,
    })
}

/// Geometric mean of positive values.
pub fn geomean(values: impl IntoIterator<Item = f64>) -> f64 {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(s, n), v| (s + v.ln(), n + 1));
    if n == 0 {
        f64::NAN
    } else {
        (sum / n as f64).exp()
    }
}

/// Median of a non-empty slice.
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_matches_known_values() {
        // n = 6: P(W+ = 0) = 1/64; W+ <= 2 for {}, {1}, {2}: 3/64.
        let cdf = signed_rank_cdf(6);
        assert!((cdf[0] - 1.0 / 64.0).abs() < 1e-12);
        assert!((cdf[2] - 3.0 / 64.0).abs() < 1e-12);
        assert!((cdf[21] - 1.0).abs() < 1e-12);
    }

    #[test]
    fn interval_covers_the_center_and_narrows_with_n() {
        let small: Vec<f64> = (0..6)
            .map(|i| 0.05 + 0.01 * ((i % 3) as f64 - 1.0))
            .collect();
        let big: Vec<f64> = (0..30)
            .map(|i| 0.05 + 0.01 * ((i % 3) as f64 - 1.0))
            .collect();
        let s = signed_rank_interval(&small, 0.95).unwrap_or_else(|| unreachable!());
        let b = signed_rank_interval(&big, 0.95).unwrap_or_else(|| unreachable!());
        assert!((s.estimate - 0.05).abs() < 1e-9 && (b.estimate - 0.05).abs() < 1e-9);
        assert!(s.low <= 0.05 && s.high >= 0.05);
        assert!(b.high - b.low <= s.high - s.low);
        assert!(s.confidence >= 0.95 && b.confidence >= 0.95);
    }

    #[test]
    fn one_outlier_does_not_move_the_estimate_much() {
        let mut d = vec![0.01; 9];
        d.push(5.0);
        let i = signed_rank_interval(&d, 0.95).unwrap_or_else(|| unreachable!());
        assert!(i.estimate < 0.02, "{i:?}");
    }

    #[test]
    fn tiny_samples_report_the_confidence_they_reach() {
        let i = signed_rank_interval(&[0.1, 0.2], 0.95).unwrap_or_else(|| unreachable!());
        assert_eq!((i.low, i.high), (0.1, 0.2));
        assert!(i.confidence < 0.95);
        assert!(signed_rank_interval(&[], 0.95).is_none());
        assert!(signed_rank_interval(&[f64::NAN], 0.95).is_none());
    }
}
