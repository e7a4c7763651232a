//! Evaluating one proposal: verify the change against the incumbent, apply it, build and test
//! it, benchmark it interleaved with the incumbent (A B, B A, ...) until the judge decides, and
//! test it again after timing. Every outcome is an `Evaluation` with a stage and a reason.

use super::failure::Failure;
use super::harness::{Built, Harness};
use super::processes::RoundSeed;
use crate::measure::{Decision, Judge, Sample, Summary, Verdict, same_cases};
use crate::record::Stage;
use crate::task::Task;
use proposers::{Proposal, ProposedChange};
use sandbox::{Change, FileTree, Limits, RelPath, verify_change};
use std::collections::BTreeMap;

/// Code layouts a confirmation series is built under (`POLYMORPH_LAYOUT` = 1, 2 or 3); the
/// shipped C tasks align functions and loops differently under each (docs/writing-a-task.md).
const LAYOUTS: u32 = 3;

/// Everything known about one evaluated candidate.
pub struct Evaluation {
    pub verdict: Verdict,
    pub stage: Stage,
    pub reason: String,
    pub log: Option<String>,
    pub summary: Option<Summary>,
    /// (round, incumbent sample, candidate sample)
    pub pairs: Vec<(Sample, Sample)>,
    pub diff: Option<String>,
    /// The candidate's tree, when it was built and judged.
    pub tree: Option<FileTree>,
    /// The candidate built here, when it was evaluated on this machine and got that far.
    pub built: Option<Built>,
    pub bench_seconds: f64,
    pub process_seconds: f64,
    /// True when the run was cancelled during this evaluation: it is not recorded.
    pub cancelled: bool,
    /// Why the machine, not the candidate, ended this evaluation (`Blame::Harness`): it is not
    /// recorded either, and the run stops, resumable.
    pub harness_fault: Option<String>,
    /// Where in `pairs` the confirmation series begins, for an evaluation that had one.
    pub confirmation_from: Option<usize>,
}

/// A unified diff of what `after` changes in `before` (files that differ only).
pub fn tree_diff(before: &FileTree, after: &FileTree) -> String {
    let mut out = String::new();
    let paths: std::collections::BTreeSet<&RelPath> = before
        .iter()
        .map(|(p, _)| p)
        .chain(after.iter().map(|(p, _)| p))
        .collect();
    for p in paths {
        let (a, b) = (before.get(p), after.get(p));
        if a == b {
            continue;
        }
        // A file that is not on one side is /dev/null there, as git writes it: a deleted file
        // and an emptied one are different trees and must not share a diff.
        let side = |f: Option<&[u8]>, prefix: &str| match f {
            Some(_) => format!("{prefix}/{p}"),
            None => "/dev/null".to_string(),
        };
        let (from, to) = (side(a, "a"), side(b, "b"));
        let a = String::from_utf8_lossy(a.unwrap_or_default());
        let b = String::from_utf8_lossy(b.unwrap_or_default());
        let patch = diffy::create_patch(&a, &b).to_string();
        // diffy writes "--- original\n+++ modified\n"; name the file the way git does.
        let body = patch.splitn(3, '\n').nth(2).unwrap_or("");
        out.push_str(&format!("--- {from}\n+++ {to}\n{body}"));
    }
    out
}

/// Turns a proposal into a change the sandbox can verify; an assignment is checked against the
/// space as of the incumbent (the knobs its parameter file adds included) and rendered with them.
fn to_change(task: &Task, proposal: &Proposal, incumbent: &FileTree) -> Result<Change, Failure> {
    match &proposal.change {
        ProposedChange::Diff(d) => Ok(Change::Diff(d.clone())),
        ProposedChange::Files(f) => Ok(Change::Files(f.clone())),
        ProposedChange::Params(p) => {
            let Some(spec) = &task.params else {
                return Err(Failure::new(
                    Stage::Verify,
                    "a parameter assignment, but the task declares no [params]",
                ));
            };
            let space = task
                .space_of(incumbent)
                .map_err(|e| Failure::new(Stage::Verify, e))?;
            if let Some(why) = space.invalid(p) {
                return Err(Failure::new(
                    Stage::Verify,
                    format!("invalid assignment: {why}"),
                ));
            }
            let text = task
                .render_params(incumbent, p)
                .map_err(|e| Failure::new(Stage::Verify, e))?;
            Ok(Change::Files(BTreeMap::from([(
                spec.file.to_string(),
                text,
            )])))
        }
    }
}

/// The candidate's tree and its diff: the proposal verified against the incumbent's tree
/// (editable files only, within the limits) and applied, and a knob it declares checked. Runs
/// no process.
pub fn candidate_tree(
    task: &Task,
    limits: &Limits,
    proposal: &Proposal,
    incumbent: &FileTree,
) -> Result<(FileTree, String), Failure> {
    let change = to_change(task, proposal, incumbent)?;
    let verified = verify_change(&change, incumbent, &task.editable, limits)
        .map_err(|e| Failure::new(Stage::Verify, e.to_string()))?;
    let tree = incumbent.apply(&verified);
    if task.params.is_some()
        && let Err(e) = task.space_of(&tree)
    {
        return Err(Failure::new(Stage::Verify, format!("a knob: {e}")));
    }
    let diff = tree_diff(incumbent, &tree);
    Ok((tree, diff))
}

