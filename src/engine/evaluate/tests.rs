//! The evaluator against the `Processes` seam (`Scripted`: the spin fixture's processes, played
//! without a process), so verdicts, stages and the harness checks are tested in milliseconds.

use super::scripted::Scripted;
use super::{Evaluator, Harness};
use crate::measure::{Judge, Verdict};
use crate::record::Stage;
use crate::task::Task;
use proposers::{Origin, Proposal, ProposedChange};
use std::collections::BTreeMap;
use std::path::Path;

fn spin() -> Task {
    Task::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/spin")).unwrap()
}

fn params(pad: i64) -> Proposal {
    Proposal {
        change: ProposedChange::Params(BTreeMap::from([(
            "PAD_PERMILLE".to_string(),
            serde_json::json!(pad),
        )])),
        note: None,
        origin: Origin::Replay {
            file: "test".into(),
            line: 1,
        },
        usage: None,
        screen_only: false,
    }
}

fn files(name: &str, text: &str) -> Proposal {
    Proposal {
        change: ProposedChange::Files(BTreeMap::from([(name.to_string(), text.to_string())])),
        ..params(0)
    }
}

/// One evaluation of each proposal against the task as given (PAD_PERMILLE 200).
fn evaluate(task: &Task, proposals: &[Proposal]) -> Vec<(Verdict, Stage, String)> {
    let source = task.source_tree().unwrap();
    let cancel = sandbox::CancelFlag::default();
    let harness = Harness::with_processes(task, &source, cancel, Box::new(Scripted::new(1, 0.002)));
    let mut ev = Evaluator::local(harness);
    ev.set_incumbent(source).unwrap();
    let judge = Judge {
        metric: &task.metric,
        settings: &task.judge,
        reference: None,
        spread: None,
        floor: &Default::default(),
    };
    ev.evaluate(proposals, &judge)
        .unwrap()
        .into_iter()
        .map(|e| (e.verdict, e.stage, e.reason))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn verdicts_and_stages_come_from_what_the_processes_did() {
    let task = spin();
    let got = evaluate(
        &task,
        &[
            params(0),
            files(
                "params.h",
                "/* the same speed */\n#define PAD_PERMILLE 200\n",
            ),
            files("params.h", "#define PAD_PERMILLE 1\n"),
            files("kernel.c", "#error no\n"),
            files("check.c", "int main(void) { return 0; }\n"),
            files("kernel.c", "/* TAMPER */\n"),
        ],
    );
    let verdicts: Vec<(Verdict, Stage)> = got.iter().map(|(v, s, _)| (*v, *s)).collect();
    assert_eq!(
        verdicts,
        [
            (Verdict::Accepted, Stage::Judge),
            (Verdict::Rejected, Stage::Judge),
            (Verdict::Failed, Stage::Retest),
            (Verdict::Failed, Stage::Build),
            (Verdict::Failed, Stage::Verify),
            (Verdict::Failed, Stage::Test),
        ],
        "{got:?}"
    );
    assert!(got[5].2.contains("bench.c"), "{got:?}");
    assert!(got[3].2.contains("#error"), "{got:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_screen_only_contender_is_held_and_never_accepted() {
    let task = spin();
    let mut p = params(0);
    p.screen_only = true;
    let got = evaluate(&task, &[p]);
    assert_eq!(
        (got[0].0, got[0].1),
        (Verdict::Held, Stage::Judge),
        "{got:?}"
    );
}

#[test]
fn a_deleted_file_and_an_emptied_one_have_different_diffs_that_apply_back() {
    use sandbox::{Change, FileTree, Limits, RelPath, verify_change};
    let path = RelPath::new("kernel.c").unwrap();
    let mut kept = FileTree::default();
    kept.insert(path.clone(), b"int x;\n".to_vec());
    let mut emptied = kept.clone();
    emptied.insert(path, Vec::new());
    let deleted = FileTree::default();
    let to_empty = super::tree_diff(&kept, &emptied);
    let to_none = super::tree_diff(&kept, &deleted);
    assert_ne!(to_empty, to_none);
    assert!(to_none.contains("+++ /dev/null"), "{to_none}");
    let created = super::tree_diff(&deleted, &kept);
    assert!(created.starts_with("--- /dev/null\n"), "{created}");
    let editable = globset::GlobSetBuilder::new()
        .add(globset::Glob::new("kernel.c").unwrap())
        .build()
        .unwrap();
    for (base, diff, want) in [
        (&kept, to_empty, &emptied),
        (&kept, to_none, &deleted),
        (&deleted, created, &kept),
    ] {
        let v = verify_change(&Change::Diff(diff), base, &editable, &Limits::default()).unwrap();
        assert_eq!(&base.apply(&v), want);
    }
}
