//! A fixed list of proposals offered before another proposer takes over: how a run in a new
//! context first re-measures the bests of its neighbour contexts, then searches on.

use crate::{AgentError, Proposal, ProposalContext, Proposer};
use std::collections::VecDeque;

pub struct Prepend<'a> {
    first: VecDeque<Proposal>,
    then: Box<dyn Proposer + 'a>,
}

impl<'a> Prepend<'a> {
    pub fn new(first: Vec<Proposal>, then: Box<dyn Proposer + 'a>) -> Self {
        Prepend {
            first: first.into(),
            then,
        }
    }
}

#[async_trait::async_trait]
impl Proposer for Prepend<'_> {
    fn name(&self) -> &str {
        self.then.name()
    }

    // What the wrapped proposer learns from must reach it (the model search was blind after a
    // warm start without these).
    fn wants_history(&self) -> bool {
        self.then.wants_history()
    }

    fn wants_observations(&self) -> bool {
        self.then.wants_observations()
    }

    async fn next(&mut self, ctx: &ProposalContext) -> Result<Option<Proposal>, AgentError> {
        match self.first.pop_front() {
            Some(p) => Ok(Some(p)),
            None => self.then.next(ctx).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ProposedChange, ReplayProposer};

    #[tokio::test]
    async fn offers_the_list_first() {
        let replay = ReplayProposer::parse("r.jsonl", "{\"diff\": \"later\"}\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let first = Proposal {
            change: ProposedChange::Diff("first".into()),
            note: None,
            origin: crate::Origin::WarmStart {
                context: "c".into(),
                entry: 1,
            },
            usage: None,
            screen_only: false,
        };
        let mut p = Prepend::new(vec![first], Box::new(replay));
        let ctx = ProposalContext::default();
        let mut got = Vec::new();
        while let Ok(Some(next)) = p.next(&ctx).await {
            got.push(next.origin.to_string());
        }
        assert_eq!(got, ["warm-start(c:e1)", "replay:r.jsonl:1"]);
        assert_eq!(p.name(), "replay");
    }

    #[test]
    fn what_the_wrapped_proposer_learns_from_reaches_it() {
        let space = crate::ParamSpace::new(
            std::collections::BTreeMap::from([("A".to_string(), vec![0.into(), 1.into()])]),
            &std::collections::BTreeMap::new(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let goal = crate::Goal {
            maximize: true,
            min_gain: 0.02,
            case_tolerance: 0.05,
            weights: Default::default(),
        };
        let model = crate::ModelProposer::new(space, 1, goal);
        let p = Prepend::new(Vec::new(), Box::new(model));
        assert!(p.wants_observations() && !p.wants_history());
    }
}
