//! A knob a candidate adds (`#define NAME VALUE // values: ...` in the parameter file): checked
//! when it is proposed, named in the ledger entry of the candidate that added it, and explored
//! by the search from that incumbent on, its declaration kept in every assignment rendered.

use crate::common::Env;
use serde_json::json;

/// Replays the two candidates `steps` on `task`, checks one of them was accepted, and returns
/// both evaluations (verdict, stage, reason) in order.
fn replay_two_one_accepted(
    env: &Env,
    task: &std::path::Path,
    steps: &[String],
) -> serde_json::Value {
    let replay = env.write("steps.jsonl", &(steps.join("\n") + "\n"));
    let replay = format!("replay:{}", replay.display());
    let report = env.run(task, &["--proposer", &replay, "--budget", "2"]);
    assert_eq!(report["accepted"], 1, "{report}");
    env.json(&[
        "query",
        "SELECT e.verdict, e.stage, e.reason FROM candidates c JOIN evaluations e ON e.candidate_id = c.id ORDER BY c.id",
    ])
}

#[test]
fn a_knob_a_candidate_adds_is_recorded_and_explored_by_the_search() {
    let env = Env::new();
    let task = env.task("spin");
    let kernel = std::fs::read_to_string(task.join("kernel.c")).unwrap();
    let with_knob = kernel.replace(
        "n / 1000 * PAD_PERMILLE;",
        "n / 1000 * PAD_PERMILLE / PAD_DIV;",
    );
    assert_ne!(kernel, with_knob);
    let files = |params: &str, note: &str| {
        json!({ "files": { "params.h": params, "kernel.c": with_knob }, "note": note }).to_string()
    };
    let steps = [
        files(
            "#define PAD_PERMILLE 200\n#define PAD_DIV 3 // values: 1, 2, 4, 8\n",
            "a knob whose value it does not declare",
        ),
        files(
            "#define PAD_PERMILLE 200\n#define PAD_DIV 8 // values: 1, 2, 4, 8\n",
            "the padding divided by a new knob",
        ),
    ];
    let rows = replay_two_one_accepted(&env, &task, &steps);
    assert_eq!(rows[0]["verdict"], "failed", "{rows}");
    let why = rows[0]["reason"].as_str().unwrap();
    assert!(
        why.contains("PAD_DIV") && why.contains("not among"),
        "{why}"
    );
    let log = env.git(&["log", "--all", "--format=%B"]);
    assert!(log.contains("knobs added: PAD_DIV (1, 2, 4, 8)"), "{log}");

    let search = "--proposer search --strategy random --budget 3 --seed 1";
    let args: Vec<&str> = search.split(' ').collect();
    let report = env.run(&task, &args);
    assert_eq!(report["candidates"], 3, "{report}");
    let searched = env.json(&[
        "query",
        "SELECT c.payload, c.diff, e.verdict FROM candidates c JOIN evaluations e ON e.candidate_id = c.id WHERE c.kind = 'params'",
    ]);
    let searched = searched.as_array().unwrap();
    assert_eq!(searched.len(), 3, "{searched:?}");
    let mut moved = 0;
    for row in searched {
        let payload: serde_json::Value =
            serde_json::from_str(row["payload"].as_str().unwrap()).unwrap();
        let div = &payload["params"]["PAD_DIV"];
        assert!(div.is_i64(), "{payload}");
        moved += usize::from(*div != 8);
        assert_ne!(row["verdict"], "failed", "{row}");
        let diff = row["diff"].as_str().unwrap_or_default();
        let written: Vec<&str> = diff
            .lines()
            .filter(|l| l.starts_with("+#define PAD_DIV"))
            .collect();
        assert_eq!(written.len(), usize::from(*div != 8), "{diff}");
        for line in written {
            assert!(
                line.ends_with(&format!("PAD_DIV {div} // values: 1, 2, 4, 8")),
                "the declaration is kept: {line}"
            );
        }
    }
    assert!(moved > 0, "the search tried other values of the new knob");
}

#[test]
fn a_malformed_knob_in_the_task_s_own_parameter_file_is_refused_at_load() {
    let env = Env::new();
    let task = env.task("spin");
    std::fs::write(
        task.join("params.h"),
        "#define PAD_PERMILLE 200\n#define PAD_DIV 4 // values: 4\n",
    )
    .unwrap();
    env.cmd()
        .args(["context", task.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "params.h: knob PAD_DIV: declare 2 to 16 values, not 1",
        ));
}

#[test]
fn a_faster_candidate_with_a_broken_branch_its_own_values_skip_is_not_accepted() {
    let env = Env::new();
    let task = env.task("spin");
    let kernel = std::fs::read_to_string(task.join("kernel.c")).unwrap();
    let branch = |other: &str| {
        kernel.replace(
            "    return x;\n}",
            &format!("#if MODE == 0\n    return x;\n#else\n    return {other};\n#endif\n}}"),
        )
    };
    let step = |other: &str, note: &str| {
        let params = "#define PAD_PERMILLE 0\n#define MODE 0 // values: 0, 1\n";
        json!({ "files": { "params.h": params, "kernel.c": branch(other) }, "note": note })
            .to_string()
    };
    // Both are far faster with the padding gone; the first breaks the branch MODE = 1 compiles.
    let steps = [
        step("x + 1", "no padding, and a wrong MODE 1"),
        step("x", "no padding"),
    ];
    let rows = replay_two_one_accepted(&env, &task, &steps);
    assert_eq!(rows[0]["verdict"], "failed", "{rows}");
    assert_eq!(rows[0]["stage"], "retest", "{rows}");
    let why = rows[0]["reason"].as_str().unwrap();
    assert!(
        why.starts_with("with MODE = 1 (an #if in kernel.c names it"),
        "{why}"
    );
    assert_eq!(rows[1]["verdict"], "accepted", "{rows}");
}
