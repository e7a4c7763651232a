//! A tree is judged once against an incumbent. A proposal whose tree a candidate already
//! proposed against the same incumbent in the same context (in this run or an earlier one) and
//! that was judged and not accepted (a race's contender held after its screen was not judged)
//! is recorded as failed at verification, naming that candidate, and no process runs. Judged
//! again, a rejected tree would get a fresh draw of noise, and one that failed its test a fresh
//! seed, until luck let it through; a model that sends the same reply again is told so
//! instead, and no time is spent on it.

use crate::engine::evaluate::{Evaluation, Failure, candidate_tree};
use crate::record::{Stage, Store};
use crate::task::Resolved;
use anyhow::Result;
use proposers::{Proposal, ProposedChange};
use sandbox::{FileTree, Limits};

/// The evaluation to record instead of judging `proposal`, when its tree was judged already.
pub(super) async fn judged_before(
    store: &Store,
    r: &Resolved,
    incumbent_entry: i64,
    incumbent: &FileTree,
    proposal: &Proposal,
) -> Result<Option<Evaluation>> {
    // Assignments have their own rule (never measured twice, bar a race's leader judged in full).
    if let ProposedChange::Params(_) = proposal.change {
        return Ok(None);
    }
    let Ok((_, diff)) = candidate_tree(&r.task, &Limits::default(), proposal, incumbent) else {
        // Not a tree at all: the evaluation says why.
        return Ok(None);
    };
    let earlier = store
        .judged_tree(&r.task.name, &r.context_id, incumbent_entry, &diff)
        .await?;
    Ok(earlier.map(|(run, seq, verdict, reason)| {
        let mut ev = Evaluation::failed(Failure::new(
            Stage::Verify,
            format!(
                "the same tree as candidate {seq} of run {run}, already judged against this \
                 incumbent ({verdict}: {reason}); a tree is judged once against an incumbent"
            ),
        ));
        ev.diff = Some(diff);
        ev
    }))
}