impl Evaluation {
    /// An evaluation that failed before any process ran.
    pub fn failed(f: Failure) -> Self {
        Evaluation {
            harness_fault: f.harness_fault(),
            verdict: Verdict::Failed,
            stage: f.stage,
            reason: f.reason,
            log: f.log,
            summary: None,
            pairs: Vec::new(),
            diff: None,
            tree: None,
            built: None,
            bench_seconds: 0.0,
            process_seconds: 0.0,
            cancelled: false,
            confirmation_from: None,
        }
    }
}

impl Harness<'_> {
    /// Evaluates one proposal against the incumbent.
    pub fn evaluate(
        &mut self,
        proposal: &Proposal,
        incumbent: &Built,
        judge: &Judge<'_>,
    ) -> Evaluation {
        match candidate_tree(self.task, &self.limits, proposal, &incumbent.tree) {
            Err(f) => Evaluation::failed(f),
            Ok((tree, diff)) => {
                let mut ev = self.evaluate_tree(tree, incumbent, judge, proposal.screen_only);
                ev.diff = Some(diff);
                ev
            }
        }
    }

    /// The confirmation series of an accepted `tree`: the incumbent and `tree` built afresh
    /// under a code layout drawn at random (`POLYMORPH_LAYOUT`, 1 to `LAYOUTS`), so a speed that
    /// came from where code happened to fall in the first series' builds does not pass twice,
    /// then judged as `evaluate_tree` judges. Both are built alike, so the layout itself favours
    /// neither side.
    pub fn confirm_tree(
        &mut self,
        tree: FileTree,
        incumbent: &FileTree,
        judge: &Judge<'_>,
    ) -> Evaluation {
        self.set_layout(Some(rand::random_range(1..=LAYOUTS)));
        self.take_times();
        let again = self.prepare(incumbent.clone());
        let (rebuild, _) = self.take_times();
        let mut ev = match again {
            Ok(inc) => self.evaluate_tree(tree, &inc, judge, false),
            Err(f) => Evaluation::failed(Failure {
                reason: format!(
                    "the incumbent, built again for the confirmation series: {}",
                    f.reason
                ),
                ..f
            }),
        };
        ev.process_seconds += rebuild.as_secs_f64();
        self.set_layout(None);
        ev
    }

    /// Builds and tests a verified candidate tree, benchmarks it interleaved with the
    /// incumbent until the judge decides (only its screening pairs when `screen_only`), and
    /// tests it again when it is accepted.
    pub fn evaluate_tree(
        &mut self,
        tree: FileTree,
        incumbent: &Built,
        judge: &Judge<'_>,
        screen_only: bool,
    ) -> Evaluation {
        self.take_times();
        let mut ev = Evaluation::failed(Failure::new(Stage::Verify, ""));
        let result = self.evaluate_inner(tree, incumbent, judge, screen_only, &mut ev);
        if let Err(f) = result {
            ev.harness_fault = f.harness_fault();
            ev.verdict = Verdict::Failed;
            ev.stage = f.stage;
            ev.reason = f.reason;
            ev.log = f.log;
            ev.built = None;
            ev.tree = None;
        }
        ev.cancelled = self.cancelled();
        let (process, bench) = self.take_times();
        ev.process_seconds = process.as_secs_f64();
        ev.bench_seconds = bench.as_secs_f64();
        ev
    }

    fn evaluate_inner(
        &mut self,
        tree: FileTree,
        incumbent: &Built,
        judge: &Judge<'_>,
        screen_only: bool,
        ev: &mut Evaluation,
    ) -> Result<(), Failure> {
        let built = self.prepare(tree)?;
        let mut round = 0;
        let summary = loop {
            if self.cancelled() {
                return Err(Failure::new(Stage::Bench, "cancelled"));
            }
            // A B, B A, A B ...: alternating who goes first cancels slow drift. Both sides
            // of a pair share its round's seed.
            let seed = RoundSeed::fresh();
            let (inc, cand) = if round % 2 == 0 {
                let a = self.bench(incumbent, seed).map_err(|f| Failure {
                    reason: format!("incumbent {}", f.reason),
                    ..f
                })?;
                (a, self.bench(&built, seed)?)
            } else {
                let b = self.bench(&built, seed)?;
                (
                    self.bench(incumbent, seed).map_err(|f| Failure {
                        reason: format!("incumbent {}", f.reason),
                        ..f
                    })?,
                    b,
                )
            };
            same_cases(&inc, &cand)
                .map_err(|e| Failure::new(Stage::Bench, format!("bench output invalid: {e}")))?;
            ev.pairs.push((inc, cand));
            round += 1;
            let decision = if screen_only {
                judge.screen(&ev.pairs)
            } else {
                judge.decide(&ev.pairs)
            };
            match decision {
                Decision::Continue => continue,
                Decision::Invalid { reason } => return Err(Failure::new(Stage::Judge, reason)),
                Decision::Done {
                    verdict,
                    reason,
                    summary,
                } => {
                    ev.verdict = verdict;
                    ev.reason = reason;
                    ev.stage = Stage::Judge;
                    break summary;
                }
            }
        };
        ev.summary = Some(summary);
        if matches!(ev.verdict, Verdict::Accepted | Verdict::Quarantined) {
            self.test(&built, Stage::Retest)?;
            self.test_branches(&incumbent.tree, &built.tree)?;
        }
        ev.tree = Some(built.tree.clone());
        ev.built = Some(built);
        Ok(())
    }
}
