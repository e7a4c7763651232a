//! Making the ledger branch and runs.db agree before a run: a new branch gets the task as given
//! as its first commit and origin entry; a branch that lags runs.db (a process died between
//! recording and moving it) is moved forward; a mismatched pair of db and ledger is refused. Two
//! controllers sharing both may start a branch at once: one origin entry wins, both use it.

use crate::record::{CommitId, Ledger, Store};
use crate::task::Resolved;
use anyhow::{Context as _, Result, bail};
use proposers::params_key;

/// Syncs the branch of `r` and returns its incumbent entry (id, commit).
pub async fn sync_ledger(store: &Store, ledger: &Ledger, r: &Resolved) -> Result<(i64, CommitId)> {
    let expected = store.expected_head(&r.branch).await?;
    let head = ledger.branch_head(&r.branch)?;
    match (expected, head) {
        (Some(expected), head) => {
            let oid = CommitId::parse(&expected)?;
            if head != Some(oid) {
                if !ledger.has_commit(oid) {
                    bail!(
                        "runs.db records commit {expected} on {} but the ledger lacks it: is --ledger the ledger of this --db?",
                        r.branch
                    );
                }
                // A process died between recording a commit and moving the branch: finish the move.
                tracing::warn!(branch = %r.branch, commit = %expected, "ledger branch lagged runs.db; moved it forward");
                ledger.set_branch(&r.branch, oid)?;
            }
        }
        (None, Some(head)) => {
            // Another controller sharing the database and the ledger may have started the
            // branch between the two reads above: then the database has its origin now.
            if store.expected_head(&r.branch).await?.is_some() {
                return Box::pin(sync_ledger(store, ledger, r)).await;
            }
            bail!(
                "ledger branch {} (at {head}) has no entries in runs.db: is --db the database of this --ledger?",
                r.branch
            )
        }
        (None, None) => {
            if let Err(e) = start_branch(store, ledger, r).await {
                // Another controller sharing the database started the branch a moment earlier
                // (a branch has one origin entry): go on from its origin.
                if store.expected_head(&r.branch).await?.is_none() {
                    return Err(e);
                }
                return Box::pin(sync_ledger(store, ledger, r)).await;
            }
        }
    }
    let inc = store
        .incumbent(&r.branch)
        .await?
        .context("the ledger branch has no incumbent entry")?;
    Ok((inc.id, inc.commit()?))
}

/// The branch's first commit (the task as given), its origin entry, then the branch itself.
async fn start_branch(store: &Store, ledger: &Ledger, r: &Resolved) -> Result<()> {
    let message = format!(
        "{}: the task as given\n\ncontext {}\n{}\n",
        r.task.name,
        r.context_id,
        serde_json::to_string_pretty(&r.fingerprint)?
    );
    let oid = ledger.write_commit(None, &r.source, &message)?;
    let params = r.task.params_of(&r.source).map(|p| params_key(&p));
    store
        .insert_origin(
            &r.task.name,
            &r.context_id,
            &r.branch,
            &oid.to_string(),
            params.as_deref(),
        )
        .await?;
    ledger.set_branch(&r.branch, oid)
}
