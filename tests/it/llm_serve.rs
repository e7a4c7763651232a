//! The LLM serving task (tasks/llm-serve): llama.cpp with SmolLM2-135M's real weights serves a
//! short ramp of load under each configuration, through the sandbox, and the machine's bound on
//! it is stated; a scheduler that changes what the model is asked, or a configuration llama.cpp cannot
//! run, fails with the reason; a valid configuration is measured and judged; a model without a
//! measured tolerance is refused; a request that arrives while two long answers decode on used
//! sequences starts at once; and without its packages a run says what to install.

use crate::common::replay::run_replay;
use crate::common::tools::{Tool, missing};
use crate::common::{Env, edit, files_line};
use predicates::str::contains;

const TASK: &str = "llm-serve";

/// Whether the task's packages and weights are installed; where not, the missing tool is named
/// (a failure where it is expected).
fn installed(env: &Env, task: &str) -> bool {
    let ready = env.cmd().args(["setup", "--check", task]).output().unwrap();
    if !ready.status.success() {
        missing(
            Tool::LlmServe,
            "the LLM serving task: its packages and weights are not installed (polymorph setup tasks/llm-serve)",
        );
    }
    ready.status.success()
}

#[test]
fn without_its_packages_the_llm_task_says_what_to_install() {
    let env = Env::new();
    let task = env.task(TASK);
    let cache = env.path().join("empty-cache");
    env.cmd()
        .env("POLYMORPH_CACHE", &cache)
        .args(["run", task.to_str().unwrap(), "--budget", "1"])
        .assert()
        .code(2)
        .stderr(contains("task llm-serve needs its"))
        .stderr(contains("run `polymorph setup"));
    assert!(!cache.exists(), "a run installed something");
    std::fs::write(
        task.join("package.json"),
        r#"{"dependencies": {"node-llama-cpp": "^3.22.1"}}"#,
    )
    .unwrap();
    env.cmd()
        .args(["context", task.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(contains("pin an exact version"));
}

#[test]
fn llama_cpp_serves_a_short_trace_and_changed_answers_fail() {
    let env = Env::alone();
    let task = env.task(TASK);
    let t = task.to_str().unwrap();
    if !installed(&env, t) {
        return;
    }
    // A short trace and no hand-tuned baseline, which this test does not need: this machine has
    // two cores and the suite's other tests.
    let toml = task.join("task.toml");
    edit(&toml, "hand_tuned = ", "# hand_tuned = ");
    edit(&toml, "workloads/chat.json", "workloads/tiny.json");
    // The fewest pairs a judgement may take: the candidate below only needs a verdict.
    edit(&toml, "max_pairs = 10", "max_pairs = 6");
    std::fs::write(
        task.join("workloads/tiny.json"),
        r#"{"name": "tiny", "rate_rps": 4, "window_s": 1.5, "prompt_words": [8, 40], "answer_tokens": [8, 16], "slo_ttft_ms": 1500, "slo_tpot_ms": 1000, "seed": 3, "ramp": {"from_rps": 2, "doubling_s": 1}}"#,
    )
    .unwrap();
    // Through the sandbox: the weights' hash and the fixed prompts, then the ramp.
    let check = env.json(&["check", t, "--rounds", "1"]);
    let capacity = check["trees"][0]["cases"]["tiny"].as_f64().unwrap();
    assert!(capacity > 0.5 && capacity < 100.0, "{check}");
    // The machine's bound (probe.c, built by the task's build, and bound.mjs) on what this ramp
    // can show, above what the server showed.
    let bound = check["trees"][0]["limit"].as_f64().unwrap();
    assert!(bound > capacity, "{check}");
    // A scheduler that drops the start of long prompts to go faster changes answers; a KV cache
    // llama.cpp cannot build is named; a plain change of configuration is measured and judged.
    let trimming = "export function admit() { return true; }\nexport function pick(queue) {\n    for (const r of queue) if (r.prompt.length > 60) r.prompt = r.prompt.slice(-60);\n    return 0;\n}\n";
    let config = |sequences: u32, kv: &str, flash: bool| {
        format!(
            "{{\"batch_size\": 256, \"flash_attention\": {flash}, \"kv_cache\": \"{kv}\", \"lookup_decoding\": false, \"max_queue\": 0, \"order\": \"fifo\", \"prioritization\": \"maximumParallelism\", \"sequences\": {sequences}, \"threads\": 2}}\n"
        )
    };
    let r = run_replay(
        &env,
        &task,
        &[
            files_line("scheduler.mjs", trimming, "trim long prompts"),
            files_line(
                "config.json",
                &config(2, "q8_0", false),
                "a quantized V cache",
            ),
            files_line("config.json", &config(3, "f16", true), "three sequences"),
        ],
        &[],
    );
    assert_eq!(r[0].0, "failed", "{:?}", r[0]);
    assert!(r[0].1.contains("the reference"), "{:?}", r[0]);
    assert_eq!(r[1].0, "failed", "{:?}", r[1]);
    assert!(r[1].1.contains("flash attention"), "{:?}", r[1]);
    assert!(
        ["accepted", "rejected"].contains(&r[2].0.as_str()),
        "{:?}",
        r[2]
    );
    // A model whose check has no measured tolerance is refused, naming what to measure it with.
    edit(&task.join("models.json"), "\"tie_nats\"", "\"tie\"");
    env.cmd()
        .args(["check", t, "--rounds", "1"])
        .assert()
        .failure()
        .stderr(contains("needs \"check\": {\"tie_nats\": ...}"))
        .stderr(contains("tolerance.mjs measures it"));
}

#[test]
fn a_third_request_starts_while_two_long_answers_decode() {
    let env = Env::alone();
    let task = env.task(TASK);
    let t = task.to_str().unwrap();
    if !installed(&env, t) {
        return;
    }
    // The fixture is both the test and the bench: it fails when the third request's first token
    // comes after a long answer ended, and prints the margin otherwise.
    std::fs::copy(
        crate::common::repo().join("tests/fixtures/llm-serve-overlap.mjs"),
        task.join("overlap.mjs"),
    )
    .unwrap();
    let toml = task.join("task.toml");
    edit(&toml, "hand_tuned = ", "# hand_tuned = ");
    // The fixture states no machine's bound.
    edit(&toml, "limit = \"capacity_bound\"", "# limit");
    edit(
        &toml,
        "test = \"node check.mjs\"",
        "test = \"node overlap.mjs\"",
    );
    edit(
        &toml,
        "bench = \"node bench.mjs\"",
        "bench = \"node overlap.mjs\"",
    );
    edit(
        &task.join("config.json"),
        "\"sequences\": 1",
        "\"sequences\": 3",
    );
    let check = env.json(&["check", t, "--rounds", "1"]);
    let margin = check["trees"][0]["cases"]["overlap"].as_f64().unwrap();
    assert!(margin > 0.0, "{check}");
}
