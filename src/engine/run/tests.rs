//! The loop against the `Processes` seam: a real runs.db and git ledger in a temporary folder,
//! the spin fixture resolved as a run would, and its processes played by `Scripted`, so what the
//! loop records and commits is checked without building or running anything.

use super::attempt::start_or_resume;
use super::ledger_sync::sync_ledger;
use super::options::{RunOptions, Strategy};
use super::proposal_loop::Loop;
use crate::engine::evaluate::scripted::Scripted;
use crate::engine::evaluate::{Evaluator, Harness};
use crate::measure::objective::Floor;
use crate::record::{Ledger, ProposerChoice, RunProposer, Store};
use crate::task::{Resolved, resolve};
use proposers::ReplayProposer;
use sandbox::RelPath;
use std::path::Path;

fn options(budget: usize) -> RunOptions {
    RunOptions {
        proposer: ProposerChoice::Given(RunProposer::Replay("steps.jsonl".into())),
        budget,
        seed: Some(1),
        workload: None,
        progress: false,
        warm_start: false,
        agent: None,
        simulate: None,
        strategy: Strategy::Model,
        targets: None,
    }
}

/// A proposer that replays these `PAD_PERMILLE` values in order.
fn replaying(pads: &[i64]) -> ReplayProposer {
    let steps: String = pads
        .iter()
        .map(|p| format!("{{\"params\": {{\"PAD_PERMILLE\": {p}}}}}\n"))
        .collect();
    ReplayProposer::parse("steps.jsonl", &steps).unwrap()
}

/// The spin fixture resolved as a run would, with a real runs.db and git ledger in a temporary
/// folder, for a run of `budget` candidates replayed from a file.
struct Fixture {
    _dir: tempfile::TempDir,
    r: Resolved,
    store: Store,
    ledger: Ledger,
    chosen: RunProposer,
    opts: RunOptions,
}

impl Fixture {
    async fn new(budget: usize, floor: Option<Floor>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let spin = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/spin");
        let mut r = resolve(&spin, None).unwrap();
        if let Some(floor) = floor {
            r.task.judge.floor = floor;
        }
        let store = Store::open(&dir.path().join("runs.db")).await.unwrap();
        let ledger = Ledger::open_or_init(&dir.path().join("ledger")).unwrap();
        Fixture {
            _dir: dir,
            r,
            store,
            ledger,
            chosen: RunProposer::Replay("steps.jsonl".into()),
            opts: options(budget),
        }
    }

    /// The run's loop, its processes played by `processes`, and the run's id.
    async fn start(&self, processes: Scripted) -> (Loop<'_>, i64) {
        let (entry, commit) = sync_ledger(&self.store, &self.ledger, &self.r)
            .await
            .unwrap();
        let at = start_or_resume(&self.store, &self.r, &self.chosen, &self.opts)
            .await
            .unwrap();
        let cancel = sandbox::CancelFlag::default();
        let harness = Harness::with_processes(
            &self.r.task,
            &self.r.source,
            cancel.clone(),
            Box::new(processes),
        );
        let exec = Evaluator::local(harness);
        let lp = Loop::start(
            &self.store,
            &self.ledger,
            &self.r,
            exec,
            cancel,
            &at,
            entry,
            commit,
        )
        .await
        .unwrap();
        (lp, at.run_id)
    }

    /// Runs the loop over `PAD_PERMILLE` values proposed in this order: the run's id, and how
    /// the loop ended.
    async fn run(
        &self,
        processes: Scripted,
        pads: &[i64],
    ) -> (i64, anyhow::Result<Option<String>>) {
        let (mut lp, run_id) = self.start(processes).await;
        let mut proposer = replaying(pads);
        (
            run_id,
            lp.run(&self.opts, 0, &self.chosen, &mut proposer).await,
        )
    }

