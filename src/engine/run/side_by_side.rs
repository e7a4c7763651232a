//! Remote targets probed and grouped by the context of their nodes, and a mixed cluster (targets
//! of several contexts) tuned as one run per context side by side: each in a thread with its own
//! runtime and database connections, each writing its own run row and ledger branch, so a result
//! always lands in the context of the node that measured it.

use super::in_context::{Context, run_in_context};
use super::options::RunOptions;
use super::report::RunReport;
use crate::engine::evaluate::base_job;
use crate::engine::remote::{Pool, Remote, Target, TargetOptions};
use crate::record::Store;
use crate::task::{Resolved, branch_name};
use anyhow::{Context as _, Result, bail};
use sandbox::{CancelFlag, Runner};
use std::path::Path;

/// Probes the targets; one context per node type among them (the nodes measure, not this
/// machine), with the targets that answered from it.
pub(super) fn probe_targets(
    r: &Resolved,
    targets: &[Target],
    options: &TargetOptions,
    cancel: &CancelFlag,
) -> Result<Vec<Context>> {
    let remotes = targets
        .iter()
        .map(|t| Remote::new(t.clone(), options, &r.task))
        .collect::<Result<Vec<_>>>()?;
    let groups = Pool::new(remotes)
        .probe(&base_job(r)?, cancel)?
        .context("interrupted while probing the targets")?;
    let several = groups.len() > 1;
    let mut out = Vec::new();
    for (reply, pool) in groups {
        let mut r = r.clone();
        r.fingerprint = serde_json::from_value(reply.fingerprint)
            .with_context(|| format!("the context {} sent is not valid", reply.node))?;
        r.context_id = reply.context_id;
        r.branch = branch_name(&r.task.name, &r.context_id);
        eprintln!(
            "evaluating on {} (node {}, sandbox {}, context {})",
            pool.targets().join(", "),
            reply.node,
            reply.sandbox,
            r.context_id
        );
        let label = if several {
            format!("{} ", r.context_id)
        } else {
            String::new()
        };
        out.push(Context {
            r,
            cache: None,
            pool: Some(pool),
            label,
        });
    }
    if several {
        eprintln!(
            "the targets span {} contexts: one run per context, side by side",
            out.len()
        );
    }
    Ok(out)
}

/// One run per context at once, each on its own thread; the reports in the contexts' order.
/// A run that fails does not stop the others; the error names its context.
pub(super) fn side_by_side(
    store: &Store,
    ledger_path: &Path,
    contexts: Vec<Context>,
    opts: &RunOptions,
    runner: &Runner,
    cancel: CancelFlag,
) -> Result<Vec<RunReport>> {
    let results: Vec<(String, Result<RunReport>)> = tokio::task::block_in_place(|| {
        std::thread::scope(|scope| {
            let handles: Vec<_> = contexts
                .into_iter()
                .map(|ctx| {
                    let id = ctx.r.context_id.clone();
                    let cancel = cancel.clone();
                    let handle = scope.spawn(move || -> Result<RunReport> {
                        let rt = tokio::runtime::Builder::new_multi_thread()
                            .enable_all()
                            .build()?;
                        rt.block_on(async {
                            let store = store.reopen().await?;
                            run_in_context(&store, ledger_path, ctx, opts, runner, cancel).await
                        })
                    });
                    (id, handle)
                })
                .collect();
            handles
                .into_iter()
                .map(|(id, h)| {
                    let result = h
                        .join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("the run panicked")));
                    (id, result)
                })
                .collect()
        })
    });
    let mut reports = Vec::new();
    let mut errors = Vec::new();
    for (id, result) in results {
        match result {
            Ok(report) => reports.push(report),
            Err(e) => errors.push(format!("context {id}: {e:#}")),
        }
    }
    if !errors.is_empty() {
        bail!(
            "{} of {} runs failed (the others' results are recorded): {}",
            errors.len(),
            errors.len() + reports.len(),
            errors.join("; ")
        );
    }
    Ok(reports)
}
