//! What `show` prints and the review page displays about one candidate: its row, its ledger
//! entry, its samples per case (incumbent and candidate, pair by pair) and its diff.

use crate::measure::{SampleSide, Series, median};
use crate::record::store::{CandidateRow, EntryRow, StateRow};
use crate::record::{EntryKind, Ledger, Store};
use anyhow::{Context as _, Result};
use serde_json::{Value, json};
use std::path::Path;

/// Everything `show` and the review page display about one candidate.
pub struct ShowData {
    pub c: CandidateRow,
    pub entry: Option<EntryRow>,
    /// Per case: (incumbent samples, candidate samples).
    pub per_case: std::collections::BTreeMap<String, (Vec<f64>, Vec<f64>)>,
    pub diff: Option<String>,
    /// The machine's state at each bench process, for tasks that read one.
    pub states: Vec<StateRow>,
    /// The round (from 0) the confirmation series began at, for a candidate accepted in its
    /// first series and recorded since runs.db names each sample's series.
    pub confirmation_round: Option<i64>,
    /// The sha256 of the cache its run replayed, when it was simulated (`run --simulate`).
    pub simulation: Option<String>,
}

pub async fn show_data(
    store: &Store,
    ledger_path: &Path,
    cid: i64,
    entry: Option<EntryRow>,
) -> Result<ShowData> {
    let c = store
        .candidate(cid)
        .await?
        .with_context(|| format!("no candidate {cid} in runs.db"))?;
    let entry = match entry {
        Some(e) => Some(e),
        None => store.entry_for_candidate(cid).await?,
    };
    let samples = store.samples(cid).await?;
    // An accepted entry's diff comes from the ledger, against the entry it was built on.
    let diff = match &entry {
        Some(e) if e.kind == EntryKind::Accepted => {
            let parent = match e.parent_entry_id {
                Some(p) => store.entry(p).await?,
                None => None,
            };
            // Reading never creates a ledger: without one, the diff recorded with the candidate.
            match (parent, Ledger::open_existing(ledger_path)?) {
                (Some(p), Some(ledger)) => Some(ledger.diff(p.commit()?, e.commit()?)?),
                _ => c.diff.clone(),
            }
        }
        _ => c.diff.clone(),
    };
    let simulations = store.simulations().await?;
    let simulation = simulations.of(&c.task, &c.context_id).map(String::from);
    let confirmation_round = samples
        .iter()
        .filter(|s| s.series == Some(Series::Confirmation))
        .map(|s| s.round)
        .min();
    let mut per_case: std::collections::BTreeMap<String, (Vec<f64>, Vec<f64>)> = Default::default();
    for s in &samples {
        let slot = per_case.entry(s.case_name.clone()).or_default();
        if s.side == SampleSide::Incumbent {
            slot.0.push(s.value)
        } else {
            slot.1.push(s.value)
        }
    }
    Ok(ShowData {
        c,
        entry,
        per_case,
        diff,
        states: store.sample_states(cid).await?,
        confirmation_round,
        simulation,
    })
}

pub fn show_json(d: &ShowData) -> Result<Value> {
    let (c, entry) = (&d.c, &d.entry);
    let cases: serde_json::Map<String, Value> = d
        .per_case
        .iter()
        .map(|(k, (a, b))| (k.clone(), json!({ "incumbent": a, "candidate": b, "incumbent_median": median(a), "candidate_median": median(b) })))
        .collect();
    Ok(json!({
        "candidate": c.id, "run": c.run_id, "seq": c.seq, "task": c.task, "context_id": c.context_id,
        "proposer": c.proposer, "origin": c.origin, "note": c.note, "kind": c.kind, "payload": serde_json::from_str::<Value>(&c.payload)?,
        "verdict": c.verdict, "reason": c.reason, "stage": c.stage,
        "gain": c.gain, "gain_low": c.gain_low, "gain_high": c.gain_high, "confidence": c.confidence,
        "incumbent_score": c.incumbent_score, "candidate_score": c.candidate_score, "pairs": c.pairs,
        "bench_seconds": c.bench_seconds, "model": c.model, "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens, "agent_protocol": c.agent_protocol, "overhead_ms": c.overhead_ms, "parent_entry": c.parent_entry_id,
        "entry": entry.as_ref().map(|e| json!({
            "id": e.id, "commit": e.commit_sha, "branch": e.branch, "review_state": e.review_state,
            "reviewed_by": e.reviewed_by, "reviewed_at": e.reviewed_at, "review_reason": e.review_reason,
        })),
        "simulated": d.simulation.is_some(), "simulation": d.simulation,
        "cases": cases, "states": d.states.iter().map(|s| json!({ "round": s.round, "side": s.side, "state": s.state })).collect::<Vec<_>>(), "confirmation_round": d.confirmation_round, "diff": d.diff, "log": c.log, "created_at": c.created_at,
    }))
}
