//! `polymorph context`: the task's context on this machine now, and what went into it.

use super::output::{joined, print_json, say};
use crate::cli::ContextArgs;
use anyhow::Result;
use polymorph::task::resolve;
use serde_json::json;

pub fn context(a: ContextArgs) -> Result<()> {
    let r = resolve(&a.task_dir, a.workload.as_deref())?;
    let json = a.json;
    if json {
        return print_json(
            &json!({ "task": r.task.name, "context_id": r.context_id, "branch": r.branch, "fingerprint": r.fingerprint }),
        );
    }
    let f = &r.fingerprint;
    say!(
        "context {} for {} (ledger branch {})",
        r.context_id,
        r.task.name,
        r.branch
    );
    say!("  cpu        {} ({} cores)", f.cpu_model, f.cpu_cores);
    say!("  gpus       {}", joined(&f.gpus, "none"));
    say!("  toolchain  {}", joined(&f.toolchain, "-"));
    say!(
        "  workload   {} (sha256 {})",
        if f.workload.is_empty() {
            "-"
        } else {
            &f.workload
        },
        &f.workload_sha256[..f.workload_sha256.len().min(12)]
    );
    say!(
        "  model      {}",
        if f.model.is_empty() { "-" } else { &f.model }
    );
    say!(
        "  harness    sha256 {}",
        &f.harness_sha256[..12.min(f.harness_sha256.len())]
    );
    Ok(())
}
