//! Seeded search over a task's `[params]`: starts from the incumbent, mixes local moves (one or
//! two knobs stepped to a neighbouring value) with random exploration, honours the declared
//! constraints, and never offers an assignment already measured in this context.

use crate::search::tuning::{FRESH_DRAWS, HILL_EXPLORE_RATE, MAX_SWEPT};
use crate::{
    AgentError, Origin, Params, Proposal, ProposalContext, ProposedChange, Proposer, Reach,
};
use evalexpr::{ContextWithMutableVariables, DefaultNumericTypes, HashMapContext, Node};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// A canonical key for an assignment (sorted keys, compact JSON): two equal assignments have
/// the same key.
pub fn params_key(params: &Params) -> String {
    serde_json::to_string(params).unwrap_or_default()
}

/// The values each parameter may take, and the constraints an assignment must satisfy.
pub struct ParamSpace {
    pub(crate) values: BTreeMap<String, Vec<Value>>,
    constraints: Vec<(String, String, Node<DefaultNumericTypes>)>,
    /// Every valid assignment and its place in `index`'s list, once a small space has been
    /// enumerated: validity is then one lookup instead of evaluating every constraint.
    positions: Option<HashMap<Params, usize>>,
}

fn to_eval(v: &Value) -> evalexpr::Value<DefaultNumericTypes> {
    match v {
        Value::Bool(b) => evalexpr::Value::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => evalexpr::Value::Int(i),
            None => evalexpr::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => evalexpr::Value::String(s.clone()),
        other => evalexpr::Value::String(other.to_string()),
    }
}

impl ParamSpace {
    /// `constraints` are (name, expression) pairs such as `("fits", "TILE * TILE <= 4096")`.
    pub fn new(
        values: BTreeMap<String, Vec<Value>>,
        constraints: &BTreeMap<String, String>,
    ) -> Result<Self, AgentError> {
        if values.is_empty() {
            return Err(AgentError::Space("no parameters declared".into()));
        }
        if let Some((k, _)) = values.iter().find(|(_, v)| v.is_empty()) {
            return Err(AgentError::Space(format!("{k} has no values")));
        }
        let mut parsed = Vec::new();
        for (name, expr) in constraints {
            let node = evalexpr::build_operator_tree::<DefaultNumericTypes>(expr)
                .map_err(|e| AgentError::Space(format!("constraint {name} ({expr}): {e}")))?;
            parsed.push((name.clone(), expr.clone(), node));
        }
        let space = ParamSpace {
            values,
            constraints: parsed,
            positions: None,
        };
        // Evaluate every constraint once so unknown names and type errors show up now.
        let first: Params = space
            .values
            .iter()
            .map(|(k, v)| (k.clone(), v[0].clone()))
            .collect();
        for (name, expr, node) in &space.constraints {
            node.eval_boolean_with_context(&space.context(&first))
                .map_err(|e| AgentError::Space(format!("constraint {name} ({expr}): {e}")))?;
        }
        Ok(space)
    }

    fn context(&self, p: &Params) -> HashMapContext<DefaultNumericTypes> {
        let mut ctx = HashMapContext::<DefaultNumericTypes>::new();
        for (k, v) in p {
            // Names come from the task file and values are plain scalars; setting cannot fail.
            let _ = ctx.set_value(k.clone(), to_eval(v));
        }
        ctx
    }

    /// Why `p` is not a valid point, or `None` when it is.
    pub fn invalid(&self, p: &Params) -> Option<String> {
        for (k, allowed) in &self.values {
            match p.get(k) {
                None => return Some(format!("{k} is missing")),
                Some(v) if !allowed.contains(v) => {
                    let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
                    return Some(format!(
                        "{k} = {v} is not one of the declared values ({})",
                        list.join(", ")
                    ));
                }
                Some(_) => {}
            }
        }
        if let Some(extra) = p.keys().find(|k| !self.values.contains_key(*k)) {
            return Some(format!("{extra} is not a declared parameter"));
        }
        let ctx = self.context(p);
        for (name, expr, node) in &self.constraints {
            match node.eval_boolean_with_context(&ctx) {
                Ok(true) => {}
                Ok(false) => return Some(format!("violates constraint {name} ({expr})")),
                Err(e) => return Some(format!("constraint {name} ({expr}): {e}")),
            }
        }
        None
    }

    pub(crate) fn is_valid(&self, p: &Params) -> bool {
        match &self.positions {
            Some(at) => at.contains_key(p),
            None => self.invalid(p).is_none(),
        }
    }

