//! Scoring a search on a landscape as the autotuning field does (Willemsen et al., "A
//! methodology for comparing optimization algorithms for auto-tuning", FGCS 2024): what a
//! strategy ships at a budget, set against what random search would be expected to ship at the
//! same budget, so that 0 is random search and 1 the landscape's best.

/// The expected maximum of `k` values drawn without replacement from `sorted` (ascending):
/// the i-th smallest (1-based) is the maximum with probability C(i-1, k-1) / C(n, k). `k` is
/// clamped to 1..=n; an empty slice gives 0.
pub fn expected_best(sorted: &[f64], k: usize) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return 0.0;
    }
    let k = k.clamp(1, n);
    // ln C(a, b), summed term by term to stay finite for spaces of thousands.
    let ln_choose = |a: usize, b: usize| -> f64 {
        (1..=b)
            .map(|j| ((a + 1 - j) as f64).ln() - (j as f64).ln())
            .sum()
    };
    let total = ln_choose(n, k);
    (k..=n)
        .map(|i| sorted[i - 1] * (ln_choose(i - 1, k - 1) - total).exp())
        .sum()
}

/// The score of a shipped quality `q` (its true value over the best's, at most 1) against
/// random search's expected quality `random` at the same budget: (q - random) / (1 - random).
/// Where random search is expected to find the best already, every strategy scores 0.
pub fn against_random(q: f64, random: f64) -> f64 {
    if random >= 1.0 - 1e-12 {
        0.0
    } else {
        (q - random) / (1.0 - random)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expected_best_is_the_order_statistic() {
        let q = [0.1, 0.5, 1.0];
        assert!((expected_best(&q, 1) - 1.6 / 3.0).abs() < 1e-12);
        // Two of three: the maximum is 0.5 only when {0.1, 0.5} is drawn, 1 time in 3.
        assert!((expected_best(&q, 2) - 2.5 / 3.0).abs() < 1e-12);
        assert!((expected_best(&q, 3) - 1.0).abs() < 1e-12);
        assert!((expected_best(&q, 9) - 1.0).abs() < 1e-12);
        assert_eq!(expected_best(&[], 3), 0.0);
    }

    #[test]
    fn the_expected_best_matches_drawing_on_a_large_space() {
        use rand::SeedableRng;
        use rand::seq::SliceRandom;
        let q: Vec<f64> = (1..=3000).map(|i| (i as f64 / 3000.0).powi(8)).collect();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut pool = q.clone();
        let trials = 4000;
        let mean = (0..trials)
            .map(|_| {
                pool.shuffle(&mut rng);
                pool[..25].iter().copied().fold(0.0, f64::max)
            })
            .sum::<f64>()
            / trials as f64;
        let exact = expected_best(&q, 25);
        assert!(
            (mean - exact).abs() < 0.01,
            "drawn {mean}, closed form {exact}"
        );
    }

    #[test]
    fn random_search_scores_zero_and_the_best_one() {
        assert_eq!(against_random(0.8, 0.8), 0.0);
        assert_eq!(against_random(1.0, 0.8), 1.0);
        assert!(against_random(0.6, 0.8) < 0.0);
        assert_eq!(against_random(1.0, 1.0), 0.0);
    }
}
