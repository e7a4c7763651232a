//! The tree-structured Parzen estimator (TPE; Bergstra et al., 2011) over a task's `[params]`,
//! with Optuna's default constants, racing like the model search (race.rs). Measured
//! assignments are ranked by what the judge could accept of them (scoring.rs); the best
//! `gamma(n)` form the
//! "good" density l and the rest the "bad" density g, one categorical distribution per
//! parameter with a uniform prior (sharper than Optuna's own kernels, which scored worse:
//! docs/search.md); the next proposal is the fresh assignment with the highest
//! l/g among draws from l. Until a few assignments are measured, proposals are uniform draws:
//! Optuna's ten, fewer in a run too short or a space too small for ten to leave room for the
//! model (`startup`, with tuning.rs's `RUN_SHARE`). Its other constants are Optuna's.

use crate::search::race::{Race, Step, unsettled_near_tie};
use crate::search::sample::{density, draw, random_fresh};
use crate::search::scoring::Goal;
use crate::search::space::{ParamSpace, fresh};
use crate::search::tuning::{BIG_STEP, RUN_SHARE};
use crate::{
    AgentError, Origin, Params, Proposal, ProposalContext, ProposedChange, Proposer, Reach,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashSet};

/// Uniform draws until this many assignments are measured (Optuna's `n_startup_trials`), in a
/// run and a space large enough.
const STARTUP: usize = 10;
/// Draws from l among which the best l/g is proposed (Optuna's `n_ei_candidates`).
const CANDIDATES: usize = 24;
/// Draws attempted to find them: many fall on measured or invalid assignments.
const ATTEMPTS: usize = 2_000;
/// Weight of the uniform prior in each density (Optuna's `prior_weight`).
const PRIOR_WEIGHT: f64 = 1.0;

/// How many of `n` ranked assignments form the good density: Optuna's default gamma,
/// min(ceil(0.1 n), 25).
fn gamma(n: usize) -> usize {
    n.div_ceil(10).min(25)
}

pub struct TpeProposer {
    space: ParamSpace,
    rng: ChaCha8Rng,
    goal: Goal,
    race: Race,
    /// Uniform draws before TPE models, set at the run's first proposal.
    startup: Option<usize>,
}

/// One categorical distribution per parameter over its declared values.
type Density = BTreeMap<String, Vec<f64>>;

impl TpeProposer {
    pub fn new(space: ParamSpace, seed: u64, goal: Goal) -> Self {
        TpeProposer {
            space,
            rng: ChaCha8Rng::seed_from_u64(seed),
            goal,
            race: Race::default(),
            startup: None,
        }
    }

    /// The start-up draws of a run that has `remaining` candidates (its budget, at its first
    /// proposal): Optuna's ten, or a `RUN_SHARE`th of the run or of the space where that is
    /// fewer, and at least one.
    fn startup(&mut self, remaining: Option<usize>) -> usize {
        let space = self.space.size();
        *self.startup.get_or_insert_with(|| {
            let short = remaining.unwrap_or(usize::MAX).min(space);
            STARTUP.min(short / RUN_SHARE).max(1)
        })
    }

    fn log_density(&self, density: &Density, p: &Params) -> f64 {
        self.space
            .values
            .iter()
            .map(|(name, vals)| {
                let at = p.get(name).and_then(|v| vals.iter().position(|x| x == v));
                at.map_or(f64::NEG_INFINITY, |i| density[name][i].ln())
            })
            .sum()
    }

    /// The next fresh assignment and how it was chosen: `Explore` for a uniform draw, `Parzen`
    /// for the best l/g among draws from l. `own`: the assignments this context's search
    /// measured, best first.
    fn choose(
        &mut self,
        own: &[&Params],
        ctx: &ProposalContext,
        startup: usize,
    ) -> Option<(Params, Reach)> {
        if own.len() < startup {
            return random_fresh(&self.space, ctx, &mut self.rng).map(|p| (p, Reach::Explore));
        }
        let split = gamma(own.len());
        let good = density(&self.space, own[..split].iter().copied(), PRIOR_WEIGHT, 0.0);
        let bad = density(&self.space, own[split..].iter().copied(), PRIOR_WEIGHT, 0.0);
        let mut best: Option<(f64, Params)> = None;
        let mut found = 0;
        for _ in 0..ATTEMPTS {
            if found == CANDIDATES {
                break;
            }
            let p = draw(&self.space, &good, &mut self.rng);
            if !fresh(&self.space, &p, ctx) {
                continue;
            }
            found += 1;
            let ratio = self.log_density(&good, &p) - self.log_density(&bad, &p);
            if best.as_ref().is_none_or(|(r, _)| ratio > *r) {
                best = Some((ratio, p));
            }
        }
        match best {
            Some((_, p)) => Some((p, Reach::Parzen)),
            None => random_fresh(&self.space, ctx, &mut self.rng).map(|p| (p, Reach::Explore)),
        }
    }
}