    /// Where `p` is in the list `index` returned, once it has.
    pub(crate) fn position(&self, p: &Params) -> Option<usize> {
        self.positions.as_ref()?.get(p).copied()
    }

    /// Every valid assignment, when the space has at most `max`; from then on validity is
    /// looked up, not evaluated.
    pub(crate) fn index(&mut self, max: usize) -> Option<Vec<Params>> {
        if self.size() > max {
            return None;
        }
        let all = self.all_valid();
        self.positions = Some(all.iter().cloned().zip(0..).collect());
        Some(all)
    }

    pub fn size(&self) -> usize {
        self.values
            .values()
            .map(Vec::len)
            .fold(1usize, |a, n| a.saturating_mul(n))
    }

    /// Every assignment that satisfies the constraints, in a fixed order.
    pub fn all_valid(&self) -> Vec<Params> {
        (0..self.size())
            .map(|i| self.nth(i))
            .filter(|p| self.invalid(p).is_none())
            .collect()
    }

    /// Every valid assignment one knob away from `base` (any other declared value), and, where
    /// that breaks a constraint, the repairs that also change one other knob.
    pub(crate) fn neighbours(&self, base: &Params) -> Vec<Params> {
        self.one_knob(base, |_, _| true)
    }

    /// For each other declared value of `knob`, a valid assignment that has it and differs from
    /// `base` in `knob` alone where the constraints allow, else in one more knob.
    pub fn each_value_of(&self, base: &Params, knob: &str) -> Vec<Params> {
        let apart = |p: &Params| p.iter().filter(|(k, v)| base.get(*k) != Some(*v)).count();
        let mut moved: Vec<Params> = self.neighbours(base);
        moved.retain(|p| p.get(knob) != base.get(knob));
        moved.sort_by_key(apart);
        let mut out: Vec<Params> = Vec::new();
        for p in moved {
            if !out.iter().any(|q| q.get(knob) == p.get(knob)) {
                out.push(p);
            }
        }
        out
    }

    /// As `neighbours`, with each knob moved only to the values declared next to its own.
    pub(crate) fn adjacent(&self, base: &Params) -> Vec<Params> {
        self.one_knob(base, |from, to| from.is_none_or(|f| f.abs_diff(to) == 1))
    }

    /// The valid assignments that move one knob of `base` from its value's index (if declared) to
    /// an index `step` allows, with a repair of one other knob where that breaks a constraint.
    fn one_knob(&self, base: &Params, step: impl Fn(Option<usize>, usize) -> bool) -> Vec<Params> {
        let mut out = Vec::new();
        for (k, vals) in &self.values {
            let from = base.get(k).and_then(|v| vals.iter().position(|x| x == v));
            for (_, v) in vals
                .iter()
                .enumerate()
                .filter(|(i, v)| base.get(k) != Some(*v) && step(from, *i))
            {
                let mut p = base.clone();
                p.insert(k.clone(), v.clone());
                if self.is_valid(&p) {
                    out.push(p);
                    continue;
                }
                for (k2, vals2) in self.values.iter().filter(|(k2, _)| *k2 != k) {
                    for v2 in vals2 {
                        let mut q = p.clone();
                        q.insert(k2.clone(), v2.clone());
                        if self.is_valid(&q) && !out.contains(&q) {
                            out.push(q);
                        }
                    }
                }
            }
        }
        out
    }

    /// The assignment whose values are at `indices` (in the space's order).
    pub(crate) fn at(&self, indices: &[usize]) -> Params {
        self.values
            .iter()
            .zip(indices)
            .map(|((k, vals), i)| (k.clone(), vals[*i].clone()))
            .collect()
    }

    pub(crate) fn random(&self, rng: &mut ChaCha8Rng) -> Params {
        self.values
            .iter()
            .map(|(k, v)| (k.clone(), v[rng.random_range(0..v.len())].clone()))
            .collect()
    }

