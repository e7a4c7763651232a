//! The CPU tasks recorded for the search benchmark (softmax-c, transpose-c, conv1d-c,
//! sort-c): each one's check catches a kernel that is fast because it is wrong, and each
//! recorded cache in benches/data still matches its task (a run replays it, and a task changed
//! since its recording refuses the cache).

use crate::common::{Env, edit, repo};
use std::path::Path;
use std::process::Command;

/// A wrong kernel per task, as a change to its kernel.c: (task, text, replacement, what the
/// check must say).
const WRONG: [(&str, &str, &str, &str); 4] = [
    // Skipping the maximum overflows on large inputs.
    (
        "softmax-c",
        "float max = row_max(cols, xr);",
        "float max = 0.0f;",
        "large values",
    ),
    // Copying instead of transposing.
    (
        "transpose-c",
        "out[(long)j * rows + i + u] = in[(long)(i + u) * cols + j];",
        "out[(long)(i + u) * cols + j] = in[(long)(i + u) * cols + j];",
        "FAIL",
    ),
    // One tap short.
    (
        "conv1d-c",
        "span(0, length, taps, x, w, y);",
        "span(0, length, taps - 1, x, w, y);",
        "FAIL",
    ),
    // The last pass left out.
    (
        "sort-c",
        "for (int p = 0; p < PASSES; p++) {\n#if !FUSED",
        "for (int p = 0; p + 1 < PASSES; p++) {\n#if !FUSED",
        "FAIL",
    ),
];

fn make_and_check(dir: &Path) -> std::process::Output {
    let built = Command::new("make")
        .arg("-s")
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(built.success(), "make failed in {}", dir.display());
    Command::new("./check").current_dir(dir).output().unwrap()
}

#[test]
fn each_task_s_check_passes_its_start_and_fails_a_wrong_kernel() {
    let env = Env::new();
    for (name, from, to, says) in WRONG {
        let task = env.task(name);
        let ok = make_and_check(&task);
        assert!(
            ok.status.success(),
            "{name}: the start fails its check: {ok:?}"
        );
        edit(&task.join("kernel.c"), from, to);
        let bad = make_and_check(&task);
        let out = String::from_utf8_lossy(&bad.stdout);
        assert!(
            !bad.status.success(),
            "{name}: a wrong kernel passed: {out}"
        );
        assert!(out.contains(says), "{name}: {out}");
    }
}

#[test]
fn each_recorded_cache_replays_and_a_changed_harness_refuses_it() {
    let env = Env::new();
    for name in ["softmax-c", "transpose-c", "conv1d-c", "sort-c"] {
        let task = env.task_as_recorded(name);
        let cache = repo().join("benches/data").join(format!("{name}.json"));
        let report = env.run(
            &task,
            &[
                "--simulate",
                cache.to_str().unwrap(),
                "--budget",
                "6",
                "--seed",
                "2",
            ],
        );
        assert_eq!(report["candidates"], 6, "{name}: {report}");
        assert!(
            report["best_entry"].is_number(),
            "{name}: nothing accepted in {report}"
        );
    }
    let task = env.task_as_recorded("sort-c");
    edit(&task.join("check.c"), "{1000, 32}", "{1001, 32}");
    let cache = repo().join("benches/data/sort-c.json");
    env.cmd()
        .args([
            "run",
            task.to_str().unwrap(),
            "--simulate",
            cache.to_str().unwrap(),
            "--budget",
            "1",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("harness"));
}
