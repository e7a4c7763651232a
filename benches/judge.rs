//! The judge on real benchmark processes, as a run judges them: the spread pooled over the
//! candidates judged against the incumbent (so the early look is there once it is known), and
//! every acceptance confirmed in a fresh series, the incumbent and the candidate built again
//! under another code layout.
//! - Null candidates (NULLS, default 200) on matmul-c that move its code but not its work: a
//!   static function no one calls, of a different size each time (16 bytes to 4 KiB), placed
//!   before the kernel, against a tuned incumbent. Accepting one is a false acceptance.
//! - Planted gains of 2%, 5% and 20% on the spin fixture (its wasted work cut), TRIALS each
//!   (default 40): the share accepted is the power at that gain.
//!
//! Prints, per group, the verdicts, the share accepted after the first series and after both
//! with its 95% interval (Wilson's), and the bench processes a verdict took.
//!
//! cargo bench --bench judge [-- NULLS [TRIALS]]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use polymorph::engine::{Built, Harness};
use polymorph::measure::{Judge, Spread, Verdict};
use polymorph::task::Task;
use proposers::{Proposal, ProposedChange};
use sandbox::{FileTree, Isolation, RelPath, Runner};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Default)]
struct Tally {
    verdicts: BTreeMap<&'static str, usize>,
    first_accepted: usize,
    accepted: usize,
    judged: usize,
    processes: Vec<usize>,
}

