//! Paths a task.toml names: globs of files, and files or directories under the task that must
//! exist.

use anyhow::{Context as _, Result, bail};
use globset::{Glob, GlobSet, GlobSetBuilder};
use sandbox::RelPath;
use std::path::Path;

pub(super) fn globset(file: &Path, field: &str, globs: &[String]) -> Result<GlobSet> {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        let glob =
            Glob::new(g).with_context(|| format!("{}: {field}: bad glob {g:?}", file.display()))?;
        b.add(glob);
    }
    b.build()
        .with_context(|| format!("{}: {field}", file.display()))
}

/// A path the task names under its directory, which must exist (a directory when `dir`).
pub(super) fn existing(
    root: &Path,
    file: &Path,
    field: &str,
    raw: Option<String>,
    dir: bool,
) -> Result<Option<RelPath>> {
    let f = file.display();
    let Some(raw) = raw else {
        return Ok(None);
    };
    let p = RelPath::new(raw.trim_end_matches('/'))
        .map_err(|e| anyhow::anyhow!("{f}: {field}: {e}"))?;
    let abs = p.under(root);
    let (ok, what) = if dir {
        (abs.is_dir(), "directory")
    } else {
        (abs.is_file(), "file")
    };
    if !ok {
        bail!(
            "{f}: {field} = {raw:?}: no such {what} under {}",
            root.display()
        );
    }
    Ok(Some(p))
}
