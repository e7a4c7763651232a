//! Model-based search over a task's `[params]`. Every assignment measured in the context (earlier
//! runs included) is scored by what the judge could accept: the mean per-case gain over the
//! incumbent, minus a penalty for any case past the per-case tolerance. A surrogate (one effect
//! per declared value, and per value under each choice of algorithm: features.rs; ridge-fitted
//! with neighbouring values' effects tied, optimistic for values seldom or never measured) picks
//! the next proposal: among local moves around the race's leader (else the incumbent) three times
//! in four, else among every one-knob neighbour of the incumbent and of the best measured and
//! draws from the density of the best quarter measured (a Parzen estimate, as in TPE).
//! Where screening is honoured, proposals race (race.rs): contenders are only screened, and the
//! leader is judged in full once its untried one-step neighbours have been screened too, and
//! the near-ties at the top of a race against a far slower incumbent have had their whole screen.

use crate::search::features::{Features, indices};
use crate::search::race::{Race, Step, unsettled_near_tie};
use crate::search::sample::{density, draw, random_fresh};
use crate::search::space::{ParamSpace, fresh, untried};
use crate::search::surrogate::Surrogate;
use crate::search::tuning::{
    BIG_STEP, DENSITY_CANDIDATES, DENSITY_DRAWS, GOOD_SHARE, LOCAL_MOVES, MAX_ENUMERATED, NEAR,
    NEIGHBOUR, PRIOR, WIDE_RATE,
};
use crate::{
    AgentError, Goal, Origin, Params, Proposal, ProposalContext, ProposedChange, Proposer, Reach,
    params_key,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// The surrogate's choice among the fresh candidates.
struct Modelled {
    params: Params,
    /// The pool it was chosen from: `Local` or `Wide`.
    how: Reach,
    /// The best objective the surrogate hopes for from a fresh assignment (any, where the space
    /// was enumerated, else one of the pool): expected, plus the bonus for effects never measured.
    hope: f64,
    /// The surrogate it was chosen by.
    model: Surrogate,
}

pub struct ModelProposer {
    space: ParamSpace,
    /// Every valid assignment (its key and value indices), where the space is small enough to
    /// enumerate.
    valid: Option<Vec<(String, Vec<usize>)>>,
    features: Features,
    rng: ChaCha8Rng,
    goal: Goal,
    race: Race,
}

impl ModelProposer {
    pub fn new(mut space: ParamSpace, seed: u64, goal: Goal) -> Self {
        let all = space.index(MAX_ENUMERATED);
        let features = Features::new(&space, all.as_deref());
        let valid = all.map(|all| {
            all.iter()
                .map(|p| (params_key(p), indices(&space, p)))
                .collect()
        });
        ModelProposer {
            features,
            valid,
            space,
            rng: ChaCha8Rng::seed_from_u64(seed),
            goal,
            race: Race::default(),
        }
    }

    /// Which of the enumerated (valid) assignments are `untried`, so that each proposal decides
    /// it once per assignment; empty when the space was too large.
    fn fresh_flags(&self, ctx: &ProposalContext) -> Vec<bool> {
        let incumbent = ctx.incumbent_params.as_ref().map(params_key);
        self.valid
            .iter()
            .flatten()
            .map(|(key, _)| untried(ctx, incumbent.as_deref(), key))
            .collect()
    }

    /// `search::fresh`, looked up in `flags` where the space was enumerated.
    fn is_fresh(&self, flags: &[bool], p: &Params, ctx: &ProposalContext) -> bool {
        match self.valid {
            Some(_) => self
                .space
                .position(p)
                .is_some_and(|i| flags.get(i).copied().unwrap_or(false)),
            None => fresh(&self.space, p, ctx),
        }
    }

    /// Before a race's leader (`screened`: its objective in screening) is judged in full, the
    /// fresh assignments one declared value away from it on one knob are screened, the most
    /// promising first: the surrogate's hope for them can be wrong, and once the leader is the
    /// incumbent, a neighbour a few percent ahead of it is too close to `min_gain` to confirm.
    /// When the leader is more than `BIG_STEP` ahead of the incumbent, only those the surrogate
    /// rates within `NEAR` of it: a step that large is seldom the last, the next race screens
    /// around it, and screening every first race's neighbours cost more than it found. None
    /// when the run has no candidates to spare.
    fn unscreened_neighbour(
        &self,
        leader: &Params,
        screened: f64,
        model: &Surrogate,
        flags: &[bool],
        ctx: &ProposalContext,
    ) -> Option<Params> {
        if ctx.remaining.is_some_and(|r| r <= 2) {
            return None;
        }
        let far = screened > BIG_STEP.ln();
        self.space
            .adjacent(leader)
            .into_iter()
            .filter(|p| self.is_fresh(flags, p, ctx))
            .map(|p| (model.optimistic(&self.space, &self.features, &p), p))
            .filter(|(y, _)| !far || *y >= screened - NEAR)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, p)| p)
    }

    /// The fresh candidate with the best optimistic prediction of the surrogate, and whether it
    /// came from local moves around `base` or the incumbent (three proposals in four) or the wide
    /// pool: every one-knob neighbour of the incumbent and of the best measured, and draws from
    /// the density of the best quarter measured. Either pool also holds, where the space has an
    /// algorithm choice, each algorithm's fresh assignment with the best optimistic prediction.
    fn modelled(
        &mut self,
        ranked: &[(f64, Params)],
        ctx: &ProposalContext,
        base: Option<&Params>,
        flags: &[bool],
    ) -> Option<Modelled> {
        if ranked.is_empty() {
            return None;
        }
        let n_good = ((ranked.len() as f64 * GOOD_SHARE).ceil() as usize).clamp(1, ranked.len());
        let good: Vec<&Params> = ranked[..n_good].iter().map(|(_, p)| p).collect();
        let mut pool: Vec<Params> = Vec::new();
        if !self.rng.random_bool(WIDE_RATE)
            && let Some(inc) = base.or(ctx.incumbent_params.as_ref())
        {
            for _ in 0..LOCAL_MOVES {
                let p = self.space.local(inc, &mut self.rng);
                if self.is_fresh(flags, &p, ctx) && !pool.contains(&p) {
                    pool.push(p);
                }
            }
        }
        let how = if pool.is_empty() {
            Reach::Wide
        } else {
            Reach::Local
        };
        if pool.is_empty() {
            for base in ctx.incumbent_params.iter().chain(good.first().copied()) {
                pool.extend(
                    self.space
                        .neighbours(base)
                        .into_iter()
                        .filter(|p| self.is_fresh(flags, p, ctx)),
                );
            }
            let l = density(&self.space, good.iter().copied(), PRIOR, NEIGHBOUR);
            let mut found = 0;
            for _ in 0..DENSITY_DRAWS {
                if found == DENSITY_CANDIDATES {
                    break;
                }
                let p = draw(&self.space, &l, &mut self.rng);
                if self.is_fresh(flags, &p, ctx) {
                    found += 1;
                    pool.push(p);
                }
            }
        }
        let model = Surrogate::fit(&self.space, &self.features, ranked);
        // One pass over every fresh assignment, where the space was enumerated, for the race's
        // hope (so a race does not settle while an untried combination elsewhere may still beat
        // its leader) and for each algorithm's most promising assignment, which joins the pool:
        // local moves around one family's leader seldom reach another family, whose constraints
        // fix other knobs.
        let choice = self.features.choice();
        let mut everywhere = self.valid.as_ref().map(|_| f64::NEG_INFINITY);
        let mut per_branch: BTreeMap<usize, (f64, &Vec<usize>)> = BTreeMap::new();
        for ((_, at), _) in self
            .valid
            .iter()
            .flatten()
            .zip(flags)
            .filter(|(_, fresh)| **fresh)
        {
            if let Some(h) = everywhere.as_mut() {
                *h = h.max(model.hopeful(&self.features, at));
            }
            if let Some(x) = choice {
                let y = model.optimistic_at(&self.features, at);
                let slot = per_branch.entry(at[x]).or_insert((y, at));
                if y > slot.0 {
                    *slot = (y, at);
                }
            }
        }
        for (_, at) in per_branch.into_values() {
            let p = self.space.at(at);
            if !pool.contains(&p) {
                pool.push(p);
            }
        }
        let hope = everywhere.unwrap_or_else(|| {
            pool.iter()
                .map(|p| model.hopeful(&self.features, &indices(&self.space, p)))
                .fold(f64::NEG_INFINITY, f64::max)
        });
        pool.into_iter()
            .map(|p| {
                // A tie (common before anything is measured) is broken at random.
                let jitter = self.rng.random::<f64>() * 1e-9;
                (
                    model.optimistic(&self.space, &self.features, &p) + jitter,
                    p,
                )
            })
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, p)| Modelled {
                params: p,
                how,
                hope,
                model,
            })
    }
}

