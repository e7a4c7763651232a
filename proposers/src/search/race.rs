//! The model search's races: while one incumbent stands, fresh candidates are only screened (a
//! few pairs each, never accepted), and the race's leader, the contender the judge could best
//! accept, then gets the full judgement in fresh pairs as a new candidate. Accepting the first
//! candidate that passes screening would lock a run into that candidate's family: from there the
//! per-case guard refuses a better configuration that trades one case for another with it.

use crate::search::tuning::{CLEAR_OF_NOISE, MAX_SCREENS, MIN_SCREENS, NEAR, RUN_SHARE, STALL};
use crate::{Observation, Params, ProposalContext};
use std::collections::HashSet;

/// What the search does next.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// Screen a fresh candidate.
    Screen,
    /// Judge a fresh candidate in full: the run's last candidate, with no contender to confirm.
    Judge,
    /// Send the leader (its objective, as screened) to the full judgement.
    Confirm(Params, f64),
    /// Nothing fresh is left and no contender could be accepted.
    Done,
}

/// The race against the current incumbent.
#[derive(Default)]
pub(crate) struct Race {
    /// The most screens any race of this run counts: a share of the run's candidates, set at
    /// its first step (`None`: a run without a budget, or not yet begun).
    longest: Option<usize>,
    begun: bool,
    against: Option<Params>,
    screens: usize,
    stalled: usize,
    leader: Option<Params>,
}

/// Assignments screened and never judged in full: the contenders.
fn contenders(observations: &[Observation]) -> HashSet<&Params> {
    let judged: HashSet<&Params> = observations
        .iter()
        .filter(|o| !o.screened_only)
        .map(|o| &o.params)
        .collect();
    observations
        .iter()
        .filter(|o| o.screened_only)
        .map(|o| &o.params)
        .filter(|p| !judged.contains(p))
        .collect()
}

/// Before a leader far ahead of the incumbent is judged in full, the near-ties at the top whose
/// screens were settled after one pair (over twice the incumbent: held whatever the rest would
/// show) take the rest of their screen, the leader first, so that the one judged in full was not
/// ranked on a single sample. Once one is the incumbent, a near-tie 3% ahead is too close to
/// `min_gain` to be confirmed. `None` once each has had `screen_pairs` pairs, or when the run has
/// no candidates to spare.
pub(crate) fn unsettled_near_tie(
    leader: &Params,
    screened: f64,
    ranked: &[(f64, Params)],
    ctx: &ProposalContext,
) -> Option<Params> {
    if ctx.remaining.is_some_and(|r| r <= 2) {
        return None;
    }
    let open = contenders(&ctx.observations);
    let near = ranked
        .iter()
        .filter(|(score, p)| *score >= screened - NEAR && p != leader && open.contains(p))
        .map(|(_, p)| p);
    std::iter::once(leader)
        .chain(near)
        .find(|p| pairs_of(ctx, p) < ctx.screen_pairs)
        .cloned()
}

/// The pairs `params` was measured in, over all its observations.
fn pairs_of(ctx: &ProposalContext, params: &Params) -> usize {
    ctx.observations
        .iter()
        .filter(|o| &o.params == params)
        .map(|o| o.pairs)
        .sum()
}

/// What a contender's screen must show before a race settles on it: the judge's gain, plus
/// `CLEAR_OF_NOISE` standard errors of the screen (the spread of a pair's gain over the root of
/// its pairs) once the judge knows that spread. Where a pair's noise is large next to the gains
/// near the incumbent, the best of several screens a few percent ahead is mostly noise, and
/// the full judgement it would get (up to twice `max_pairs` pairs) most often ends
/// inconclusive: the race screens on instead. A run that is ending (its last candidate, or
/// nothing fresh left) has nothing better to spend its candidate on, and judges the leader.
fn clear_of_noise(ctx: &ProposalContext, contender: &Params, threshold: f64) -> f64 {
    let pairs = pairs_of(ctx, contender);
    match ctx.pair_spread {
        Some(sd) if pairs > 0 => threshold + CLEAR_OF_NOISE * sd / (pairs as f64).sqrt(),
        _ => threshold,
    }
}