    /// One or two knobs of `base` stepped to a neighbouring declared value. A step that breaks
    /// a constraint is repaired by also changing one other knob to a value that satisfies it, so
    /// coupled knobs (a strategy that needs another setting) stay one move apart.
    pub(crate) fn local(&self, base: &Params, rng: &mut ChaCha8Rng) -> Params {
        let mut p = base.clone();
        let keys: Vec<&String> = self.values.keys().collect();
        let moves = if rng.random_bool(0.7) { 1 } else { 2 };
        let mut moved = Vec::new();
        for _ in 0..moves {
            let key = keys[rng.random_range(0..keys.len())];
            let vals = &self.values[key];
            let at = p
                .get(key)
                .and_then(|v| vals.iter().position(|x| x == v))
                .unwrap_or(0);
            let next = if vals.len() == 1 {
                at
            } else if at == 0 {
                1
            } else if at + 1 == vals.len() || rng.random_bool(0.5) {
                at - 1
            } else {
                at + 1
            };
            p.insert(key.clone(), vals[next].clone());
            moved.push(key.clone());
        }
        if self.is_valid(&p) {
            return p;
        }
        let repairs: Vec<Params> = self
            .values
            .iter()
            .filter(|(k, _)| !moved.contains(k))
            .flat_map(|(k, vals)| {
                vals.iter().map(|v| {
                    let mut q = p.clone();
                    q.insert(k.clone(), v.clone());
                    q
                })
            })
            .filter(|q| self.is_valid(q))
            .collect();
        if repairs.is_empty() {
            p
        } else {
            repairs[rng.random_range(0..repairs.len())].clone()
        }
    }

    pub(crate) fn nth(&self, mut index: usize) -> Params {
        let mut p = Params::new();
        for (k, v) in &self.values {
            p.insert(k.clone(), v[index % v.len()].clone());
            index /= v.len();
        }
        p
    }
}

/// The hill-climber (local moves with some exploration) or pure random sampling.
pub struct SearchProposer {
    space: ParamSpace,
    rng: ChaCha8Rng,
    explore_rate: f64,
}

impl SearchProposer {
    /// The hill-climber: local moves around the incumbent, 30% random draws.
    pub fn new(space: ParamSpace, seed: u64) -> Self {
        SearchProposer {
            space,
            rng: ChaCha8Rng::seed_from_u64(seed),
            explore_rate: HILL_EXPLORE_RATE,
        }
    }

    /// Random search: every proposal drawn uniformly from the untried valid assignments.
    pub fn random(space: ParamSpace, seed: u64) -> Self {
        SearchProposer {
            explore_rate: 1.0,
            ..Self::new(space, seed)
        }
    }

    fn fresh(&self, p: &Params, ctx: &ProposalContext) -> bool {
        fresh(&self.space, p, ctx)
    }
}

/// The freshness rule on an assignment's key (`params_key`), written once: never measured in
/// this context and not the incumbent itself (`incumbent`: the incumbent's key). Whether it is
/// valid is the space's to say.
pub(crate) fn untried(ctx: &ProposalContext, incumbent: Option<&str>, key: &str) -> bool {
    !ctx.tried_params.contains(key) && incumbent != Some(key)
}

/// A fresh assignment: valid, and `untried`.
pub(crate) fn fresh(space: &ParamSpace, p: &Params, ctx: &ProposalContext) -> bool {
    let incumbent = ctx.incumbent_params.as_ref().map(params_key);
    space.is_valid(p) && untried(ctx, incumbent.as_deref(), &params_key(p))
}

/// A fresh assignment found by walking the space from a random offset, when draws keep landing
/// on tried points; `None` when none is left (or the space is too large to walk).
pub(crate) fn sweep(
    space: &ParamSpace,
    ctx: &ProposalContext,
    rng: &mut ChaCha8Rng,
) -> Option<Params> {
    let size = space.size();
    if size > MAX_SWEPT {
        return None;
    }
    let offset = rng.random_range(0..size);
    (0..size)
        .map(|i| space.nth((offset + i) % size))
        .find(|p| fresh(space, p, ctx))
}

#[async_trait::async_trait]
impl Proposer for SearchProposer {
    fn name(&self) -> &str {
        "search"
    }

