//! What an evaluated candidate becomes: its row in runs.db (samples and machine states
//! included) and, when it is accepted, its ledger commit message naming where it came from.

use crate::engine::evaluate::Evaluation;
use crate::measure::{SampleSide, Series, Summary, pct};
use crate::record::store::{NewEvaluation, NewSample, SIMULATED, StateRow};
use crate::record::{ChangeKind, RunProposer};
use crate::task::Resolved;
use crate::task::knobs::new_knobs;
use proposers::{Proposal, ProposedChange, params_key};
use sandbox::FileTree;

/// Where an accepted candidate came from, in its ledger commit.
pub struct Provenance<'a> {
    pub proposal: &'a proposers::Proposal,
    pub proposer: &'a str,
    pub run_id: i64,
    pub seq: usize,
}

/// The ledger commit message of a candidate accepted over `before`, whose tree is `after`: its
/// gain, the judge's reason, where it came from, and the knobs it adds to the parameter space.
pub fn commit_message(
    r: &Resolved,
    why: &Provenance<'_>,
    reason: &str,
    s: &Summary,
    before: &FileTree,
    after: &FileTree,
) -> String {
    let mut m = format!(
        "{}: {} {:.4} -> {:.4} ({})\n\n{reason}\nproposer: {} ({})\nrun {}, candidate {}\ncontext: {}\n",
        r.task.name,
        r.task.metric.name,
        s.incumbent_score,
        s.candidate_score,
        pct(s.gain.estimate),
        why.proposer,
        why.proposal.origin,
        why.run_id,
        why.seq,
        r.context_id,
    );
    if let Some(note) = &why.proposal.note {
        m.push_str(&format!("note: {note}\n"));
    }
    if !r.fingerprint.simulation.is_empty() {
        m.push_str(&format!(
            "{SIMULATED}\ncache sha256: {}\n",
            r.fingerprint.simulation
        ));
    }
    let knobs = |t| r.task.added_knobs(t).unwrap_or_default();
    let added = new_knobs(&knobs(before), &knobs(after));
    if !added.is_empty() {
        m.push_str(&format!("knobs added: {}\n", added.join(", ")));
    }
    // The note and the reason are the proposer's words: `git log` shows them, never obeys them.
    sandbox::shown(&m).into_owned()
}

/// The row an evaluation becomes (its overhead is filled in just before it is written).
pub fn record_row(
    ev: &Evaluation,
    r: &Resolved,
    why: &Provenance<'_>,
    chosen: &RunProposer,
    parent_entry: i64,
) -> NewEvaluation {
    let proposal: &Proposal = why.proposal;
    let (kind, payload, params_key) = match &proposal.change {
        ProposedChange::Diff(d) => (ChangeKind::Diff, serde_json::json!({ "diff": d }), None),
        ProposedChange::Files(f) => (ChangeKind::Files, serde_json::json!({ "files": f }), None),
        ProposedChange::Params(p) => (
            ChangeKind::Params,
            serde_json::json!({ "params": p }),
            Some(params_key(p)),
        ),
    };
    let mut samples = Vec::new();
    let mut states = Vec::new();
    for (round, (a, b)) in ev.pairs.iter().enumerate() {
        let series = match ev.confirmation_from {
            Some(from) if round >= from => Series::Confirmation,
            _ => Series::First,
        };
        for (side, s) in [(SampleSide::Incumbent, a), (SampleSide::Candidate, b)] {
            if let Some(state) = &s.state {
                states.push(StateRow {
                    round: round as i64,
                    side,
                    state: state.clone(),
                });
            }
            for (case, v) in &s.cases {
                samples.push(NewSample {
                    round: round as i64,
                    series,
                    side,
                    case: case.clone(),
                    value: *v,
                });
            }
        }
    }
    NewEvaluation {
        run_id: why.run_id,
        seq: why.seq as i64,
        task: r.task.name.clone(),
        context_id: r.context_id.clone(),
        proposer: chosen.kind(),
        origin: proposal.origin.to_string(),
        note: proposal.note.clone(),
        kind,
        payload: payload.to_string(),
        params_key,
        diff: ev.diff.clone(),
        parent_entry_id: Some(parent_entry),
        verdict: ev.verdict,
        reason: ev.reason.clone(),
        stage: ev.stage,
        gain: ev.summary.as_ref().map(|s| s.gain),
        incumbent_score: ev.summary.as_ref().map(|s| s.incumbent_score),
        candidate_score: ev.summary.as_ref().map(|s| s.candidate_score),
        pairs: ev.pairs.len() as i64,
        bench_seconds: ev.bench_seconds,
        process_seconds: ev.process_seconds,
        overhead_ms: 0.0,
        log: ev.log.clone(),
        samples,
        states,
        usage: proposal.usage.clone(),
    }
}