impl Race {
    /// The next step, from the observations scored against the incumbent (best first), the
    /// gain the judge asks for (as a log-ratio) and, when a fresh candidate is left, the best
    /// objective the model expects of one: a race goes on while that beats the leader.
    /// `warming` says the screen it may ask for is a start-up draw (uniform, before the
    /// strategy's model has enough measurements to choose): a race's length is counted in the
    /// model's own proposals, so such a screen does not bring the judgement nearer. Counted,
    /// TPE's ten start-up draws would settle its first race before it proposed anything.
    /// In a short run each count is at most a `RUN_SHARE`th of its candidates, so that a run of
    /// 20 holds several races and not one that its last candidate settles.
    pub(crate) fn step(
        &mut self,
        ctx: &ProposalContext,
        ranked: &[(f64, Params)],
        threshold: f64,
        hope: Option<f64>,
        warming: bool,
    ) -> Step {
        if !self.begun || ctx.incumbent_params != self.against {
            let longest = match self.begun {
                true => self.longest,
                false => ctx.remaining.map(|r| (r / RUN_SHARE).max(1)),
            };
            *self = Race {
                longest,
                begun: true,
                against: ctx.incumbent_params.clone(),
                ..Race::default()
            };
        }
        let open = contenders(&ctx.observations);
        let leader = ranked
            .iter()
            .find(|(score, p)| score.is_finite() && open.contains(p));
        let now = leader.map(|(_, p)| p);
        if now != self.leader.as_ref() {
            self.leader = now.cloned();
            self.stalled = 0;
        }
        let last = ctx.remaining.is_some_and(|r| r <= 1);
        let ending = last || hope.is_none();
        let count = |n: usize| self.longest.map_or(n, |l| n.min(l));
        let settled = |score: f64| {
            self.screens >= count(MAX_SCREENS)
                || (self.screens >= count(MIN_SCREENS)
                    && self.stalled >= count(STALL)
                    && hope.is_none_or(|h| h <= score))
        };
        match leader {
            Some((score, p))
                if *score >= threshold
                    && (ending
                        || (settled(*score) && *score >= clear_of_noise(ctx, p, threshold))) =>
            {
                Step::Confirm(p.clone(), *score)
            }
            _ if last && hope.is_some() => Step::Judge,
            _ if hope.is_some() => {
                self.screens += usize::from(!warming);
                self.stalled += 1;
                Step::Screen
            }
            _ => Step::Done,
        }
    }

