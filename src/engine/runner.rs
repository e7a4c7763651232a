//! The runner for task commands: bwrap where it works, else plain process isolation (said
//! once, as a warning).

use sandbox::{Isolation, Runner};

/// The runner for task commands: bwrap where it works, else plain process isolation.
pub fn runner() -> Runner {
    let isolation = Isolation::detect(&std::env::var("PATH").unwrap_or_default());
    if let Isolation::Plain(why) = &isolation {
        tracing::warn!(
            "task commands run without bwrap isolation ({why}): no network or filesystem confinement"
        );
    }
    Runner::new(isolation)
}