    /// Each recorded candidate's verdict and reason, in order.
    async fn verdicts(&self) -> Vec<(String, String)> {
        let (_, rows) = self
            .store
            .query_readonly("SELECT verdict, reason FROM candidate_results ORDER BY seq")
            .await
            .unwrap();
        rows.iter()
            .map(|r| (r[0].as_str().unwrap().into(), r[1].as_str().unwrap().into()))
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_loop_commits_what_the_judge_accepts_and_records_every_candidate() {
    let f = Fixture::new(4, None).await;
    f.store
        .upsert_context(&f.r.task.name, &f.r.context_id, "{}")
        .await
        .unwrap();
    // From 200 wasted steps per thousand: 100 is faster, 7 is no declared value, 200 is
    // slower than 100 now, and 0 is faster again.
    let (run_id, ended) = f.run(Scripted::new(3, 0.002), &[100, 7, 200, 0]).await;
    ended.unwrap();

    let run = f.store.run(run_id).await.unwrap().unwrap();
    let c = run.counts;
    assert_eq!(
        (c.total(), c.accepted, c.rejected, c.failed),
        (4, 2, 1, 1),
        "{c:?}"
    );
    // The branch's head is the last accepted tree, in the ledger and in runs.db alike.
    let best = f.store.incumbent(&f.r.branch).await.unwrap().unwrap();
    let head = f.ledger.branch_head(&f.r.branch).unwrap().unwrap();
    assert_eq!(best.commit_sha, head.to_string());
    let tree = f.ledger.read_tree(head).unwrap();
    let params =
        String::from_utf8_lossy(tree.get(&RelPath::new("params.h").unwrap()).unwrap()).into_owned();
    assert!(params.contains("PAD_PERMILLE 0"), "{params}");
}

/// Two families that trade cases: 100 (family A) is 10x the start on both; 0 (family B) is
/// 20% slower than A on c0 and 60% faster on c1, +13% over A in the objective, still 8x the
/// start on c0.
fn two_families(pad: f64) -> Vec<(&'static str, f64)> {
    match pad as i64 {
        100 => vec![("c0", 10.0), ("c1", 10.0)],
        0 => vec![("c0", 8.0), ("c1", 16.0)],
        _ => vec![("c0", 1.0), ("c1", 1.0)],
    }
}

/// Runs [100, 0] from the start with the given floor; each candidate's verdict and reason.
async fn family_run(floor: Floor) -> Vec<(String, String)> {
    let f = Fixture::new(2, Some(floor)).await;
    let processes = Scripted::with_landscape(5, 0.002, two_families);
    f.run(processes, &[100, 0]).await.1.unwrap();
    f.verdicts().await
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_start_as_floor_a_second_family_is_accepted_after_the_first() {
    let start = family_run(Floor::Start).await;
    assert_eq!(start[0].0, "accepted", "{start:?}");
    assert_eq!(start[1].0, "accepted", "{start:?}");
    // Against the moving incumbent, the first family accepted keeps the better one out.
    let incumbent = family_run(Floor::Incumbent).await;
    assert_eq!(incumbent[0].0, "accepted", "{incumbent:?}");
    assert_eq!(incumbent[1].0, "rejected", "{incumbent:?}");
    assert!(
        incumbent[1].1.contains("case c0 ends below the floor"),
        "{incumbent:?}"
    );
}

/// A candidate whose benches the sandbox cannot start is the machine's failure: the run stops,
/// resumable, and nothing is recorded against the candidate (a "failed" verdict would drop a
/// possibly good candidate for good). What came before it stays recorded and committed.
#[tokio::test(flavor = "multi_thread")]
async fn a_candidate_the_sandbox_could_not_run_stops_the_run_and_is_not_recorded() {
    let f = Fixture::new(3, None).await;
    let processes = Scripted::new(3, 0.002).sandbox_down_for(25.0);
    let err = f
        .run(processes, &[100, 25, 0])
        .await
        .1
        .expect_err("the run must stop");
    let fault = err
        .downcast_ref::<crate::engine::evaluate::HarnessFault>()
        .unwrap_or_else(|| panic!("{err:#}"));
    assert_eq!(fault.candidate, 2, "{err:#}");
    assert!(err.to_string().contains("not the candidate's"), "{err:#}");
    let verdicts: Vec<String> = f.verdicts().await.into_iter().map(|(v, _)| v).collect();
    assert_eq!(verdicts, ["accepted"]);
    assert!(f.store.incumbent(&f.r.branch).await.unwrap().is_some());
}

/// Replays its steps and keeps the pair spread each proposal was offered.
struct Watching {
    inner: ReplayProposer,
    seen: Vec<Option<f64>>,
}

#[async_trait::async_trait]
impl proposers::Proposer for Watching {
    fn name(&self) -> &str {
        "replay"
    }

    async fn next(
        &mut self,
        ctx: &proposers::ProposalContext,
    ) -> Result<Option<proposers::Proposal>, proposers::AgentError> {
        self.seen.push(ctx.pair_spread);
        self.inner.next(ctx).await
    }
}

/// The search's races read the noise of a pair's gain against the incumbent as the judge pools
/// it: unknown before anything is judged, then from the judged pairs (uniform noise of 5% either
/// way in each process: a pair's gain varies by 5% x sqrt(2/3), about 4.1%).
#[tokio::test(flavor = "multi_thread")]
async fn each_proposal_is_offered_the_judges_spread_of_a_pair() {
    let f = Fixture::new(3, None).await;
    let (mut lp, _) = f.start(Scripted::new(3, 0.05)).await;
    let mut watching = Watching {
        inner: replaying(&[100, 50, 25]),
        seen: Vec::new(),
    };
    lp.run(&f.opts, 0, &f.chosen, &mut watching).await.unwrap();
    assert_eq!(watching.seen.len(), 3, "{:?}", watching.seen);
    assert_eq!(watching.seen[0], None);
    let known: Vec<f64> = watching.seen.iter().flatten().copied().collect();
    assert!(!known.is_empty(), "{:?}", watching.seen);
    assert!(
        known.iter().all(|sd| (0.02..0.08).contains(sd)),
        "{:?}",
        watching.seen
    );
}
