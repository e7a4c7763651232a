//! Measures the judge on real benchmark processes (not a timed test):
//! - null candidates: 20 changes to matmul-c's kernel.c that touch only comments or whitespace,
//!   judged against a tuned incumbent: none may be accepted;
//! - a planted 5% gain: the spin fixture with 5% less wasted work, judged against its incumbent,
//!   over repeated trials: it must be found in at least 95% of them.
//!
//! Prints the verdict counts, the pairs and the benchmark time each verdict cost.
//!
//! cargo bench --bench judge [-- TRIALS]   (default 40 planted trials)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent::{Proposal, ProposedChange};
use polymorph::engine::{Built, Harness};
use polymorph::measure::{Judge, Verdict};
use polymorph::task::Task;
use sandbox::{FileTree, Isolation, RelPath, Runner};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

struct Tally {
    verdicts: BTreeMap<&'static str, usize>,
    pairs: Vec<usize>,
    bench_seconds: Vec<f64>,
}

impl Tally {
    fn new() -> Self {
        Tally {
            verdicts: BTreeMap::new(),
            pairs: Vec::new(),
            bench_seconds: Vec::new(),
        }
    }

    fn report(&self, what: &str) {
        let mut secs = self.bench_seconds.clone();
        secs.sort_by(f64::total_cmp);
        let mut pairs = self.pairs.clone();
        pairs.sort();
        let n = secs.len().max(1);
        println!(
            "{what}: {:?}; pairs median {} (max {}); bench seconds per verdict median {:.2} (mean {:.2}, max {:.2})",
            self.verdicts,
            pairs.get(n / 2).copied().unwrap_or(0),
            pairs.last().copied().unwrap_or(0),
            secs.get(n / 2).copied().unwrap_or(0.0),
            secs.iter().sum::<f64>() / n as f64,
            secs.last().copied().unwrap_or(0.0),
        );
    }
}

fn with_file(tree: &FileTree, path: &str, text: &str) -> FileTree {
    let mut t = tree.clone();
    t.insert(RelPath::new(path).unwrap(), text.as_bytes().to_vec());
    t
}

fn judge_all(task: &Task, incumbent_tree: FileTree, candidates: Vec<Proposal>, tally: &mut Tally) {
    let runner = Runner::new(Isolation::detect(
        &std::env::var("PATH").unwrap_or_default(),
    ));
    let source = task.source_tree().unwrap();
    let mut h = Harness::new(
        task,
        &source,
        &runner,
        Arc::new(AtomicBool::new(false)),
        None,
    )
    .unwrap();
    let incumbent: Built = h
        .prepare(incumbent_tree)
        .unwrap_or_else(|f| panic!("{}", f.reason));
    let judge = Judge {
        metric: &task.metric,
        settings: &task.judge,
        reference: None,
        spread: None,
        floor: &Default::default(),
    };
    for (i, c) in candidates.iter().enumerate() {
        let ev = h.evaluate(c, &incumbent, &judge);
        eprintln!("  {:>3}: {} {}", i + 1, ev.verdict.as_str(), ev.reason);
        *tally.verdicts.entry(ev.verdict.as_str()).or_default() += 1;
        tally.pairs.push(ev.pairs.len());
        tally.bench_seconds.push(ev.bench_seconds);
        assert_ne!(ev.verdict, Verdict::Failed, "{}", ev.reason);
    }
}

fn main() {
    let trials: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(40);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));

    // Null candidates on matmul-c, against the i-k-j kernel with 4 rows at a time.
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
    let nulls: Vec<Proposal> = (0..20)
        .map(|i| {
            let text = match i % 4 {
                0 => format!("/* variant {i}: a comment only */\n{kernel}"),
                1 => kernel.replace("    ", &" ".repeat(5 + i % 3)),
                2 => format!("{kernel}\n\n// trailing comment {i}\n"),
                _ => kernel.replace("{\n", &format!("{{ /* {i} */\n")),
            };
            Proposal {
                change: ProposedChange::Files(BTreeMap::from([("kernel.c".to_string(), text)])),
                note: None,
                origin: agent::Origin::Replay {
                    file: "null".into(),
                    line: i + 1,
                },
                usage: None,
                screen_only: false,
            }
        })
        .collect();
    let mut null_tally = Tally::new();
    eprintln!("matmul-c: 20 comment/whitespace-only candidates");
    judge_all(&task, tuned, nulls, &mut null_tally);

    // Planted gain on spin: the incumbent wastes 5% extra steps, the candidate none.
    let spin = Task::load(&root.join("tests/fixtures/spin")).unwrap();
    let spin_source = spin.source_tree().unwrap();
    let incumbent = with_file(&spin_source, "params.h", "#define PAD_PERMILLE 50\n");
    let planted: Vec<Proposal> = (0..trials)
        .map(|i| Proposal {
            change: ProposedChange::Files(BTreeMap::from([(
                "params.h".to_string(),
                format!("#define PAD_PERMILLE 0\n/* trial {i} */\n"),
            )])),
            note: None,
            origin: agent::Origin::Replay {
                file: "planted".into(),
                line: i + 1,
            },
            usage: None,
            screen_only: false,
        })
        .collect();
    let mut planted_tally = Tally::new();
    eprintln!("spin: {trials} trials of a planted 5% gain");
    judge_all(&spin, incumbent, planted, &mut planted_tally);

    println!(
        "judge benchmark ({})",
        Isolation::detect(&std::env::var("PATH").unwrap_or_default()).describe()
    );
    null_tally.report("null candidates (matmul-c, comments/whitespace only)");
    planted_tally.report("planted +5% (spin)");
    let found = planted_tally.verdicts.get("accepted").copied().unwrap_or(0);
    println!(
        "false accepts: {} of 20; planted gain found: {found} of {trials} ({:.0}%)",
        null_tally.verdicts.get("accepted").copied().unwrap_or(0),
        100.0 * found as f64 / trials as f64
    );
}
