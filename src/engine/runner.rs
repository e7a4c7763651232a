//! The runner for task commands: bwrap where it works (with the user's home hidden, as well as
//! `/root` and `/home`), else plain process isolation (said once, as a warning). Sandboxed
//! processes a killed polymorph left behind are killed first.

use sandbox::{Isolation, Runner};

/// The runner for task commands: bwrap where it works, else plain process isolation.
pub fn runner() -> Runner {
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
    let runner = Runner::new(isolation);
    match std::env::var_os("HOME") {
        Some(home) if !home.is_empty() => runner.hiding(home.into()),
        _ => runner,
    }
}
