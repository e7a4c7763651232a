//! Entry ids as people write them: `e7`, or a commit prefix.

use crate::record::Store;
use crate::record::store::EntryRow;
use anyhow::{Context as _, Result, bail};

/// An entry named as `e7` or by a commit prefix of at least 7 hex digits; `None` when the id
/// has neither form or names nothing.
pub async fn resolve_entry(store: &Store, id: &str) -> Result<Option<EntryRow>> {
    if let Some(n) = id.strip_prefix('e').and_then(|n| n.parse::<i64>().ok()) {
        return store.entry(n).await;
    }
    if id.len() >= 7 && id.chars().all(|c| c.is_ascii_hexdigit()) && id.parse::<i64>().is_err() {
        let found = store.entry_by_commit(&id.to_ascii_lowercase()).await?;
        if found.len() > 1 {
            bail!("commit prefix {id} is ambiguous ({} entries)", found.len());
        }
        return Ok(found.into_iter().next());
    }
    Ok(None)
}

/// A ledger entry named on the command line (e7, or a commit prefix).
pub async fn entry_arg(store: &Store, id: &str) -> Result<EntryRow> {
    resolve_entry(store, id).await?.with_context(|| {
        format!("no ledger entry {id}: give e7 or a commit prefix (see `polymorph review`)")
    })
}