/// Wilson's 95% score interval of `k` successes in `n`.
fn wilson(k: usize, n: usize) -> (f64, f64) {
    let (k, n, z) = (k as f64, n.max(1) as f64, 1.959_964);
    let p = k / n;
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

impl Tally {
    fn report(&self, what: &str) {
        let mut processes = self.processes.clone();
        processes.sort();
        let n = processes.len().max(1);
        let (low, high) = wilson(self.accepted, self.judged);
        println!(
            "{what}: {:?}; accepted after the first series {} of {}, after both {} ({:.1}% [{:.1}, {:.1}]); bench processes a verdict: median {}, mean {:.1}, max {}",
            self.verdicts,
            self.first_accepted,
            self.judged,
            self.accepted,
            100.0 * self.accepted as f64 / self.judged.max(1) as f64,
            100.0 * low,
            100.0 * high,
            processes.get(n / 2).copied().unwrap_or(0),
            processes.iter().sum::<usize>() as f64 / n as f64,
            processes.last().copied().unwrap_or(0),
        );
    }
}

fn with_file(tree: &FileTree, path: &str, text: &str) -> FileTree {
    let mut t = tree.clone();
    t.insert(RelPath::new(path).unwrap(), text.as_bytes().to_vec());
    t
}

fn proposal(path: &str, text: String, file: &str, line: usize) -> Proposal {
    Proposal {
        change: ProposedChange::Files(BTreeMap::from([(path.to_string(), text)])),
        note: None,
        origin: proposers::Origin::Replay {
            file: file.into(),
            line,
        },
        usage: None,
        screen_only: false,
    }
}

/// Judges each candidate against `incumbent_tree` as a run would, confirming every acceptance.
fn judge_all(task: &Task, incumbent_tree: FileTree, candidates: &[Proposal]) -> Tally {
    let runner = Runner::new(Isolation::detect(
        &std::env::var("PATH").unwrap_or_default(),
    ));
    let source = task.source_tree().unwrap();
    let cancel = Arc::new(AtomicBool::new(false));
    // The bench's tasks have no reference, so no context id is looked up.
    let mut h = Harness::new(task, &source, &runner, cancel, None, "").unwrap();
    let incumbent: Built = h
        .prepare(incumbent_tree)
        .unwrap_or_else(|f| panic!("{}", f.reason));
    let mut spread = Spread::default();
    let mut tally = Tally::default();
    for (i, c) in candidates.iter().enumerate() {
        let judge = Judge {
            metric: &task.metric,
            settings: &task.judge,
            reference: None,
            spread: spread.sd(),
            floor: &Default::default(),
        };
        let ev = h.evaluate(c, &incumbent, &judge);
        assert_ne!(ev.verdict, Verdict::Failed, "{}", ev.reason);
        spread.add(&task.metric.weights, &ev.pairs);
        let mut pairs = ev.pairs.len();
        let mut verdict = ev.verdict;
        let mut reason = ev.reason.clone();
        if ev.verdict == Verdict::Accepted {
            tally.first_accepted += 1;
            let again = h.confirm_tree(ev.tree.clone().unwrap(), &incumbent.tree, &judge);
            assert_ne!(again.verdict, Verdict::Failed, "{}", again.reason);
            spread.add(&task.metric.weights, &again.pairs);
            pairs += again.pairs.len();
            verdict = again.verdict;
            reason = format!("{reason}; confirmation: {}", again.reason);
        }
        eprintln!("  {:>3}: {} {reason}", i + 1, verdict.as_str());
        *tally.verdicts.entry(verdict.as_str()).or_default() += 1;
        tally.accepted += usize::from(verdict == Verdict::Accepted);
        tally.judged += 1;
        tally.processes.push(2 * pairs);
    }
    tally
}

fn main() {
    let numbers: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let nulls = numbers.first().copied().unwrap_or(200);
    let trials = numbers.get(1).copied().unwrap_or(40);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let started = std::time::Instant::now();

    // Nulls on matmul-c, against the i-k-j kernel with 4 rows at a time.
    let task = Task::load(&root.join("tasks/matmul-c")).unwrap();
    let source = task.source_tree().unwrap();
    let tuned = with_file(
        &source,
        "params.h",
        "#define LOOP_ORDER 1\n#define ROWS 4\n#define BLOCK_K 0\n#define BLOCK_N 0\n",
    );
    let kernel = String::from_utf8(
        source
            .get(&RelPath::new("kernel.c").unwrap())
            .unwrap()
            .to_vec(),
    )
    .unwrap();
    let moved: Vec<Proposal> = (0..nulls)
        .map(|i| {
            // Sizes 16, 32, ... 4096 bytes, then again with one more byte, so each is new.
            let bytes = 16 * (1 + i % 256) + i / 256;
            let pad = format!(
                "__attribute__((used)) static void layout_pad(void) {{ __asm__ volatile(\".skip {bytes}, 0x90\"); }}\n"
            );
            proposal("kernel.c", format!("{pad}{kernel}"), "null", i + 1)
        })
        .collect();
    eprintln!("matmul-c: {nulls} candidates that move the kernel's code");
    let null_tally = judge_all(&task, tuned, &moved);

    // Planted gains on spin: the incumbent wastes PAD extra steps a thousand, the candidate none.
    let spin = Task::load(&root.join("tests/fixtures/spin")).unwrap();
    let spin_source = spin.source_tree().unwrap();
    let mut planted = Vec::new();
    for (gain, pad) in [("+2%", 20), ("+5%", 50), ("+20%", 200)] {
        let incumbent = with_file(
            &spin_source,
            "params.h",
            &format!("#define PAD_PERMILLE {pad}\n"),
        );
        let candidates: Vec<Proposal> = (0..trials)
            .map(|i| {
                let text = format!("#define PAD_PERMILLE 0\n/* trial {i} */\n");
                proposal("params.h", text, "planted", i + 1)
            })
            .collect();
        eprintln!("spin: {trials} trials of a planted {gain} gain");
        planted.push((gain, judge_all(&spin, incumbent, &candidates)));
    }

    println!(
        "judge benchmark ({}; {:.0} s)",
        Isolation::detect(&std::env::var("PATH").unwrap_or_default()).describe(),
        started.elapsed().as_secs_f64()
    );
    null_tally.report(&format!(
        "{nulls} null candidates (matmul-c, code moved, work unchanged)"
    ));
    for (gain, tally) in &planted {
        tally.report(&format!("planted {gain} (spin)"));
    }
}
