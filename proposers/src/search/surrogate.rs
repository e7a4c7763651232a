//! The model-based search's surrogate: a model of the objective over the declared values (the
//! effects of features.rs, fitted by ridge regression, neighbouring values' effects tied
//! together), optimistic about values measured few times or never.

use crate::Params;
use crate::search::features::{Features, Group, indices};
use crate::search::space::ParamSpace;
use crate::search::tuning::{BONUS, CLIP, FUSE, RIDGE};

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
    /// Fits the model to (objective, assignment) pairs, each at least `CLIP` under the best; a
    /// failed one (-inf) counts as a little worse than that.
    pub(crate) fn fit(space: &ParamSpace, features: &Features, observed: &[(f64, Params)]) -> Self {
        let best = observed
            .iter()
            .map(|(y, _)| *y)
            .filter(|y| y.is_finite())
            .fold(f64::NEG_INFINITY, f64::max);
        let clip = if best.is_finite() { best - CLIP } else { 0.0 };
        let floor = clip - 0.5;
        let ys: Vec<f64> = observed
            .iter()
            .map(|(y, _)| if y.is_finite() { y.max(clip) } else { floor })
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
        for g in &features.groups {
            for v in 1..g.size {
                let (i, j) = (g.offset + v - 1, g.offset + v);
                a[i][i] += FUSE;
                a[j][j] += FUSE;
                a[i][j] -= FUSE;
                a[j][i] -= FUSE;
            }
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
        self.optimistic_at(features, &indices(space, p))
    }

    /// `optimistic` for an assignment given as `indices`.
    pub(crate) fn optimistic_at(&self, features: &Features, at: &[usize]) -> f64 {
        self.predict_at(
            features,
            at,
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

    fn predict_at(&self, features: &Features, at: &[usize], bonus: Bonus) -> f64 {
        self.mean
            + features
                .columns(at)
                .map(|(g, col)| match self.effects[col] {
                    (_, 0) => self.untried(features, g, col - g.offset) + bonus.untried,
                    (effect, n) => effect + bonus.measured / (1.0 + n as f64).sqrt(),
                })
                .sum::<f64>()
    }

    /// The effect credited to value `v`, never measured in group `g`: the best measured in the
    /// group or, for a branch never measured at all, the best measured for the same parameter
    /// under any branch (a new algorithm is credited with the best block sizes seen so far);
    /// never below zero. Under a branch, the value's main effect was learnt from the other
    /// algorithms, so the credit also makes up for it: the value with its branch effect is
    /// credited with at least the best measured value's, main and branch effects together (a
    /// block size poor for i-k-j may be the best for register tiles).
    fn untried(&self, features: &Features, g: &Group, v: usize) -> f64 {
        let best = |g: &Group| {
            self.effects[g.offset..g.offset + g.size]
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(x, _)| *x)
                .fold(f64::NEG_INFINITY, f64::max)
        };
        let own = best(g);
        let Some(main) = g.under.and(features.groups.get(g.param)) else {
            return own.max(0.0);
        };
        if !own.is_finite() {
            return features
                .groups
                .iter()
                .filter(|h| h.param == g.param && h.under.is_some())
                .map(best)
                .fold(0.0, f64::max);
        }
        let total = |i: usize| self.effects[main.offset + i].0 + self.effects[g.offset + i].0;
        let best_total = (0..g.size)
            .filter(|i| self.effects[g.offset + i].1 > 0)
            .map(total)
            .fold(f64::NEG_INFINITY, f64::max);
        own.max(0.0)
            .max(best_total - self.effects[main.offset + v].0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::features::tests::space;
    use serde_json::Value;
    use std::collections::BTreeMap;

    fn assignment(algo: i64, block: i64, rows: i64) -> Params {
        BTreeMap::from([
            ("ALGO".to_string(), Value::from(algo)),
            ("BLOCK".to_string(), Value::from(block)),
            ("ROWS".to_string(), Value::from(rows)),
        ])
    }

    /// BLOCK 0 is poor for ALGO 0, whose measurements teach its main effect; ALGO 2 never tried
    /// it. The proposals and the race must still credit ALGO 2 with BLOCK 0 with ALGO 2's best
    /// so far plus the bonus, not that minus what BLOCK 0 costs ALGO 0.
    #[test]
    fn a_block_size_never_tried_under_an_algorithm_is_not_judged_by_another() {
        let space = space(3, &[("tiles", "ALGO != 2 || ROWS == 2")]);
        let features = Features::new(&space, Some(&space.all_valid()));
        let mut observed = Vec::new();
        for rows in 1..4 {
            observed.push((-1.0, assignment(0, 0, rows)));
            for block in 1..4 {
                observed.push((0.0, assignment(0, block, rows)));
            }
        }
        for block in 1..4 {
            observed.push((0.5, assignment(2, block, 2)));
        }
        let model = Surrogate::fit(&space, &features, &observed);
        let at = |p: &Params| indices(&space, p);
        let tried = model.hopeful(&features, &at(&assignment(2, 1, 2)));
        let untried = model.hopeful(&features, &at(&assignment(2, 0, 2)));
        assert!(untried >= tried + BONUS - 1e-9, "{untried} vs {tried}");
        let proposed = |p: &Params| model.optimistic(&space, &features, p);
        assert!(proposed(&assignment(2, 0, 2)) > proposed(&assignment(2, 1, 2)));
        // Where BLOCK 0 is measured, it is predicted as measured: no credit, no bonus.
        let poor = model.hopeful(&features, &at(&assignment(0, 0, 1)));
        assert!(
            poor < model.hopeful(&features, &at(&assignment(0, 1, 1))),
            "{poor}"
        );
    }

    /// A catastrophic measurement (here 3 rows; on matmul-c's decode, 6 rows losing a case at a
    /// fifth of the incumbent's speed, its score pulled down by the per-case penalty) says that it
    /// is poor, not by how much each of its values is: clipped, it cannot make a good block size
    /// it shares look hopeless.
    #[test]
    fn one_catastrophic_measurement_does_not_condemn_the_values_it_shares() {
        let space = space(1, &[]);
        let features = Features::new(&space, Some(&space.all_valid()));
        let mut observed = vec![(-8.0, assignment(0, 0, 3))];
        for block in 1..4 {
            observed.push((0.1 * block as f64, assignment(0, block, 1)));
            observed.push((0.1 * block as f64 - 0.05, assignment(0, block, 2)));
        }
        let model = Surrogate::fit(&space, &features, &observed);
        let at = |p: &Params| indices(&space, p);
        let untouched = model.hopeful(&features, &at(&assignment(0, 0, 1)));
        // Unclipped, it is predicted at -3.2, as far below the others as the penalty made the
        // catastrophe; clipped, within the clip of the best measured (0.3).
        assert!(untouched > 0.3 - CLIP, "{untouched}");
        // Still the poorest block size of the four, and 3 rows the poorest row count.
        for block in 1..4 {
            assert!(untouched < model.hopeful(&features, &at(&assignment(0, block, 1))));
        }
        assert!(
            model.hopeful(&features, &at(&assignment(0, 1, 3)))
                < model.hopeful(&features, &at(&assignment(0, 1, 2)))
        );
    }

    /// One poor assignment holds BLOCK 1 and ROWS 2, each measured nowhere else. BLOCK 0, next
    /// to BLOCK 1, is poor wherever measured; ROWS 1 and 3, on either side of ROWS 2, are not.
    /// With neighbours' effects tied, BLOCK 1 takes more of the blame; untied, the two would
    /// share it evenly.
    #[test]
    fn a_value_shares_in_its_neighbours_record() {
        let space = space(1, &[]);
        let features = Features::new(&space, Some(&space.all_valid()));
        let mut observed = vec![(-1.0, assignment(0, 1, 2))];
        for rows in [1, 3] {
            observed.push((-1.0, assignment(0, 0, rows)));
            for block in 2..4 {
                observed.push((0.0, assignment(0, block, rows)));
            }
        }
        let model = Surrogate::fit(&space, &features, &observed);
        let effect =
            |param: usize, value: usize| model.effects[features.groups[param].offset + value].0;
        // BLOCK is the space's second parameter and ROWS its third (ROWS 2: its second value).
        let (block_1, rows_2) = (effect(1, 1), effect(2, 1));
        assert!(rows_2 > block_1 + 0.04, "{rows_2} vs {block_1}");
    }
}