/// The measured assignments the densities are built from, best first: all but those carried
/// from another context (a warm start), which rank like any other but would pull the draws. As
/// one of the few good points, a carried configuration drew every proposal to its values, and
/// where it is a narrow local best on this landscape the run never left its neighbourhood
/// (A4000's best on A100: 8 of 10 runs short of 0.95 of the best in 300 candidates, against 1
/// of 10 from the task as given; docs/experiments/2026-12-07-search-carried-warm-starts.md).
fn own_measured<'a>(ranked: &'a [(f64, Params)], ctx: &ProposalContext) -> Vec<&'a Params> {
    let carried: HashSet<&Params> = ctx
        .observations
        .iter()
        .filter(|o| o.carried)
        .map(|o| &o.params)
        .collect();
    ranked
        .iter()
        .map(|(_, p)| p)
        .filter(|p| !carried.contains(p))
        .collect()
}

#[async_trait::async_trait]
impl Proposer for TpeProposer {
    fn name(&self) -> &str {
        "search"
    }

    fn wants_observations(&self) -> bool {
        true
    }

    async fn next(&mut self, ctx: &ProposalContext) -> Result<Option<Proposal>, AgentError> {
        let ranked = self.goal.ranked(ctx);
        let own = own_measured(&ranked, ctx);
        let startup = self.startup(ctx.remaining);
        let chosen = self.choose(&own, ctx, startup);
        let mut screen_only = false;
        if ctx.can_screen {
            let threshold = (1.0 + self.goal.min_gain).ln();
            // TPE has no predicted gain to hold a race open: a fresh assignment left is
            // enough to go on screening, and the race settles on its own counts.
            let hope = chosen.is_some().then_some(f64::NEG_INFINITY);
            let warming = own.len() < startup;
            match self.race.step(ctx, &ranked, threshold, hope, warming) {
                Step::Confirm(leader, screened) => {
                    let again = (screened > BIG_STEP.ln())
                        .then(|| unsettled_near_tie(&leader, screened, &ranked, ctx))
                        .flatten();
                    let (params, origin, note) = match again {
                        Some(p) => (
                            p,
                            Origin::Rescreen,
                            "a near-tie at the top of the race: the rest of its screen, before the leader is judged in full".to_string(),
                        ),
                        None => (
                            leader,
                            Origin::Confirm,
                            format!(
                                "the race's leader ({:+.1}% on the incumbent in screening, the best of its contenders), judged in full",
                                screened.exp_m1() * 100.0
                            ),
                        ),
                    };
                    return Ok(Some(Proposal {
                        note: Some(note),
                        screen_only: origin.screen_only(),
                        origin,
                        change: ProposedChange::Params(params),
                        usage: None,
                    }));
                }
                Step::Done => return Ok(None),
                Step::Judge => {}
                Step::Screen => screen_only = true,
            }
        }
        Ok(chosen.map(|(p, how)| Proposal {
            note: Some(match how {
                Reach::Parzen => format!(
                    "TPE: the best l/g of {CANDIDATES} draws from the best {} of {} measured",
                    gamma(own.len()),
                    own.len()
                ),
                _ => format!(
                    "a uniform draw ({} of {startup} measured before TPE)",
                    own.len()
                ),
            }),
            origin: if screen_only {
                Origin::Screen
            } else {
                Origin::Model(how)
            },
            change: ProposedChange::Params(p),
            usage: None,
            screen_only,
        }))
    }
}

#[cfg(test)]
mod tests;
