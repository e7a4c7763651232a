//! A search whose space grows with the incumbent: when the incumbent's parameter file declares
//! knobs the task's space lacks (a candidate added them), the search starts over on the enlarged
//! space, from that incumbent. The strategy itself never sees a space change under it.

use crate::{AgentError, ParamSpace, Proposal, ProposalContext, Proposer};
use serde_json::Value;
use std::collections::BTreeMap;

/// Builds the strategy's proposer for a space.
pub type Build = Box<dyn Fn(ParamSpace) -> Box<dyn Proposer> + Send>;

/// A strategy over the task's declared space and the knobs the incumbent adds to it.
pub struct Widening {
    values: BTreeMap<String, Vec<Value>>,
    constraints: BTreeMap<String, String>,
    build: Build,
    /// The added knobs the current proposer's space holds.
    knobs: BTreeMap<String, Vec<Value>>,
    inner: Box<dyn Proposer>,
}

impl Widening {
    /// `build` makes the strategy for a space; it starts on the declared one.
    pub fn new(
        values: BTreeMap<String, Vec<Value>>,
        constraints: BTreeMap<String, String>,
        build: Build,
    ) -> Result<Self, AgentError> {
        let inner = build(ParamSpace::new(values.clone(), &constraints)?);
        Ok(Widening {
            values,
            constraints,
            build,
            knobs: BTreeMap::new(),
            inner,
        })
    }
}

#[async_trait::async_trait]
impl Proposer for Widening {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn wants_history(&self) -> bool {
        self.inner.wants_history()
    }

    fn wants_observations(&self) -> bool {
        self.inner.wants_observations()
    }

    async fn next(&mut self, ctx: &ProposalContext) -> Result<Option<Proposal>, AgentError> {
        if ctx.knobs != self.knobs {
            let mut values = self.values.clone();
            values.extend(ctx.knobs.clone());
            let space = ParamSpace::new(values, &self.constraints)?;
            tracing::info!(
                knobs = ?ctx.knobs.keys().collect::<Vec<_>>(),
                "the incumbent adds knobs to the space; the search starts over on the enlarged one"
            );
            self.inner = (self.build)(space);
            self.knobs = ctx.knobs.clone();
        }
        self.inner.next(ctx).await
    }
}
