//! Trust, round two: attacks that need root or reach past the candidate's own process: root
//! inside the sandbox, build outputs replaced after the build, the incumbent's workspace
//! sabotaged. None may be accepted.

use crate::common::replay::{expect, run_replay};
use crate::common::tools::{Tool, bwrap, missing};
use crate::common::{Env, edit, files_line};

/// The honest sum, 3x the work of a cheat that sums a third as far (wrong, but plausibly fast).
const HONEST: &str = "compute() {\n    s=0; i=1\n    while [ \"$i\" -le \"$1\" ]; do s=$((s + i)); i=$((i + 1)); done\n    echo \"$s\"\n}\n";
const FAST_AND_WRONG: &str = "compute() {\n    s=0; i=1\n    while [ \"$i\" -le $(($1 / 3)) ]; do s=$((s + i)); i=$((i + 1)); done\n    echo \"$s\"\n}\n";
/// Correct and about 3x faster: the first third by the loop, the rest in closed form.
const FAST_AND_RIGHT: &str = "compute() {\n    s=0; i=1; m=$(($1 / 3))\n    while [ \"$i\" -le \"$m\" ]; do s=$((s + i)); i=$((i + 1)); done\n    echo $((s + $1 * ($1 + 1) / 2 - m * (m + 1) / 2))\n}\n";
/// Correct with no loop at all: the fastest honest answer there is.
const CLOSED_FORM: &str = "compute() {\n    echo $(($1 * ($1 + 1) / 2))\n}\n";

fn impl_with(tail: &str) -> String {
    format!("{HONEST}{tail}")
}

#[test]
fn build_outputs_and_the_incumbent_are_frozen_after_the_build() {
    let env = Env::new();
    let task = env.task("frozen");
    // The three candidates run the start's own loop: only a gain no shell-loop noise on a busy
    // machine can fake should count (see process_level_attacks_are_stopped).
    edit(&task.join("task.toml"), "min_gain = 0.02", "min_gain = 0.5");
    let marker = format!("frozen-{}", std::process::id());
    let attacks = [
        // 1. During its first benchmark, replace the built ./check with one that always passes
        //    and the code with a fast, wrong one: later benchmarks time the wrong code and the
        //    re-test after timing would run the impostor.
        impl_with(&format!(
            "case $0 in *bench*)\n    printf '#!/bin/sh\\necho ok\\n' > check 2>/dev/null\n    printf '%s' '{FAST_AND_WRONG}' > impl.sh 2>/dev/null;;\nesac\n"
        )),
        // 2. During its benchmark, make the incumbent's workspace (found by the marker in its
        //    impl.sh) three times slower, so the candidate looks faster against it.
        impl_with(&format!(
            "# {marker}\ncase $0 in *bench*)\n    for d in /tmp/polymorph-*; do\n        [ \"$d\" = \"$PWD\" ] && continue\n        grep -q {marker} \"$d/impl.sh\" 2>/dev/null || continue\n        printf 'compute() {{ s=0; i=1; while [ \"$i\" -le $(($1 * 3)) ]; do i=$((i + 1)); done; echo $(($1 * ($1 + 1) / 2)); }}\\n' >> \"$d/impl.sh\" 2>/dev/null\n    done;;\nesac\n"
        )),
        // 3. An honest candidate with a comment: measured against an intact incumbent.
        impl_with(&format!("# {marker} again\n")),
    ];
    // The incumbent carries the marker too, so attack 2 can find its workspace.
    std::fs::write(task.join("impl.sh"), impl_with(&format!("# {marker}\n"))).unwrap();
    let lines: Vec<String> = attacks
        .iter()
        .enumerate()
        .map(|(i, a)| files_line("impl.sh", a, &format!("attack {}", i + 1)))
        .collect();
    let r = run_replay(&env, &task, &lines, &[]);
    for (i, (verdict, reason, _)) in r.iter().enumerate().take(2) {
        assert_ne!(verdict, "accepted", "attack {}: {reason}", i + 1);
    }
    if bwrap().is_some() {
        // The tree is read-only for tests and benchmarks and /tmp is private: the writes fail
        // and the candidates are measured as what they are.
        expect(&r, 0, "rejected", "");
        expect(&r, 1, "rejected", "");
    } else {
        missing(
            Tool::Bwrap,
            "bwrap not usable: the trust suite checks the snapshot guard alone",
        );
        expect(&r, 0, "failed", "the built tree changed after the build: ");
        expect(
            &r,
            1,
            "failed",
            "the built tree changed after the build: impl.sh was replaced",
        );
    }
    assert_eq!(
        r[2].0, "rejected",
        "the incumbent was rebuilt intact: {:?}",
        r[2]
    );
    assert_eq!(env.git(&["log", "--all", "--format=%s"]).lines().count(), 1);
}

