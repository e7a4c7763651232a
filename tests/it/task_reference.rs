//! A task's reference (`[commands] reference`): computed once per context on the task as given,
//! kept outside every tree, shown read-only to each test and bench; a later run in the same
//! context reuses it, one altered since is computed again, and a candidate cannot change what
//! the others are compared with.

use crate::common::replay::run_replay;
use crate::common::tools::{Tool, bwrap, missing};
use crate::common::{Env, edit, files_line};
use std::path::{Path, PathBuf};

/// The reference: what compute must print for 1..100, and the seed of the process that made it.
const REFERENCE_SH: &str = "i=1; while [ $i -le 100 ]; do echo \"$i $((i * (i + 1) / 2))\"; i=$((i + 1)); done > \"$POLYMORPH_REFERENCE/sums\"\necho \"$POLYMORPH_SEED\" > \"$POLYMORPH_REFERENCE/made-by\"\n";

/// The test compares compute's answers with the reference's.
const TEST_SH: &str = ". ./impl.sh\nfor n in 10 $((${POLYMORPH_SEED:-1} % 100 + 1)); do\n    want=$(awk -v n=\"$n\" '$1 == n {print $2}' \"$POLYMORPH_REFERENCE/sums\")\n    got=$(compute \"$n\")\n    if [ -z \"$want\" ] || [ \"$got\" != \"$want\" ]; then\n        echo \"FAIL: compute $n gave $got, the reference $want\"\n        exit 1\n    fi\ndone\necho ok\n";

/// The adversary task with a reference its test reads.
fn task(env: &Env) -> PathBuf {
    let task = env.task("adversary");
    edit(
        &task.join("task.toml"),
        "bench = \"sh bench.sh\"",
        "bench = \"sh bench.sh\"\nreference = \"sh reference.sh\"",
    );
    edit(&task.join("task.toml"), "timeout_s = 3", "timeout_s = 30");
    std::fs::write(task.join("reference.sh"), REFERENCE_SH).unwrap();
    std::fs::write(task.join("test.sh"), TEST_SH).unwrap();
    task
}

/// The one reference kept for the task, in the env's cache.
fn kept(cache: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(cache.join("references/adversary"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

fn made_by(cache: &Path) -> String {
    std::fs::read_to_string(kept(cache).join("made-by")).unwrap()
}

#[test]
fn a_reference_is_computed_once_per_context_and_out_of_a_candidates_reach() {
    let env = Env::new();
    let task = task(&env);
    let cache = env.path().join("cache");
    let cache_var = cache.to_str().unwrap();
    let honest = files_line(
        "impl.sh",
        "build() { :; }\ncompute() { echo $(( $1 * ($1 + 1) / 2 )); }\n",
        "closed form",
    );
    // Its build writes the reference where it can; its compute is wrong for 10 and right
    // elsewhere, which the reference as made would catch.
    let writer = files_line(
        "impl.sh",
        &format!(
            "build() {{ for f in \"$POLYMORPH_REFERENCE\"/* {}/references/adversary/*/sums; do chmod u+w \"$f\"; echo '10 7' > \"$f\"; done 2>/dev/null; :; }}\ncompute() {{ if [ \"$1\" = 10 ]; then echo 7; else echo $(( $1 * ($1 + 1) / 2 )); fi; }}\n",
            cache.display()
        ),
        "writes the reference",
    );
    let r = run_replay(&env, &task, &[honest], &[("POLYMORPH_CACHE", cache_var)]);
    assert_ne!(r[0].0, "failed", "{r:?}");
    let first = made_by(&cache);
    let sums = std::fs::read_to_string(kept(&cache).join("sums")).unwrap();
    assert!(sums.contains("\n10 55\n"), "{sums}");

    // The same context: the reference kept is used, not made again.
    let r = run_replay(&env, &task, &[writer], &[("POLYMORPH_CACHE", cache_var)]);
    assert_eq!(made_by(&cache), first);
    let (verdict, reason, _) = &r[0];
    assert_eq!(verdict, "failed", "{r:?}");
    if bwrap().is_some() {
        // Its build could not write the reference: the test read it whole and caught compute.
        assert!(
            reason.contains("compute 10 gave 7, the reference 55"),
            "{reason}"
        );
        assert_eq!(
            std::fs::read_to_string(kept(&cache).join("sums")).unwrap(),
            sums
        );
    } else {
        missing(
            Tool::Bwrap,
            "a command without bwrap can write the reference: the digest catches it",
        );
        assert!(
            reason.contains("was altered since it was computed"),
            "{reason}"
        );
    }

    // Altered outside a run (or by a command without bwrap): the next run makes it again.
    let file = kept(&cache).join("sums");
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(&file, "10 7\n").unwrap();
    let other = files_line(
        "impl.sh",
        "build() { :; }\ncompute() { echo $(( ($1 + 1) * $1 / 2 )); }\n",
        "closed form, the other way round",
    );
    let r = run_replay(&env, &task, &[other], &[("POLYMORPH_CACHE", cache_var)]);
    assert_ne!(r[0].0, "failed", "{r:?}");
    assert_ne!(made_by(&cache), first);
    assert_eq!(
        std::fs::read_to_string(kept(&cache).join("sums")).unwrap(),
        sums
    );
}

#[test]
fn a_reference_that_fails_stops_the_run_before_any_candidate_saying_why() {
    let env = Env::new();
    let task = task(&env);
    std::fs::write(
        task.join("reference.sh"),
        "echo 'no weights here' >&2; exit 3\n",
    )
    .unwrap();
    let line = files_line("impl.sh", "build() { :; }\ncompute() { echo 0; }\n", "any");
    let replay = env.write("one.jsonl", &(line + "\n"));
    let out = env
        .cmd()
        .env("POLYMORPH_CACHE", env.path().join("cache"))
        .args(["run", task.to_str().unwrap(), "--budget", "1"])
        .arg("--proposer")
        .arg(format!("replay:{}", replay.display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("its reference command failed") && err.contains("no weights here"),
        "{err}"
    );
    assert!(
        !env.path()
            .join("cache/references/adversary")
            .read_dir()
            .unwrap()
            .any(|e| e.unwrap().path().is_dir())
    );
}

#[test]
fn a_reference_reads_a_workload_given_on_the_command_line_where_the_others_do() {
    let env = Env::new();
    let task = task(&env);
    let cache = env.path().join("cache");
    let copy = "cp \"$POLYMORPH_WORKLOAD\" \"$POLYMORPH_REFERENCE/workload\"\n";
    std::fs::write(task.join("reference.sh"), format!("{REFERENCE_SH}{copy}")).unwrap();
    let workload = env.write("mine.json", "{\"n\": 7}\n");
    let line = files_line(
        "impl.sh",
        "build() { :; }\ncompute() { echo $(( $1 * ($1 + 1) / 2 )); }\n",
        "closed form",
    );
    let replay = env.write("one.jsonl", &(line + "\n"));
    let out = env
        .cmd()
        .env("POLYMORPH_CACHE", &cache)
        .args(["run", task.to_str().unwrap(), "--budget", "1", "--workload"])
        .arg(&workload)
        .arg("--proposer")
        .arg(format!("replay:{}", replay.display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        std::fs::read_to_string(kept(&cache).join("workload")).unwrap(),
        "{\"n\": 7}\n"
    );
}
