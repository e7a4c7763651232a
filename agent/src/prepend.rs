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
            origin: "warm".into(),
            usage: None,
        };
        let mut p = Prepend::new(vec![first], Box::new(replay));
        let ctx = ProposalContext::default();
        let mut got = Vec::new();
        while let Ok(Some(next)) = p.next(&ctx).await {
            got.push(next.origin);
        }
        assert_eq!(got, ["warm", "replay:r.jsonl:1"]);
        assert_eq!(p.name(), "replay");
    }
}
