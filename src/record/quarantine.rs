//! The way out of quarantine. A quarantined candidate was built, tested before and after timing
//! and measured, but its gain was too large to believe without a human. A person who checked it
//! either releases it into the ledger (a new entry, approved in the same step, recorded with who
//! and why) or dismisses it. Either decision is final and recorded once.

use super::ledger::Ledger;
use super::lock::LockFile;
use super::store::{CandidateRow, Store};
use crate::measure::Verdict;
use anyhow::{Context as _, Result, bail};
use sandbox::{Change, FileTree, Limits, verify_change};
use std::path::Path;

/// What a decision did, for the terminal and `--json`.
#[derive(Debug, serde::Serialize)]
pub struct Decided {
    pub candidate: i64,
    pub decision: &'static str,
    /// The ledger entry a released candidate became.
    pub entry: Option<i64>,
    pub commit: Option<String>,
}

/// What every decision starts with: the run lock held, the candidate still waiting, and a
/// reason given (`missing` says which flag).
async fn begin(
    store: &Store,
    db: &Path,
    c: &CandidateRow,
    why: &str,
    missing: &str,
) -> Result<LockFile> {
    let lock = LockFile::run(db)?;
    undecided(store, c).await?;
    if why.trim().is_empty() {
        bail!("{missing}");
    }
    Ok(lock)
}

/// Checks that the candidate waits for a decision.
async fn undecided(store: &Store, c: &CandidateRow) -> Result<()> {
    if c.verdict != Verdict::Quarantined {
        bail!(
            "candidate {} is not quarantined (it was {}): approve or reject ledger entries as eN",
            c.id,
            c.verdict
        );
    }
    if let Some((decision, by)) = store.quarantine_decision(c.id).await? {
        bail!("candidate {} was already {decision} by {by}", c.id);
    }
    Ok(())
}

/// Releases a quarantined candidate into its branch: its tree is its parent entry's with its
/// recorded change applied, committed on top of the branch, recorded as an approved entry.
/// Only while its parent is still the branch's incumbent: on a branch that moved on, its tree
/// would drop the entries accepted since.
pub async fn release(
    store: &Store,
    db: &Path,
    ledger_path: &Path,
    c: &CandidateRow,
    by: &str,
    why: &str,
) -> Result<Decided> {
    let _lock = begin(
        store,
        db,
        c,
        why,
        "releasing a quarantined candidate needs --note saying why its gain is real",
    )
    .await?;
    let parent_id = c
        .parent_entry_id
        .with_context(|| format!("candidate {} has no parent entry", c.id))?;
    let parent = store
        .entry(parent_id)
        .await?
        .with_context(|| format!("parent entry e{parent_id} is missing"))?;
    let incumbent = store.incumbent(&parent.branch).await?;
    if incumbent.as_ref().map(|e| e.id) != Some(parent_id) {
        bail!(
            "candidate {} was measured against e{parent_id}, but {} has moved on (now at e{}): run it again as a candidate instead",
            c.id,
            parent.branch,
            incumbent.map_or(0, |e| e.id)
        );
    }
    let diff = c
        .diff
        .clone()
        .with_context(|| format!("candidate {} has no recorded change", c.id))?;
    let ledger = Ledger::open_existing(ledger_path)?
        .with_context(|| format!("no ledger at {}", ledger_path.display()))?;
    let tree = apply(&ledger.read_tree(parent.commit()?)?, &diff)?;
    let message = format!(
        "{}: released from quarantine by {by}\n\n{why}\ncandidate {} (run {}): {}\ncontext: {}\n",
        c.task, c.id, c.run_id, c.reason, c.context_id
    );
    // Same order as a run: commit object, then the record, then the branch.
    let head = ledger.branch_head(&parent.branch)?;
    let oid = ledger.write_commit(head, &tree, &message)?;
    let entry = store
        .record_release(c, &parent, &oid.to_string(), by, why)
        .await?;
    ledger.set_branch(&parent.branch, oid)?;
    Ok(Decided {
        candidate: c.id,
        decision: "released",
        entry: Some(entry),
        commit: Some(oid.to_string()),
    })
}

/// Dismisses a quarantined candidate: it stays out of the ledger, with who and why recorded.
pub async fn dismiss(
    store: &Store,
    db: &Path,
    c: &CandidateRow,
    by: &str,
    why: &str,
) -> Result<Decided> {
    let _lock = begin(
        store,
        db,
        c,
        why,
        "--reason must say why the candidate is dismissed",
    )
    .await?;
    store.record_dismissal(c.id, by, why).await?;
    Ok(Decided {
        candidate: c.id,
        decision: "dismissed",
        entry: None,
        commit: None,
    })
}

/// The parent's tree with the recorded diff applied (verified again: the diff only touches the
/// files it touched when it was evaluated).
fn apply(parent: &FileTree, diff: &str) -> Result<FileTree> {
    let any = globset::GlobSetBuilder::new()
        .add(globset::Glob::new("**")?)
        .build()?;
    let verified = verify_change(
        &Change::Diff(diff.to_string()),
        parent,
        &any,
        &Limits::default(),
    )
    .context("the recorded change no longer applies to its parent entry")?;
    Ok(parent.apply(&verified))
}
