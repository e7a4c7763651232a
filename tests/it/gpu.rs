//! GPU tasks: refused up front, naming what is missing, where the machine has no NVIDIA GPU or
//! no nvcc; checked for real where it has both (the H200 the project borrows, see README).

use crate::common::Env;
use crate::common::tools::{Tool, missing};
use predicates::str::contains;

fn has_gpu_and_nvcc() -> bool {
    let path = std::env::var("PATH").unwrap_or_default();
    std::path::Path::new("/dev/nvidiactl").exists()
        && path
            .split(':')
            .any(|d| std::path::Path::new(d).join("nvcc").is_file())
}

/// `check` and `run` of the task `name` (copied into `env`), with a PATH of the system's
/// directories only, stop with exit 2 naming `lacking` among what the machine lacks.
pub fn refused_without(env: &Env, name: &str, lacking: &str) {
    let task = env.task(name);
    let t = task.to_str().unwrap();
    for args in [vec!["check", t], vec!["run", t, "--budget", "1"]] {
        env.cmd()
            .env("PATH", "/usr/bin:/bin")
            .args(&args)
            .assert()
            .code(2)
            .stderr(contains(format!(
                "task {name} needs what this machine lacks"
            )))
            .stderr(contains(lacking));
    }
}

#[test]
fn a_gpu_task_is_refused_up_front_where_the_machine_lacks_what_it_needs() {
    let env = Env::new();
    // An empty PATH for the check: no nvcc whatever the machine has.
    refused_without(&env, "add-rmsnorm-cuda", "nvcc (not on PATH)");
    let task = env.path().join("add-rmsnorm-cuda");
    let t = task.to_str().unwrap();
    if !std::path::Path::new("/dev/nvidiactl").exists() {
        env.cmd()
            .args(["check", t])
            .assert()
            .code(2)
            .stderr(contains("an NVIDIA GPU (no /dev/nvidiactl)"));
    }
    // Nothing ran: no ledger was written.
    assert!(!env.ledger().join("refs").exists());
}

#[test]
fn an_unknown_requirement_is_a_clear_error() {
    let env = Env::new();
    let task = env.task("spin");
    let toml = task.join("task.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, format!("requires = [\"tpu\"]\n{text}")).unwrap();
    env.cmd()
        .args(["context", task.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(contains(
            "requires: \"tpu\": expected one of nvidia-gpu, nvcc, vllm",
        ));
}

#[test]
fn the_cuda_task_builds_tests_and_benchmarks_on_a_gpu() {
    if !has_gpu_and_nvcc() {
        missing(
            Tool::Gpu,
            "the CUDA task on a GPU: needs an NVIDIA GPU and nvcc",
        );
        return;
    }
    let env = Env::new();
    let task = env.task("add-rmsnorm-cuda");
    let out = env.json(&["check", task.to_str().unwrap(), "--rounds", "2"]);
    assert_eq!(out["trees"].as_array().unwrap().len(), 2, "{out}");
    // Each figure also as a share of the copy bandwidth the bench measured.
    assert!(out["trees"][1]["limit"].as_f64().unwrap() > 0.0, "{out}");
    // Every bench process of a run records the SM clock and temperature it started at.
    let t = task.to_str().unwrap();
    env.json(&["run", t, "--budget", "1", "--seed", "2"]);
    let states = env.json(&["query", "SELECT state FROM sample_states"]);
    let states = states.as_array().unwrap();
    assert!(!states.is_empty());
    for row in states {
        assert!(row["state"].as_str().unwrap().contains("MHz"), "{row}");
    }
}

/// Where nvcc exists (CI installs it from PyPI; no GPU needed to compile), the CUDA task builds:
/// its starting kernel at two corners of its parameter space, and the hand-tuned baseline.
#[test]
fn the_cuda_task_compiles_with_nvcc() {
    let path = std::env::var("PATH").unwrap_or_default();
    if !path
        .split(':')
        .any(|d| std::path::Path::new(d).join("nvcc").is_file())
    {
        missing(
            Tool::Nvcc,
            "compiling the CUDA task: nvcc is not installed (./test.sh installs it from PyPI)",
        );
        return;
    }
    let env = Env::new();
    let task = env.task("add-rmsnorm-cuda");
    let make = |dir: &std::path::Path| {
        let out = std::process::Command::new("make")
            .args(["-s", "-B"])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(dir.join("check").is_file() && dir.join("bench").is_file());
        let interface = polymorph::task::Task::load(dir).unwrap().interface.unwrap();
        assert_eq!(interface.violation(dir), None);
    };
    for params in [
        "#define THREADS 128\n#define VEC 1\n#define WARP_PER_ROW 0\n#define CACHE_ROW 0\n",
        "#define THREADS 1024\n#define VEC 8\n#define WARP_PER_ROW 1\n#define CACHE_ROW 1\n",
    ] {
        std::fs::write(task.join("params.h"), params).unwrap();
        make(&task);
    }
    std::fs::copy(
        task.join("baselines/hand_tuned/kernel.cu"),
        task.join("kernel.cu"),
    )
    .unwrap();
    make(&task);
    // A kernel.cu that brings its own clock is refused by the interface.
    let mut cheat = std::fs::read_to_string(task.join("kernel.cu")).unwrap();
    cheat.push_str("\n#include <time.h>\nextern \"C\" int clock_gettime(clockid_t c, struct timespec *t) { (void)c; t->tv_sec = 0; t->tv_nsec = 0; return 0; }\n");
    std::fs::write(task.join("kernel.cu"), cheat).unwrap();
    let built = std::process::Command::new("make")
        .args(["-s", "-B", "kernel.o"])
        .current_dir(&task)
        .status()
        .unwrap();
    assert!(built.success());
    let interface = polymorph::task::Task::load(&task)
        .unwrap()
        .interface
        .unwrap();
    let why = interface.violation(&task).unwrap_or_default();
    assert!(why.contains("defines clock_gettime outside"), "{why}");
}

/// The decode landscape recorded on an H200 replays anywhere: a simulated run needs neither a GPU
/// nor nvcc (nothing is built), and the cache still matches the task's harness files.
#[test]
fn the_gpu_landscape_replays_on_a_machine_without_a_gpu() {
    let env = Env::new();
    let task = env.task("add-rmsnorm-cuda");
    let cache = crate::common::repo().join("benches/data/add-rmsnorm-cuda-decode-h200.json");
    let report = env.run(
        &task,
        &[
            "--simulate",
            cache.to_str().unwrap(),
            "--budget",
            "30",
            "--seed",
            "1",
        ],
    );
    assert_eq!(report["candidates"], 30, "{report}");
    assert!(report["simulation"].is_string(), "{report}");
    assert!(
        report["best_entry"].is_number(),
        "nothing accepted in {report}"
    );
}
