//! The judge's sequential design. Looking at the data after every pair and accepting as soon as
//! a fixed-level interval clears the threshold accepts far more often than the level says (about
//! 8% instead of 2.5% at the threshold, over 6..20 pairs). So the judge may accept only at a few
//! looks, and each look gets a share of the one-sided error `(1 - confidence) / 2`; the shares
//! add up to it, so the chance of a false acceptance over all looks is at most that (a union
//! bound: it holds whatever the data, and is conservative because looks are correlated).
//! Rejecting early needs no share: it can only lower the acceptance rate.
//!
//! When the spread of a pair's gain against the incumbent is known before a candidate's series
//! starts (`Spread`, pooled over the candidates judged against it), the design has one more
//! look, at `EARLY_PAIRS`, with `EARLY_SHARE` of the budget: a gain many spreads above the
//! threshold is settled there (`mean_gain::cantelli_lower`), so what a decision costs follows
//! the noise. Whether that look exists depends on what was known before the series, never on
//! the series itself, so the union bound still holds.

use super::metric::{JudgeSettings, Rule};

/// Each look comes after about this many times the pairs of the one before.
const LOOK_GROWTH: f64 = 1.5;
/// The pairs of the early look: the fewest with a deviation of their own.
pub const EARLY_PAIRS: usize = 2;
/// The early look's share of the one-sided error. A fifth (0.5% at 95%) asks for a gain about
/// ten spreads above the threshold at two pairs (Cantelli), and leaves the look at six pairs
/// its 1/64.
const EARLY_SHARE: f64 = 0.2;
/// The first full look keeps its smallest reachable level (2^-n) while that leaves the later
/// looks at least this share of what is left.
const LATER_SHARE: f64 = 0.2;

/// The pair counts at which the judge may accept: with `early`, `EARLY_PAIRS`; then
/// `min_pairs`, then about 1.5x each time up to `max_pairs`, less the looks that could accept
/// nothing the first would not (6, 14, 20 by default; see `spending`).
pub fn looks(s: &JudgeSettings, early: bool) -> Vec<usize> {
    design(s, early).into_iter().map(|(n, _)| n).collect()
}

/// The one-sided level spent at each look of `looks(s, early)`. The early look, where there is
/// one, gets `EARLY_SHARE`; of the rest, the first full look gets half, raised to the smallest
/// level reachable with that many pairs (every pair beyond the threshold: 2^-n) when that still
/// leaves `LATER_SHARE` of it; the later looks share what is left equally. A later look whose
/// share is under 2^(1-n) could only take the smallest of its n pair gains as its bound, which
/// is never above the first look's bound over fewer pairs: it could accept nothing the first
/// look had not, so it is dropped and its share goes to the others (by default the look at 9
/// pairs: 1/64 at 6 pairs, then about 0.0047 at 14 and 20, or 0.0022 with the early look).
pub fn spending(s: &JudgeSettings, early: bool) -> Vec<f64> {
    design(s, early).into_iter().map(|(_, a)| a).collect()
}

/// Whether the design has an early look: the rule has one, the spread is known, and the early
/// look comes before `min_pairs`.
fn has_early(s: &JudgeSettings, early: bool) -> bool {
    early && s.rule == Rule::Mean && EARLY_PAIRS < s.min_pairs.min(s.max_pairs)
}

/// The looks and their levels, dead looks dropped.
fn design(s: &JudgeSettings, early: bool) -> Vec<(usize, f64)> {
    let alpha = (1.0 - s.confidence) / 2.0;
    let early = has_early(s, early);
    let full = if early {
        alpha * (1.0 - EARLY_SHARE)
    } else {
        alpha
    };
    // The first full look comes where its level can be reached at all: a signed-rank bound
    // over n pairs can be no surer than 2^-n (at 99%, 9 pairs rather than 6).
    let reachable = (-(full / 2.0).log2()).ceil() as usize;
    let first = if 0.5f64.powi(s.min_pairs as i32) <= full * (1.0 - LATER_SHARE) {
        s.min_pairs
    } else {
        s.min_pairs.max(reachable).min(s.max_pairs)
    };
    let mut looks = vec![first];
    let mut n = first;
    while n < s.max_pairs {
        n = ((n as f64 * LOOK_GROWTH).ceil() as usize).min(s.max_pairs);
        looks.push(n);
    }
    let full_looks = loop {
        let levels = shares(full, &looks);
        let dead = (1..looks.len()).find(|&k| levels[k] < 0.5f64.powi(looks[k] as i32 - 1));
        match dead {
            Some(k) => {
                looks.remove(k);
            }
            None => break looks.into_iter().zip(levels),
        }
    };
    early
        .then_some((EARLY_PAIRS, alpha * EARLY_SHARE))
        .into_iter()
        .chain(full_looks)
        .collect()
}

