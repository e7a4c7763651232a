//! Warm starts: in a context never tuned, the bests of the nearest tuned contexts of the same
//! task and harness (same hardware first, then same workload) are offered as the first
//! candidates, each with its whole tree (its parameters and any edited code). Their old numbers
//! are not trusted: each is measured here like any candidate. A simulated run (`--simulate`)
//! starts from simulated neighbours only (another recorded machine: a transfer across GPUs), a
//! measured run from measured ones only.

use crate::record::{EntryKind, Ledger, Store};
use crate::task::{Fingerprint, Resolved, branch_name};
use anyhow::Result;
use proposers::{Origin, Params, Proposal, ProposedChange};

/// Neighbour entries re-measured when a run starts in a new context.
const WARM_START_MAX: usize = 3;

fn same_hardware(a: &Fingerprint, b: &Fingerprint) -> bool {
    a.cpu_model == b.cpu_model
        && a.cpu_cores == b.cpu_cores
        && a.gpus == b.gpus
        && a.toolchain == b.toolchain
}

/// The best entries of the nearest tuned contexts, as proposals to measure here.
pub async fn warm_start(store: &Store, ledger: &Ledger, r: &Resolved) -> Result<Vec<Proposal>> {
    let here = &r.fingerprint;
    let mut found = Vec::new();
    for (id, fp) in store.contexts(&r.task.name).await? {
        let Ok(fp) = serde_json::from_str::<Fingerprint>(&fp) else {
            continue;
        };
        if id == r.context_id
            || fp.harness_sha256 != here.harness_sha256
            || fp.simulation.is_empty() != here.simulation.is_empty()
        {
            continue;
        }
        let Some(best) = store
            .incumbent(&branch_name(&r.task.name, &id))
            .await?
            .filter(|e| e.kind == EntryKind::Accepted)
        else {
            continue;
        };
        let rank = if same_hardware(&fp, here) {
            0
        } else if fp.workload_sha256 == here.workload_sha256 {
            1
        } else {
            2
        };
        found.push((rank, id, best));
    }
    found.sort_by_key(|(rank, _, e)| (*rank, -e.id));
    let mut out = Vec::new();
    for (_, id, e) in found.into_iter().take(WARM_START_MAX) {
        let origin = Origin::WarmStart {
            context: id.clone(),
            entry: e.id,
        };
        let note = Some(format!("best entry e{} of neighbouring context {id}", e.id));
        let tree = ledger.read_tree(e.commit()?)?;
        let files: std::collections::BTreeMap<String, String> = tree
            .iter()
            .filter(|(p, b)| r.task.is_editable(p) && r.source.get(p) != Some(b.as_slice()))
            .map(|(p, b)| (p.to_string(), String::from_utf8_lossy(b).into_owned()))
            .collect();
        // The whole tree is re-measured: an entry whose only change is its parameters stays a
        // parameter assignment (search then never measures it twice); one with edited code
        // (an agent's) brings every edited file.
        let params_only = r
            .task
            .params
            .as_ref()
            .is_some_and(|spec| files.keys().all(|f| *f == spec.file.as_str()));
        let params: Option<Params> = e
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str(p).ok());
        let change = match params.filter(|_| params_only) {
            Some(p) => ProposedChange::Params(p),
            None => ProposedChange::Files(files),
        };
        out.push(Proposal {
            change,
            note,
            origin,
            usage: None,
            screen_only: false,
        });
    }
    Ok(out)
}