#[async_trait::async_trait]
impl Proposer for ModelProposer {
    fn name(&self) -> &str {
        "search"
    }

    fn wants_observations(&self) -> bool {
        true
    }

    async fn next(&mut self, ctx: &ProposalContext) -> Result<Option<Proposal>, AgentError> {
        let ranked = self.goal.ranked(ctx);
        let base = self.race.leader(&ranked).cloned();
        let flags = self.fresh_flags(ctx);
        let modelled = self.modelled(&ranked, ctx, base.as_ref(), &flags);
        let (p, how, hope) = match &modelled {
            Some(m) => (Some(m.params.clone()), m.how, m.hope),
            None => (
                random_fresh(&self.space, ctx, &mut self.rng),
                Reach::Explore,
                f64::INFINITY,
            ),
        };
        let mut screen_only = false;
        if ctx.can_screen {
            let threshold = (1.0 + self.goal.min_gain).ln();
            match self
                .race
                .step(ctx, &ranked, threshold, p.is_some().then_some(hope), false)
            {
                Step::Confirm(leader, screened) => {
                    if let Some(again) = (screened > BIG_STEP.ln())
                        .then(|| unsettled_near_tie(&leader, screened, &ranked, ctx))
                        .flatten()
                    {
                        return Ok(Some(Proposal {
                            note: Some(
                                "a near-tie at the top of the race: the rest of its screen, before the leader is judged in full".into(),
                            ),
                            origin: Origin::Rescreen,
                            change: ProposedChange::Params(again),
                            usage: None,
                            screen_only: true,
                        }));
                    }
                    if let Some(next) = modelled.as_ref().and_then(|m| {
                        self.unscreened_neighbour(&leader, screened, &m.model, &flags, ctx)
                    }) {
                        return Ok(Some(Proposal {
                            note: Some(
                                "a one-step neighbour of the race's leader, screened before the leader is judged in full".into(),
                            ),
                            origin: Origin::Screen,
                            change: ProposedChange::Params(next),
                            usage: None,
                            screen_only: true,
                        }));
                    }
                    return Ok(Some(Proposal {
                        note: Some(format!(
                            "the race's leader ({:+.1}% on the incumbent in screening, the best of its contenders), judged in full",
                            screened.exp_m1() * 100.0
                        )),
                        origin: Origin::Confirm,
                        change: ProposedChange::Params(leader),
                        usage: None,
                        screen_only: false,
                    }));
                }
                Step::Done => return Ok(None),
                Step::Judge => {}
                Step::Screen => screen_only = true,
            }
        }
        let measured = ctx.observations.len();
        Ok(p.map(|p| Proposal {
            note: Some(match ranked.first() {
                Some((best, _)) if how != Reach::Explore && best.is_finite() => format!(
                    "model ({}): the best predicted of the fresh candidates, from {measured} measured (the best of them {:+.1}% on the incumbent)",
                    how.as_str(),
                    (best.exp() - 1.0) * 100.0
                ),
                _ => format!("{} draw", how.as_str()),
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