/// `budget` shared over the full `looks` as `spending` says.
fn shares(budget: f64, looks: &[usize]) -> Vec<f64> {
    let smallest = 0.5f64.powi(looks[0] as i32);
    let first = if looks.len() == 1 {
        budget
    } else if smallest <= budget * (1.0 - LATER_SHARE) {
        smallest.max(budget / 2.0)
    } else {
        budget / 2.0
    };
    let rest = (budget - first) / (looks.len() - 1).max(1) as f64;
    (0..looks.len())
        .map(|k| if k == 0 { first } else { rest })
        .collect()
}

/// The level to accept at after `n` pairs, if `n` is a look of the design (`early`: the
/// spread was known when the series started).
pub fn level_at(s: &JudgeSettings, early: bool, n: usize) -> Option<f64> {
    design(s, early)
        .into_iter()
        .find(|&(l, _)| l == n)
        .map(|(_, a)| a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(min: usize, max: usize, confidence: f64) -> JudgeSettings {
        JudgeSettings {
            screen_pairs: 0,
            min_pairs: min,
            max_pairs: max,
            confidence,
            floor: crate::measure::objective::Floor::Start,
            rule: Rule::Mean,
        }
    }

    #[test]
    fn looks_grow_to_the_cap_and_levels_add_up_to_the_budget() {
        for (min, max, conf) in [(6, 20, 0.95), (6, 6, 0.95), (8, 200, 0.99), (6, 40, 0.9)] {
            let s = settings(min, max, conf);
            let l = looks(&s, false);
            assert_eq!((l[0], *l.last().unwrap_or(&0)), (min, max), "{l:?}");
            assert!(l.windows(2).all(|w| w[0] < w[1]), "{l:?}");
            let total: f64 = spending(&s, false).iter().sum();
            assert!((total - (1.0 - conf) / 2.0).abs() < 1e-12, "{total}");
        }
        // The look at 9 pairs could only take the smallest pair as its bound (0.0031 < 2^-8),
        // which the look at 6 already did with fewer pairs: dropped, its share passed on.
        assert_eq!(looks(&settings(6, 20, 0.95), false), vec![6, 14, 20]);
        let s = settings(6, 20, 0.95);
        assert_eq!(level_at(&s, false, 6), Some(1.0 / 64.0));
        assert_eq!(level_at(&s, false, 9), None);
        assert!((level_at(&s, false, 14).unwrap() - (0.025 - 1.0 / 64.0) / 2.0).abs() < 1e-15);
        for (min, max, conf) in [(6, 20, 0.95), (6, 40, 0.9), (8, 200, 0.99)] {
            let s = settings(min, max, conf);
            for (k, (&n, a)) in looks(&s, false)
                .iter()
                .zip(spending(&s, false))
                .enumerate()
                .skip(1)
            {
                assert!(
                    a >= 0.5f64.powi(n as i32 - 1),
                    "look {k} at {n} pairs is dead"
                );
            }
        }
    }

    #[test]
    fn a_known_spread_adds_an_early_look_within_the_same_budget() {
        // At 99%, no look at six pairs could reach its level (1/64 is more than the whole
        // budget): the first comes at nine, where 2^-9 is under its 0.25%.
        let strict = settings(6, 20, 0.99);
        assert_eq!(looks(&strict, false)[0], 9);
        assert!(spending(&strict, false)[0] >= 0.5f64.powi(9));
        let s = settings(6, 20, 0.95);
        assert_eq!(looks(&s, true), vec![2, 6, 14, 20]);
        let levels = spending(&s, true);
        assert!(
            (levels.iter().sum::<f64>() - 0.025).abs() < 1e-12,
            "{levels:?}"
        );
        assert!((levels[0] - 0.005).abs() < 1e-12);
        // The look at six pairs keeps its 1/64.
        assert_eq!(level_at(&s, true, 6), Some(1.0 / 64.0));
        // The rule before 2026-12-05 has no early look.
        let old = JudgeSettings {
            rule: Rule::PseudoMedian,
            ..s
        };
        assert_eq!(looks(&old, true), vec![6, 14, 20]);
    }
}