    /// The contender in the lead, if any.
    pub(crate) fn leader<'a>(&self, ranked: &'a [(f64, Params)]) -> Option<&'a Params> {
        let leader = self.leader.as_ref()?;
        ranked.iter().map(|(_, p)| p).find(|p| *p == leader)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::collections::BTreeMap;

    fn p(x: i64) -> Params {
        Params::from([("X".to_string(), Value::from(x))])
    }

    fn seen(x: i64, screened_only: bool) -> Observation {
        Observation {
            params: p(x),
            screened_only,
            pairs: 1,
            candidate: BTreeMap::new(),
            incumbent: BTreeMap::new(),
            carried: false,
        }
    }

    fn ctx(observations: Vec<Observation>, remaining: usize) -> ProposalContext {
        ProposalContext {
            incumbent_params: Some(p(0)),
            observations: observations.into(),
            can_screen: true,
            screen_pairs: 2,
            remaining: Some(remaining),
            ..ProposalContext::default()
        }
    }

    #[test]
    fn the_leader_is_confirmed_once_it_has_held_the_lead_long_enough() {
        let mut race = Race::default();
        let ranked = vec![(0.3, p(2)), (0.1, p(1))];
        let c = ctx(vec![seen(1, true), seen(2, true)], 40);
        let mut steps = Vec::new();
        for _ in 0..MIN_SCREENS + 1 {
            steps.push(race.step(&c, &ranked, 0.02, Some(0.0), false));
        }
        assert!(steps[..MIN_SCREENS].iter().all(|s| *s == Step::Screen));
        assert_eq!(steps[MIN_SCREENS], Step::Confirm(p(2), 0.3));
        assert_eq!(race.leader(&ranked), Some(&p(2)));
    }

    #[test]
    fn start_up_draws_do_not_bring_the_judgement_nearer() {
        let mut race = Race::default();
        let ranked = vec![(0.3, p(2)), (0.1, p(1))];
        let c = ctx(vec![seen(1, true), seen(2, true)], 40);
        // However long the leader has held, a race of start-up draws alone is not settled.
        for _ in 0..MAX_SCREENS + 2 {
            assert_eq!(race.step(&c, &ranked, 0.02, Some(0.0), true), Step::Screen);
        }
        // Counted from the model's first proposal: it confirms after MIN_SCREENS of its own,
        // the leader having held through the start-up draws.
        for _ in 0..MIN_SCREENS {
            assert_eq!(race.step(&c, &ranked, 0.02, Some(0.0), false), Step::Screen);
        }
        assert_eq!(
            race.step(&c, &ranked, 0.02, Some(0.0), false),
            Step::Confirm(p(2), 0.3)
        );
    }

    #[test]
    fn a_short_run_s_races_are_a_share_of_it() {
        let ranked = vec![(0.3, p(2)), (0.1, p(1))];
        let screens_to_confirm = |budget: usize| {
            let mut race = Race::default();
            let mut c = ctx(vec![seen(1, true), seen(2, true)], budget);
            for screens in 0.. {
                match race.step(&c, &ranked, 0.02, Some(0.0), false) {
                    Step::Screen => c.remaining = Some(budget - screens - 1),
                    Step::Confirm(leader, _) => return (screens, leader),
                    other => panic!("{other:?}"),
                }
            }
            unreachable!()
        };
        // 20 candidates: races of 5; 5: of one; 300: as long as the constants say.
        assert_eq!(screens_to_confirm(20), (20 / RUN_SHARE, p(2)));
        assert_eq!(screens_to_confirm(5), (1, p(2)));
        assert_eq!(screens_to_confirm(300), (MIN_SCREENS, p(2)));
        // Set by the run's budget at its first step, kept by the races after it.
        let mut race = Race::default();
        let mut c = ctx(vec![seen(1, true), seen(2, true)], 20);
        race.step(&c, &ranked, 0.02, Some(0.0), false);
        c.incumbent_params = Some(p(7));
        c.remaining = Some(15);
        race.step(&c, &ranked, 0.02, Some(0.0), false);
        assert_eq!(race.longest, Some(5));
    }

    #[test]
    fn a_leader_within_its_screen_s_noise_of_the_gain_asked_for_is_screened_on() {
        // 2 leads at +5% after a screen of two pairs.
        let ranked = vec![(0.05, p(2)), (0.01, p(1))];
        let mut c = ctx(vec![seen(1, true), seen(2, true), seen(2, true)], 40);
        let steps = |c: &ProposalContext| {
            let mut race = Race::default();
            (0..=MAX_SCREENS)
                .map(|_| race.step(c, &ranked, 0.02, Some(0.0), false))
                .collect::<Vec<_>>()
        };
        // The spread not yet known: the gain asked for is enough, as before.
        assert_eq!(steps(&c)[MIN_SCREENS], Step::Confirm(p(2), 0.05));
        // A pair's gain varying by 8%: 2% + 2 x 8% / sqrt(2) asked of it: the race screens on.
        c.pair_spread = Some(0.08);
        assert!(steps(&c).iter().all(|s| *s == Step::Screen));
        // On a quiet machine (1%) it is clear of the noise.
        c.pair_spread = Some(0.01);
        assert_eq!(steps(&c)[MIN_SCREENS], Step::Confirm(p(2), 0.05));
        // A run's last candidate, or one with nothing fresh left, has nothing better to do.
        c.pair_spread = Some(0.08);
        assert_eq!(
            Race::default().step(&c, &ranked, 0.02, None, false),
            Step::Confirm(p(2), 0.05)
        );
        c.remaining = Some(1);
        assert_eq!(
            Race::default().step(&c, &ranked, 0.02, Some(0.0), false),
            Step::Confirm(p(2), 0.05)
        );
    }

    #[test]
    fn judged_assignments_and_gains_too_small_are_never_confirmed() {
        let mut race = Race::default();
        // 2 was judged in full after its screen; 1 gains less than the judge asks for.
        let ranked = vec![(0.3, p(2)), (0.01, p(1))];
        let c = ctx(vec![seen(1, true), seen(2, true), seen(2, false)], 5);
        assert_eq!(race.step(&c, &ranked, 0.02, Some(0.0), false), Step::Screen);
        assert_eq!(race.step(&c, &ranked, 0.02, None, false), Step::Done);
        // A run's last candidate with nothing to confirm is judged in full: a run of one
        // candidate can still accept.
        let last = ctx(vec![seen(2, true), seen(2, false)], 1);
        assert_eq!(
            race.step(&last, &ranked, 0.02, Some(0.0), false),
            Step::Judge
        );
    }

    #[test]
    fn a_run_s_last_candidate_confirms_the_leader_and_a_new_incumbent_starts_a_new_race() {
        let mut race = Race::default();
        let ranked = vec![(0.2, p(1))];
        let c = ctx(vec![seen(1, true)], 1);
        assert_eq!(
            race.step(&c, &ranked, 0.02, Some(0.0), false),
            Step::Confirm(p(1), 0.2)
        );
        let mut moved = ctx(vec![seen(1, true)], 30);
        moved.incumbent_params = Some(p(5));
        assert_eq!(
            race.step(&moved, &ranked, 0.02, Some(0.0), false),
            Step::Screen
        );
        assert_eq!(race.screens, 1);
    }

    #[test]
    fn near_ties_take_the_rest_of_their_screen_the_leader_first() {
        // 3 is 1% behind the leader 2, 1 is 10% behind; each screen was one pair, of two.
        let ranked = vec![(4.0, p(2)), (3.99, p(3)), (3.9, p(1))];
        let mut c = ctx(vec![seen(1, true), seen(2, true), seen(3, true)], 20);
        assert_eq!(unsettled_near_tie(&p(2), 4.0, &ranked, &c), Some(p(2)));
        std::sync::Arc::make_mut(&mut c.observations).push(seen(2, true));
        assert_eq!(unsettled_near_tie(&p(2), 4.0, &ranked, &c), Some(p(3)));
        std::sync::Arc::make_mut(&mut c.observations).push(seen(3, true));
        assert_eq!(unsettled_near_tie(&p(2), 4.0, &ranked, &c), None);
        // A screen of two pairs was whole; a run with no candidate to spare confirms at once.
        let mut whole = seen(2, true);
        whole.pairs = 2;
        let c = ctx(vec![whole, seen(3, true)], 20);
        assert_eq!(unsettled_near_tie(&p(2), 4.0, &ranked, &c), Some(p(3)));
        let c = ctx(vec![seen(2, true)], 2);
        assert_eq!(unsettled_near_tie(&p(2), 4.0, &ranked, &c), None);
    }
}
