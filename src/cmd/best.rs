//! `polymorph best`: the current best entry of a task for a context, what to deploy, and its
//! whole tree on request.

use super::output::{fmt_score, print_json, say};
use crate::cli::{BestArgs, Cli};
use anyhow::{Context as _, Result, bail};
use polymorph::record::store::{EntryRow, SIMULATED};
use polymorph::record::{EntryKind, Ledger, ReviewState, Store};
use polymorph::task::{branch_name, resolve};
use serde_json::{Value, json};
use std::path::Path;

pub async fn best(cli: &Cli, a: BestArgs) -> Result<()> {
    let store = &Store::open_existing(&cli.db()).await?;
    let (task, context, emit, json) = (
        a.task.as_str(),
        a.context.as_deref(),
        a.emit.as_deref(),
        a.json,
    );
    let ledger_buf = cli.ledger();
    let ledger_path = ledger_buf.as_path();
    let (name, ctx) = task_and_context(store, task, context).await?;
    let branch = branch_name(&name, &ctx);
    let e = if a.approved {
        store.best_approved(&branch).await?
    } else {
        store.incumbent(&branch).await?
    }
    .with_context(|| format!("no entries for {name} in context {ctx} (branch {branch})"))?;
    let origin = store
        .origin(&branch)
        .await?
        .with_context(|| format!("branch {branch} has no origin entry"))?;
    let ledger = Ledger::open_or_init(ledger_path)?;
    let tree = ledger.read_tree(e.commit()?)?;
    let start = ledger.read_tree(origin.commit()?)?;
    let params: Option<Value> = e.params.as_deref().map(serde_json::from_str).transpose()?;
    // What to deploy: the files this entry changes against the task as given.
    let changed: serde_json::Map<String, Value> = tree
        .iter()
        .filter(|(p, b)| start.get(p) != Some(b.as_slice()))
        .map(|(p, b)| {
            (
                p.to_string(),
                Value::from(String::from_utf8_lossy(b).into_owned()),
            )
        })
        .collect();
    if let Some(dir) = emit {
        if dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
            bail!("--emit {}: the directory is not empty", dir.display());
        }
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        tree.write_to(dir)?;
    }
    let simulation = store.simulations().await?.of(&name, &ctx).map(String::from);
    if json {
        return print_json(&json!({
            "task": name, "context_id": ctx, "branch": branch, "entry": e.id, "kind": e.kind, "commit": e.commit_sha,
            "score": e.score, "review_state": e.review_state, "approved": e.review_state == ReviewState::Approved,
            "approved_only": a.approved, "params": params,
            "deploy": { "params": params, "files": changed }, "emitted": emit.map(|d| d.display().to_string()),
            "simulated": simulation.is_some(), "simulation": simulation,
        }));
    }
    if simulation.is_some() {
        say!("{SIMULATED}: a configuration chosen on recorded samples, to measure before use");
    }
    print_best(&name, &ctx, &branch, &e, params, &changed, emit, a.approved);
    Ok(())
}

/// The task's name and the context to look in: a task directory's current context, or the one
/// context a task name has in runs.db, unless `--context` says.
async fn task_and_context(
    store: &Store,
    task: &str,
    context: Option<&str>,
) -> Result<(String, String)> {
    let as_dir = Path::new(task);
    let (name, ctx) = if as_dir.join("task.toml").is_file() {
        let r = resolve(as_dir, None)?;
        let ctx = context.map(str::to_string).unwrap_or(r.context_id);
        (r.task.name, ctx)
    } else {
        let ctx = match context {
            Some(c) => c.to_string(),
            None => {
                let mut ctxs: Vec<String> = store
                    .entries(Some(task))
                    .await?
                    .into_iter()
                    .map(|e| e.context_id)
                    .collect();
                ctxs.sort();
                ctxs.dedup();
                match ctxs.as_slice() {
                    [one] => one.clone(),
                    [] => bail!("no entries for task {task} in runs.db"),
                    many => bail!(
                        "task {task} has several contexts ({}); pass --context or the task directory",
                        many.join(", ")
                    ),
                }
            }
        };
        (task.to_string(), ctx)
    };
    Ok((name, ctx))
}

/// The entry in a few lines for people.
#[allow(clippy::too_many_arguments)]
fn print_best(
    name: &str,
    ctx: &str,
    branch: &str,
    e: &EntryRow,
    params: Option<Value>,
    changed: &serde_json::Map<String, Value>,
    emit: Option<&Path>,
    approved_only: bool,
) {
    let what = match (e.kind, approved_only) {
        (EntryKind::Origin, false) => "the task as given (nothing accepted yet)".to_string(),
        (EntryKind::Origin, true) => "the task as given (no entry approved yet)".to_string(),
        (EntryKind::Accepted, _) => format!("entry e{}", e.id),
    };
    say!("best for {name} in context {ctx}: {what}");
    say!(
        "  commit {} on {branch} ({}), score {}",
        e.commit_sha,
        e.review_state,
        fmt_score(e.score)
    );
    match e.review_state {
        ReviewState::Approved => {}
        ReviewState::Pending => say!(
            "  review   PENDING: not approved yet (`polymorph review`); `best --approved` names the best approved entry"
        ),
        ReviewState::Rejected => say!("  review   REJECTED"),
    }
    if let Some(p) = params {
        say!("  params {p}");
    }
    let files: Vec<&String> = changed.keys().collect();
    if !files.is_empty() {
        say!(
            "  changes {}",
            files
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(dir) = emit {
        say!("  tree written to {}", dir.display());
    }
}
