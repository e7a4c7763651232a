//! The model-based search's surrogate: an additive model of the objective over the declared
//! values (one effect per parameter value, fitted by ridge regression, so unmeasured values
//! stay at the mean), with an optimistic bonus for values measured few times.

use crate::Params;
use crate::search::ParamSpace;

/// Shrinks each value's effect towards zero: with few measurements the mean dominates.
const RIDGE: f64 = 0.5;
/// Objective credited to a value never measured, shrinking as 1/sqrt(1 + times measured).
const BONUS: f64 = 0.15;

pub(crate) struct Surrogate {
    mean: f64,
    /// Per parameter (in the space's order), per value: (effect, times measured).
    effects: Vec<Vec<(f64, usize)>>,
}

/// Index of every parameter's value in `p`, in the space's order.
fn indices(space: &ParamSpace, p: &Params) -> Vec<usize> {
    space
        .values
        .iter()
        .map(|(k, vals)| {
            p.get(k)
                .and_then(|v| vals.iter().position(|x| x == v))
                .unwrap_or(0)
        })
        .collect()
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
    pub(crate) fn fit(space: &ParamSpace, observed: &[(f64, Params)]) -> Self {
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
        let sizes: Vec<usize> = space.values.values().map(Vec::len).collect();
        let offsets: Vec<usize> = sizes
            .iter()
            .scan(0, |acc, n| {
                let at = *acc;
                *acc += n;
                Some(at)
            })
            .collect();
        let dim: usize = sizes.iter().sum();
        let mut a = vec![vec![0.0; dim]; dim];
        let mut b = vec![0.0; dim];
        let mut counts = vec![0usize; dim];
        for ((_, p), y) in observed.iter().zip(&ys) {
            let cols: Vec<usize> = indices(space, p)
                .iter()
                .zip(&offsets)
                .map(|(i, o)| o + i)
                .collect();
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
        let effects = offsets
            .iter()
            .zip(&sizes)
            .map(|(o, n)| (*o..o + n).map(|i| (x[i], counts[i])).collect())
            .collect();
        Surrogate { mean, effects }
    }

    /// The predicted objective of `p` plus the bonus for its seldom-measured values. A value
    /// never measured is credited with its parameter's best measured effect: optimism, so every
    /// declared value gets tried early instead of never when the mean is dragged down by the
    /// worst values.
    pub(crate) fn optimistic(&self, space: &ParamSpace, p: &Params) -> f64 {
        self.predict(space, p, BONUS)
    }

    /// The same, without the bonus for seldom-measured values (unmeasured ones stay optimistic).
    pub(crate) fn expected(&self, space: &ParamSpace, p: &Params) -> f64 {
        self.predict(space, p, 0.0)
    }

    fn predict(&self, space: &ParamSpace, p: &Params, bonus: f64) -> f64 {
        self.mean
            + indices(space, p)
                .iter()
                .zip(&self.effects)
                .map(|(i, e)| {
                    let (effect, n) = e[*i];
                    if n == 0 {
                        let best = e
                            .iter()
                            .filter(|(_, n)| *n > 0)
                            .map(|(x, _)| *x)
                            .fold(0.0, f64::max);
                        best + bonus
                    } else {
                        effect + bonus / (1.0 + n as f64).sqrt()
                    }
                })
                .sum::<f64>()
    }
}
