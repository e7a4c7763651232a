//! Human review of ledger entries: approving, rejecting (a revert commit on the branch restores
//! the best entry left; every entry built on the rejected one is rejected with it, since its tree
//! contains the rejected change), and exporting an entry as a patch `git am` accepts.

use super::kinds::{EntryKind, ReviewState};
use super::ledger::{CommitId, Ledger};
use super::lock::LockFile;
use super::store::{EntryRow, Store};
use anyhow::{Context as _, Result, bail};
use serde::Serialize;
use std::path::Path;

/// Who is reviewing: `--by`, else the login name.
pub fn reviewer(by: Option<String>) -> String {
    by.or_else(|| std::env::var("USER").ok())
        .or_else(|| std::env::var("LOGNAME").ok())
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

fn reviewable(e: &EntryRow) -> Result<()> {
    if e.kind != EntryKind::Accepted {
        bail!("e{} is the task as given: there is nothing to review", e.id);
    }
    if e.review_state == ReviewState::Rejected {
        bail!(
            "e{} is already rejected ({})",
            e.id,
            e.review_reason.as_deref().unwrap_or("no reason")
        );
    }
    Ok(())
}

pub async fn approve(
    store: &Store,
    db: &Path,
    entry: &EntryRow,
    by: &str,
    note: Option<&str>,
) -> Result<()> {
    let _lock = LockFile::run(db)?;
    reviewable(entry)?;
    store.approve(entry.id, by, note).await
}

#[derive(Debug, Serialize)]
pub struct Rejection {
    pub rejected: Vec<i64>,
    pub restores: i64,
    pub revert_commit: String,
    pub branch: String,
}

/// The ledger is opened only in the synchronous steps (a git repository is not shared across
/// threads), so the future can run on any executor thread.
pub async fn reject(
    store: &Store,
    db: &Path,
    ledger_path: &Path,
    entry: &EntryRow,
    by: &str,
    reason: &str,
) -> Result<Rejection> {
    let _lock = LockFile::run(db)?;
    reviewable(entry)?;
    if reason.trim().is_empty() {
        bail!("--reason must say why the entry is rejected");
    }
    let kept = store
        .entries(Some(&entry.task))
        .await?
        .into_iter()
        .filter(|e| {
            e.branch == entry.branch && e.id < entry.id && e.review_state != ReviewState::Rejected
        })
        .max_by_key(|e| e.id)
        .context("no entry left to restore on the branch")?;
    let later: Vec<i64> = store
        .entries(Some(&entry.task))
        .await?
        .into_iter()
        .filter(|e| {
            e.branch == entry.branch
                && e.id > entry.id
                && e.kind == EntryKind::Accepted
                && e.review_state != ReviewState::Rejected
        })
        .map(|e| e.id)
        .collect();
    let mut message = format!(
        "Revert e{}: {reason}\n\nrejected by {by}; restores e{} ({})\n",
        entry.id, kept.id, kept.commit_sha
    );
    if !later.is_empty() {
        let ids: Vec<String> = later.iter().map(|i| format!("e{i}")).collect();
        message.push_str(&format!(
            "also rejected, built on e{}: {}\n",
            entry.id,
            ids.join(", ")
        ));
    }
    // Same order as a run: commit object, then the record, then the branch.
    let oid = {
        let ledger = Ledger::open_or_init(ledger_path)?;
        let head = ledger
            .branch_head(&entry.branch)?
            .with_context(|| format!("ledger branch {} is missing", entry.branch))?;
        let tree = ledger.read_tree(CommitId::parse(&kept.commit_sha)?)?;
        ledger.write_commit(Some(head), &tree, &message)?
    };
    let rejected = store
        .reject(entry, kept.id, &oid.to_string(), by, reason)
        .await?;
    Ledger::open_or_init(ledger_path)?.set_branch(&entry.branch, oid)?;
    Ok(Rejection {
        rejected,
        restores: kept.id,
        revert_commit: oid.to_string(),
        branch: entry.branch.clone(),
    })
}

/// The entry as an mbox patch against the task as given: `git am` and `git apply` take it.
pub async fn export(store: &Store, ledger: &Ledger, entry: &EntryRow) -> Result<String> {
    if entry.kind != EntryKind::Accepted {
        bail!(
            "e{} is the task as given: there is no change to export",
            entry.id
        );
    }
    let origin = store
        .origin(&entry.branch)
        .await?
        .with_context(|| format!("branch {} has no origin entry", entry.branch))?;
    let oid = CommitId::parse(&entry.commit_sha)?;
    let diff = ledger.diff(CommitId::parse(&origin.commit_sha)?, oid)?;
    let message = ledger.message(oid)?;
    let (subject, body) = message.split_once('\n').unwrap_or((&message, ""));
    let date = chrono::DateTime::parse_from_rfc3339(&entry.created_at)
        .map(|d| d.to_rfc2822())
        .unwrap_or_default();
    Ok(format!(
        "From {oid} Mon Sep 17 00:00:00 2001\nFrom: polymorph <polymorph@localhost>\nDate: {date}\nSubject: [PATCH] {subject}\n\n{}\n---\n{diff}-- \npolymorph {}\n",
        body.trim(),
        env!("CARGO_PKG_VERSION")
    ))
}