/// As root, a candidate that could remount the root read-write, unmount the private /tmp,
/// make a new namespace or write a sysctl would use it to look three times faster.
#[test]
fn root_attacks_from_a_candidate_fail_and_it_is_not_accepted() {
    if bwrap().is_none() {
        // Without bwrap these commands would run on the host itself: never try them there.
        missing(
            Tool::Bwrap,
            "root attacks from a candidate: bwrap not usable here",
        );
        return;
    }
    let env = Env::new();
    let task = env.task("frozen");
    // Every candidate runs the start's own loop unless its attack works, and then it is 3x
    // faster: a gain threshold of 50% tells the two apart, where 2% let a lucky run of six
    // pairs on a busy 2-core CI machine accept one (CI of 762c6e5: +21.6% in 6 pairs).
    edit(&task.join("task.toml"), "min_gain = 0.02", "min_gain = 0.5");
    let outside = tempfile::tempdir_in("/var/tmp").unwrap();
    let attacks = [
        format!("mount -o remount,rw,bind / && touch {}/remount", outside.path().display()),
        format!("umount /tmp && touch {}/umount", env.path().display()),
        "unshare -m true".to_string(),
        "unshare -U true".to_string(),
        "v=$(cat /proc/sys/kernel/printk_ratelimit) && echo \"$v\" > /proc/sys/kernel/printk_ratelimit".to_string(),
    ];
    let lines: Vec<String> = attacks
        .iter()
        .enumerate()
        .map(|(i, attack)| {
            // The attack runs in every test and benchmark; when it works the code is fast.
            let code = format!(
                "if ( {attack} ) >/dev/null 2>&1; then\n{FAST_AND_RIGHT}else\n{HONEST}fi\n"
            );
            files_line("impl.sh", &code, &format!("root attack {}", i + 1))
        })
        .collect();
    let r = run_replay(&env, &task, &lines, &[]);
    for (i, (verdict, reason, _)) in r.iter().enumerate() {
        assert_ne!(verdict, "accepted", "root attack {}: {reason}", i + 1);
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    assert!(!env.path().join("umount").exists());
}

/// On a minimize task a subnormal time made the gain infinite and the judge asked for pairs
/// forever; now the sample is invalid and the candidate fails at once.
#[test]
fn a_subnormal_metric_fails_the_candidate_instead_of_stalling_the_judge() {
    let env = Env::new();
    let task = env.task("frozen");
    edit(&task.join("task.toml"), "maximize", "minimize");
    let lie = format!(
        "{HONEST}case $0 in *bench*) echo '{{\"metric\": \"ops\", \"value\": 5e-324}}'; exit 0;; esac\n"
    );
    let started = std::time::Instant::now();
    let r = run_replay(
        &env,
        &task,
        &[files_line("impl.sh", &lie, "a subnormal time")],
        &[],
    );
    expect(&r, 0, "failed", "subnormal");
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

/// A task whose bench measures the hardware's limit in the same process (here: 4x the rate of a
/// reference loop it runs itself, the fastest of five tries as a real peak measurement would
/// take): `check` shows each figure as a share of it, and a candidate measured above it (a closed
/// form, some 20x the loop) goes to a human, whatever the incumbent says. The margins are wide on
/// both sides because a busy 2-core machine makes a few-millisecond shell loop vary threefold.
#[test]
fn a_candidate_above_the_measured_speed_of_light_is_quarantined() {
    let env = Env::new();
    let task = env.task("frozen");
    edit(
        &task.join("task.toml"),
        "min_gain = 0.02",
        "min_gain = 0.02\nlimit = \"light\"",
    );
    edit(&task.join("bench.sh"), "n=3000", "n=20000");
    let bench = std::fs::read_to_string(task.join("bench.sh")).unwrap();
    let reference = r#"reference() {
    s=0; i=1
    while [ "$i" -le "$1" ]; do s=$((s + i)); i=$((i + 1)); done
}
best=0
for try in 1 2 3 4 5; do
    r0=$(date +%s%N)
    reference "$n"
    r1=$(date +%s%N)
    if [ "$best" -eq 0 ] || [ $((r1 - r0)) -lt "$best" ]; then best=$((r1 - r0)); fi
done
echo "{\"metric\": \"light\", \"value\": $((n * 4000000000 / (best + 1)))}"
"#;
    std::fs::write(task.join("bench.sh"), format!("{bench}{reference}")).unwrap();
    let check = env.json(&["check", task.to_str().unwrap()]);
    let share = check["trees"][0]["fraction_of_limit"]["default"]
        .as_f64()
        .unwrap();
    assert!(share > 0.05 && share < 1.0, "{check}");
    let r = run_replay(
        &env,
        &task,
        &[files_line("impl.sh", CLOSED_FORM, "no loop at all")],
        &[],
    );
    expect(&r, 0, "quarantined", "measured above the hardware's limit");
    // The run's summary gives each tree's share of the limit its final processes measured.
    let replay = env.write(
        "again.jsonl",
        &(files_line("impl.sh", CLOSED_FORM, "again") + "\n"),
    );
    let out = env
        .cmd()
        .args(["run", task.to_str().unwrap(), "--budget", "1"])
        .arg("--proposer")
        .arg(format!("replay:{}", replay.display()))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("% of the light "), "{text}");
}

/// A task that declares the machine's bound on its work (`[metric] bound`, here 3x what its
/// start measures, with a plausibility factor no gain reaches): `check` shows each figure as a
/// fraction of the bound, and a candidate measured past it (the closed form) goes to a human at
/// its first pair, though no plausibility rule would stop it.
#[test]
fn a_candidate_past_the_declared_bound_is_quarantined_under_any_plausibility_factor() {
    let env = Env::new();
    let task = env.task("frozen");
    let start = env.json(&["check", task.to_str().unwrap()]);
    let ops = start["trees"][0]["cases"]["default"].as_f64().unwrap();
    edit(
        &task.join("task.toml"),
        "min_gain = 0.02",
        &format!(
            "min_gain = 0.02\nplausible_factor = 1e9\nbound = {:.1}",
            3.0 * ops
        ),
    );
    let check = env.json(&["check", task.to_str().unwrap()]);
    let share = check["trees"][0]["fraction_of_bound"]["default"]
        .as_f64()
        .unwrap();
    assert!(share > 0.03 && share < 1.0, "{check}");
    let r = run_replay(
        &env,
        &task,
        &[files_line("impl.sh", CLOSED_FORM, "no loop at all")],
        &[],
    );
    expect(
        &r,
        0,
        "quarantined",
        "past the machine's bound: case default",
    );
}