    async fn next(&mut self, ctx: &ProposalContext) -> Result<Option<Proposal>, AgentError> {
        let base = ctx.incumbent_params.clone();
        for _ in 0..FRESH_DRAWS {
            let (p, how) = match &base {
                Some(b) if !self.rng.random_bool(self.explore_rate) => {
                    (self.space.local(b, &mut self.rng), Reach::Local)
                }
                _ => (self.space.random(&mut self.rng), Reach::Explore),
            };
            if self.fresh(&p, ctx) {
                return Ok(Some(Proposal {
                    origin: Origin::Search(how),
                    note: Some(format!("{} move", how.as_str())),
                    change: ProposedChange::Params(p),
                    usage: None,
                    screen_only: false,
                }));
            }
        }
        // Draws keep landing on tried points: walk the space from a random offset.
        Ok(sweep(&self.space, ctx, &mut self.rng).map(|p| Proposal {
            note: Some("sweep".into()),
            origin: Origin::Sweep,
            change: ProposedChange::Params(p),
            usage: None,
            screen_only: false,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> ParamSpace {
        let values = BTreeMap::from([
            (
                "A".to_string(),
                vec![Value::from(1), Value::from(2), Value::from(4)],
            ),
            ("B".to_string(), vec![Value::from(0), Value::from(1)]),
        ]);
        let constraints = BTreeMap::from([("c".to_string(), "A * B != 4".to_string())]);
        ParamSpace::new(values, &constraints).unwrap_or_else(|e| panic!("{e}"))
    }

    #[tokio::test]
    async fn never_repeats_and_honours_constraints_until_exhausted() {
        let mut s = SearchProposer::new(space(), 7);
        let mut ctx = ProposalContext::default();
        let mut seen = Vec::new();
        while let Ok(Some(p)) = s.next(&ctx).await {
            let ProposedChange::Params(p) = p.change else {
                panic!("not params")
            };
            assert!(s.space.invalid(&p).is_none());
            assert!(ctx.tried_params.insert(params_key(&p)), "repeated {p:?}");
            seen.push(p);
        }
        assert_eq!(seen.len(), 5, "6 points, one excluded by the constraint");
    }

    #[tokio::test]
    async fn same_seed_same_sequence() {
        async fn run(seed: u64) -> Vec<ProposedChange> {
            let mut s = SearchProposer::new(space(), seed);
            let ctx = ProposalContext {
                incumbent_params: Some(s.space.nth(0)),
                ..Default::default()
            };
            let mut out = Vec::new();
            for _ in 0..3 {
                out.extend(s.next(&ctx).await.ok().flatten().map(|p| p.change));
            }
            out
        }
        assert_eq!(run(1).await, run(1).await);
    }

    #[test]
    fn a_local_move_that_breaks_a_constraint_is_repaired() {
        // A = 4 needs B = 0 (A * B != 4 forbids A = 4, B = 1).
        let s = space();
        let base = Params::from([
            ("A".to_string(), Value::from(2)),
            ("B".to_string(), Value::from(1)),
        ]);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..50 {
            let p = s.local(&base, &mut rng);
            assert!(s.invalid(&p).is_none(), "{p:?}");
        }
    }

    #[test]
    fn adjacent_moves_one_knob_to_a_declared_neighbour_and_repairs_what_breaks() {
        let s = space();
        let p = |a: i64, b: i64| {
            Params::from([
                ("A".to_string(), Value::from(a)),
                ("B".to_string(), Value::from(b)),
            ])
        };
        // From A = 1, B = 1: A = 2 is next to it, 4 is not; B = 0. A = 4 would need B = 0.
        assert_eq!(s.adjacent(&p(1, 1)), vec![p(2, 1), p(1, 0)]);
        // From A = 2, B = 1 the move to A = 4 breaks the constraint and is repaired.
        assert_eq!(s.adjacent(&p(2, 1)), vec![p(1, 1), p(4, 0), p(2, 0)]);
        assert_eq!(s.neighbours(&p(1, 1)).len(), 3);
    }

    #[test]
    fn an_indexed_space_agrees_with_its_constraints() {
        let mut s = space();
        let all = s.index(100).unwrap_or_default();
        assert_eq!(all.len(), 5);
        for i in 0..s.size() {
            let p = s.nth(i);
            assert_eq!(s.is_valid(&p), s.invalid(&p).is_none(), "{p:?}");
            assert_eq!(
                s.position(&p).map(|at| &all[at]),
                s.is_valid(&p).then_some(&p)
            );
        }
        let mut odd = s.nth(0);
        odd.insert("A".into(), Value::from(1.0));
        assert!(!s.is_valid(&odd), "1.0 is not the declared 1");
        odd.insert("A".into(), Value::from(1));
        odd.insert("C".into(), Value::from(0));
        assert!(!s.is_valid(&odd), "an undeclared parameter");
        assert!(space().index(5).is_none(), "6 assignments are more than 5");
    }

    #[tokio::test]
    async fn bad_constraints_are_reported() {
        let values = BTreeMap::from([("A".to_string(), vec![Value::from(1)])]);
        for expr in ["A +", "NOPE > 1"] {
            let c = BTreeMap::from([("x".to_string(), expr.to_string())]);
            assert!(ParamSpace::new(values.clone(), &c).is_err(), "{expr}");
        }
    }
}
