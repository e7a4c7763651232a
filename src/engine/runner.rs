//! The runner for task commands: bwrap where it works (with the user's home hidden, as well as
//! `/root` and `/home`, and the store and ledger it records in), else plain process isolation (said once, as a warning). Sandboxed
//! processes a killed polymorph left behind are killed first.

use sandbox::{Isolation, Runner};
use std::path::{Path, PathBuf};

/// The runner for task commands: bwrap where it works, else plain process isolation.
/// `records` (the store and the ledger this polymorph writes) are hidden from the commands like
/// the homes: a directory behind an empty tmpfs, a file (and SQLite's files beside it) empty.
pub fn runner(records: &[&Path]) -> Runner {
    let orphans = sandbox::reap_orphans();
    if orphans > 0 {
        tracing::warn!(
            "killed {orphans} sandboxed process(es) left running by a polymorph that is gone"
        );
    }
    let isolation = Isolation::detect(&std::env::var("PATH").unwrap_or_default());
    if let Isolation::Plain(why) = &isolation {
        tracing::warn!(
            "task commands run without bwrap isolation ({why}): no network or filesystem confinement"
        );
    }
    let mut runner = Runner::new(isolation);
    for p in records {
        runner = runner.hiding_record(absolute(p));
    }
    match std::env::var_os("HOME") {
        Some(home) if !home.is_empty() => runner.hiding(home.into()),
        _ => runner,
    }
}

/// `p` made absolute against the working directory (bwrap binds absolute paths only).
fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}
