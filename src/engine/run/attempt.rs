//! The run row a run works in: the newest interrupted one of its task, context and proposer
//! that no other live process holds (resumed where it stopped), or a new one, claimed.

use super::options::RunOptions;
use crate::record::store::RunClaim;
use crate::record::{RunProposer, Store};
use crate::task::Resolved;
use anyhow::Result;

/// The run row this attempt works in: new, or an interrupted one resumed.
pub struct Attempt {
    pub run_id: i64,
    pub done: usize,
    pub seed: u64,
    pub resumed: bool,
    /// This process's claim on the run (see `Store::claim_run`), held while it works in it.
    _claim: RunClaim,
}

pub async fn start_or_resume(
    store: &Store,
    r: &Resolved,
    proposer: &RunProposer,
    opts: &RunOptions,
) -> Result<Attempt> {
    let task = &r.task;
    // The newest unfinished run nobody else works in (on a shared database another live
    // controller may hold one).
    for run in store
        .resumable_runs(&task.name, &r.context_id, proposer)
        .await?
    {
        let Some(claim) = store.claim_run(run.id).await? else {
            continue;
        };
        let done = store.candidates_in_run(run.id).await? as usize;
        store.mark_running(run.id).await?;
        if opts.progress {
            eprintln!(
                "resuming run {} ({done} of {} candidates already evaluated)",
                run.id,
                opts.budget.max(run.budget as usize)
            );
        }
        return Ok(Attempt {
            run_id: run.id,
            done,
            seed: run.seed as u64,
            resumed: true,
            _claim: claim,
        });
    }
    let seed = opts
        .seed
        .unwrap_or_else(|| u64::from(rand::random::<u32>()));
    loop {
        let run_id = store
            .create_run(
                &task.name,
                &task.dir.display().to_string(),
                &r.context_id,
                proposer,
                opts.budget as i64,
                seed as i64,
            )
            .await?;
        // Another controller may resume a brand-new run before its creator claims it: then
        // that one works in it and this one makes another.
        if let Some(claim) = store.claim_run(run_id).await? {
            return Ok(Attempt {
                run_id,
                done: 0,
                seed,
                resumed: false,
                _claim: claim,
            });
        }
    }
}
