//! Drawing assignments for the searches that learn from measurements: a fresh one uniformly,
//! or one from a categorical distribution per parameter (a Parzen estimate), and that estimate.

use crate::search::space::{ParamSpace, fresh, sweep};
use crate::search::tuning::FRESH_DRAWS;
use crate::{Params, ProposalContext};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// A fresh assignment drawn uniformly, else found by `sweep`; `None` when none is left.
pub(crate) fn random_fresh(
    space: &ParamSpace,
    ctx: &ProposalContext,
    rng: &mut ChaCha8Rng,
) -> Option<Params> {
    (0..FRESH_DRAWS)
        .map(|_| space.random(rng))
        .find(|p| fresh(space, p, ctx))
        .or_else(|| sweep(space, ctx, rng))
}

/// An assignment drawn from one categorical distribution per parameter over its declared
/// values (`density[name][i]`: the chance of the i-th value).
pub(crate) fn draw(
    space: &ParamSpace,
    density: &BTreeMap<String, Vec<f64>>,
    rng: &mut ChaCha8Rng,
) -> Params {
    let mut p = Params::new();
    for (name, vals) in &space.values {
        let mut u = rng.random::<f64>();
        let mut at = vals.len() - 1;
        for (i, x) in density[name].iter().enumerate() {
            if u < *x {
                at = i;
                break;
            }
            u -= x;
        }
        p.insert(name.clone(), vals[at].clone());
    }
    p
}

/// The Parzen estimate of `points` over `space`: per parameter, each value's count, plus
/// `prior` spread evenly over its values (so none is ever ruled out), plus `neighbour` lent to
/// the values declared on either side of each one counted; normalised.
pub(crate) fn density<'a>(
    space: &ParamSpace,
    points: impl Iterator<Item = &'a Params> + Clone,
    prior: f64,
    neighbour: f64,
) -> BTreeMap<String, Vec<f64>> {
    space
        .values
        .iter()
        .map(|(name, vals)| {
            let k = vals.len();
            let mut w = vec![prior / k as f64; k];
            for p in points.clone() {
                let Some(at) = p.get(name).and_then(|v| vals.iter().position(|x| x == v)) else {
                    continue;
                };
                w[at] += 1.0;
                if at > 0 {
                    w[at - 1] += neighbour;
                }
                if at + 1 < k {
                    w[at + 1] += neighbour;
                }
            }
            let total: f64 = w.iter().sum();
            (name.clone(), w.into_iter().map(|x| x / total).collect())
        })
        .collect()
}
