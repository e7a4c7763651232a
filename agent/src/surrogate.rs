//! The model-based search's surrogate: a model of the objective over the declared values (the
//! effects of features.rs, fitted by ridge regression), optimistic about values measured few
//! times or never.

use crate::Params;
use crate::features::{Features, Group, indices};
use crate::search::ParamSpace;

/// Shrinks each value's effect towards zero: with few measurements the mean dominates.
const RIDGE: f64 = 0.5;
/// Objective credited to a value never measured, shrinking as 1/sqrt(1 + times measured).
const BONUS: f64 = 0.15;

/// The optimism added to an effect never measured, and to one measured `n` times (divided by
/// `sqrt(1 + n)`).
#[derive(Clone, Copy)]
struct Bonus {
    untried: f64,
    measured: f64,
}

pub(crate) struct Surrogate {
    mean: f64,
    /// Per feature column: (effect, times measured).
    effects: Vec<(f64, usize)>,
}

/// Solves `a x = b` for a small symmetric positive definite `a` (Gaussian elimination).
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for i in 0..n {
        let pivot = (i..n)
            .max_by(|x, y| a[*x][i].abs().total_cmp(&a[*y][i].abs()))
            .unwrap_or(i);
        a.swap(i, pivot);
        b.swap(i, pivot);
        let d = a[i][i];
        if d.abs() < 1e-12 {
            continue;
        }
        for r in (i + 1)..n {
            let f = a[r][i] / d;
            if f == 0.0 {
                continue;
            }
            let (top, bottom) = a.split_at_mut(r);
            for (x, y) in bottom[0][i..].iter_mut().zip(&top[i][i..]) {
                *x -= f * y;
            }
            b[r] -= f * b[i];
        }
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let s: f64 = ((i + 1)..n).map(|c| a[i][c] * x[c]).sum();
        x[i] = if a[i][i].abs() < 1e-12 {
            0.0
        } else {
            (b[i] - s) / a[i][i]
        };
    }
    x
}

impl Surrogate {
    /// Fits the model to (objective, assignment) pairs; a failed one (-inf) counts as a little
    /// worse than the worst measured.
    pub(crate) fn fit(space: &ParamSpace, features: &Features, observed: &[(f64, Params)]) -> Self {
        let finite: Vec<f64> = observed
            .iter()
            .map(|(y, _)| *y)
            .filter(|y| y.is_finite())
            .collect();
        let floor = finite.iter().copied().fold(0.0, f64::min) - 0.5;
        let ys: Vec<f64> = observed
            .iter()
            .map(|(y, _)| if y.is_finite() { *y } else { floor })
            .collect();
        let mean = if ys.is_empty() {
            0.0
        } else {
            ys.iter().sum::<f64>() / ys.len() as f64
        };
        let dim = features.dim;
        let mut a = vec![vec![0.0; dim]; dim];
        let mut b = vec![0.0; dim];
        let mut counts = vec![0usize; dim];
        for ((_, p), y) in observed.iter().zip(&ys) {
            let at = indices(space, p);
            let cols: Vec<usize> = features.columns(&at).map(|(_, c)| c).collect();
            for &i in &cols {
                counts[i] += 1;
                b[i] += y - mean;
                for &j in &cols {
                    a[i][j] += 1.0;
                }
            }
        }
        for (i, row) in a.iter_mut().enumerate() {
            row[i] += RIDGE;
        }
        let x = solve(a, b);
        Surrogate {
            mean,
            effects: x.into_iter().zip(counts).collect(),
        }
    }

    /// The predicted objective of `p` plus the bonus for its seldom-measured values. A value
    /// never measured is credited as `untried` says: optimism, so every declared value gets
    /// tried early instead of never when the mean is dragged down by the worst values.
    pub(crate) fn optimistic(&self, space: &ParamSpace, features: &Features, p: &Params) -> f64 {
        self.predict(
            space,
            features,
            p,
            Bonus {
                untried: BONUS,
                measured: BONUS,
            },
        )
    }

    /// What a race may still hope for from an assignment (given as `indices`): the bonus only
    /// for effects never measured (a combination never tried may be that much better than the
    /// best of its group so far).
    pub(crate) fn hopeful(&self, features: &Features, at: &[usize]) -> f64 {
        self.predict_at(
            features,
            at,
            Bonus {
                untried: BONUS,
                measured: 0.0,
            },
        )
    }

    fn predict(&self, space: &ParamSpace, features: &Features, p: &Params, bonus: Bonus) -> f64 {
        self.predict_at(features, &indices(space, p), bonus)
    }

    fn predict_at(&self, features: &Features, at: &[usize], bonus: Bonus) -> f64 {
        self.mean
            + features
                .columns(at)
                .map(|(g, col)| match self.effects[col] {
                    (_, 0) => self.untried(features, g) + bonus.untried,
                    (effect, n) => effect + bonus.measured / (1.0 + n as f64).sqrt(),
                })
                .sum::<f64>()
    }

    /// The effect credited to a value never measured in group `g`: the best measured in the
    /// group or, for a branch never measured at all, the best measured for the same parameter
    /// under any branch (a new algorithm is credited with the best block sizes seen so far);
    /// never below zero.
    fn untried(&self, features: &Features, g: &Group) -> f64 {
        let best = |g: &Group| {
            self.effects[g.offset..g.offset + g.size]
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(x, _)| *x)
                .fold(f64::NEG_INFINITY, f64::max)
        };
        let own = best(g);
        if own.is_finite() || g.under.is_none() {
            return own.max(0.0);
        }
        features
            .groups
            .iter()
            .filter(|h| h.param == g.param && h.under.is_some())
            .map(best)
            .fold(0.0, f64::max)
    }
}
