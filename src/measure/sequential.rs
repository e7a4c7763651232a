//! The judge's sequential design. Looking at the data after every pair and accepting as soon as
//! a fixed-level interval clears the threshold accepts far more often than the level says (about
//! 8% instead of 2.5% at the threshold, over 6..20 pairs). So the judge may accept only at a few
//! looks, and each look gets a share of the one-sided error `(1 - confidence) / 2`; the shares
//! add up to it, so the chance of a false acceptance over all looks is at most that (a union
//! bound: it holds whatever the data, and is conservative because looks are correlated).
//! Rejecting early needs no share: it can only lower the acceptance rate.

use super::metric::JudgeSettings;

/// Each look comes after about this many times the pairs of the one before.
const LOOK_GROWTH: f64 = 1.5;

/// The pair counts at which the judge may accept: `min_pairs`, then about 1.5x each time up
/// to `max_pairs`, less the looks that could accept nothing the first would not (6, 14, 20 by
/// default; see `spending`).
pub fn looks(s: &JudgeSettings) -> Vec<usize> {
    design(s).into_iter().map(|(n, _)| n).collect()
}

/// The one-sided level spent at each look of `looks(s)`. The first look gets half the budget,
/// raised to the smallest level reachable with that many pairs (every pair beyond the
/// threshold: 2^-n) when that still leaves a third of the budget; the later looks share the rest
/// equally. A later look whose share is under 2^(1-n) could only take the smallest of its n
/// pair gains as its bound, which is never above the first look's bound over fewer pairs: it
/// could accept nothing the first look had not, so it is dropped and its share goes to the
/// others (by default the look at 9 pairs: 1/64 at 6 pairs, then about 0.0047 at 14 and 20).
pub fn spending(s: &JudgeSettings) -> Vec<f64> {
    design(s).into_iter().map(|(_, a)| a).collect()
}

/// The looks and their levels, dead looks dropped.
fn design(s: &JudgeSettings) -> Vec<(usize, f64)> {
    let mut looks = vec![s.min_pairs];
    let mut n = s.min_pairs;
    while n < s.max_pairs {
        n = ((n as f64 * LOOK_GROWTH).ceil() as usize).min(s.max_pairs);
        looks.push(n);
    }
    loop {
        let levels = shares(s, &looks);
        let dead = (1..looks.len()).find(|&k| levels[k] < 0.5f64.powi(looks[k] as i32 - 1));
        match dead {
            Some(k) => {
                looks.remove(k);
            }
            None => return looks.into_iter().zip(levels).collect(),
        }
    }
}

/// The budget shared over `looks` as `spending` says.
fn shares(s: &JudgeSettings, looks: &[usize]) -> Vec<f64> {
    let alpha = (1.0 - s.confidence) / 2.0;
    let smallest = 0.5f64.powi(s.min_pairs as i32);
    let first = if looks.len() == 1 {
        alpha
    } else if smallest <= alpha * 2.0 / 3.0 {
        smallest.max(alpha / 2.0)
    } else {
        alpha / 2.0
    };
    let rest = (alpha - first) / (looks.len() - 1).max(1) as f64;
    (0..looks.len())
        .map(|k| if k == 0 { first } else { rest })
        .collect()
}

/// The level to accept at after `n` pairs, if `n` is a look.
pub fn level_at(s: &JudgeSettings, n: usize) -> Option<f64> {
    design(s).into_iter().find(|&(l, _)| l == n).map(|(_, a)| a)
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
        }
    }

    #[test]
    fn looks_grow_to_the_cap_and_levels_add_up_to_the_budget() {
        for (min, max, conf) in [(6, 20, 0.95), (6, 6, 0.95), (8, 200, 0.99), (6, 40, 0.9)] {
            let s = settings(min, max, conf);
            let l = looks(&s);
            assert_eq!((l[0], *l.last().unwrap_or(&0)), (min, max), "{l:?}");
            assert!(l.windows(2).all(|w| w[0] < w[1]), "{l:?}");
            let total: f64 = spending(&s).iter().sum();
            assert!((total - (1.0 - conf) / 2.0).abs() < 1e-12, "{total}");
        }
        // The look at 9 pairs could only take the smallest pair as its bound (0.0031 < 2^-8),
        // which the look at 6 already did with fewer pairs: dropped, its share passed on.
        assert_eq!(looks(&settings(6, 20, 0.95)), vec![6, 14, 20]);
        let s = settings(6, 20, 0.95);
        assert_eq!(level_at(&s, 6), Some(1.0 / 64.0));
        assert_eq!(level_at(&s, 9), None);
        assert!((level_at(&s, 14).unwrap() - (0.025 - 1.0 / 64.0) / 2.0).abs() < 1e-15);
        for (min, max, conf) in [(6, 20, 0.95), (6, 40, 0.9), (8, 200, 0.99)] {
            let s = settings(min, max, conf);
            for (k, (&n, a)) in looks(&s).iter().zip(spending(&s)).enumerate().skip(1) {
                assert!(
                    a >= 0.5f64.powi(n as i32 - 1),
                    "look {k} at {n} pairs is dead"
                );
            }
        }
    }
}
