//! The serving tasks' machine bound (llm-serve's bound.mjs, vllm-serve's bound.py) on what a ramp
//! of load can show: each request is charged what it must cost (a pass over the weights per
//! decode step, drafted tokens at most, the prompt's arithmetic less a prefix an earlier request
//! shared), a request that cannot meet an SLO alone is never counted as met, the machine's
//! arithmetic caps the rest between arrivals and deadlines, and without an arithmetic rate only
//! memory bounds anything. Both tasks give the same figures for the same requests, and read the
//! same costs from a GGUF file's tensors.

use crate::common::gguf::gguf;
use crate::common::{node_json, python_json};
use serde_json::{Value, json};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug)]
enum Task {
    /// llm-serve's bound.mjs: lookup decoding drafts at most 3 tokens a step.
    LlmServe,
    /// vllm-serve's bound.py: n-gram speculation drafts at most 4.
    VllmServe,
}

impl Task {
    fn dir(self) -> PathBuf {
        let name = match self {
            Task::LlmServe => "llm-serve",
            Task::VllmServe => "vllm-serve",
        };
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tasks")
            .join(name)
    }

    /// Tokens a decode step may yield at most.
    fn per_step(self) -> f64 {
        match self {
            Task::LlmServe => 4.0,
            Task::VllmServe => 5.0,
        }
    }
}

const BOTH: [Task; 2] = [Task::LlmServe, Task::VllmServe];

/// The ramp's bound and the machine's rates, for requests with `prompts` (token ids) and
/// `answers` (lengths) arriving 0.1 s apart at rates 1, 2, 3, ... a second, for a model whose
/// decode step reads 100 MB and whose token costs 1e8 multiply-accumulates, on a machine that
/// reads 10 GB/s and multiplies at `gmacs` G MAC/s (`None`: unknown); infinities as "inf".
fn bounds(
    task: Task,
    slo: (u32, u32),
    prompts: &[Vec<u32>],
    answers: &[u32],
    gmacs: Option<f64>,
) -> Value {
    let dir = task.dir();
    let (prompts, answers) = (json!(prompts), json!(answers));
    match task {
        Task::LlmServe => {
            let js = format!(
                "import {{rampBound, rates}} from './bound.mjs'; \
                 const w = {{slo_ttft_ms: {}, slo_tpot_ms: {}}}; \
                 const cost = {{stepBytes: 1e8, blockMacs: 1e8, outputMacs: 0}}; \
                 const machine = {{threads: 2, read_gbps: 10, int8_gmacs: {}}}; \
                 const ramp = {answers}.map((n, i) => ({{at: i / 10, rate: i + 1, maxTokens: n}})); \
                 const b = {{ramp: rampBound(w, ramp, {prompts}, cost, machine), ...rates(cost, machine)}}; \
                 console.log(JSON.stringify(b, (k, v) => v === Infinity ? \"inf\" : v));",
                slo.0,
                slo.1,
                json!(gmacs)
            );
            node_json(&dir, &js)
        }
        Task::VllmServe => {
            let py = format!(
                "import json, math, bound\n\
                 w = {{'slo_ttft_ms': {}, 'slo_tpot_ms': {}}}\n\
                 cost = {{'step_bytes': 1e8, 'block_macs': 1e8, 'output_macs': 0}}\n\
                 machine = {{'device': 'test', 'read_gbps': 10, 'gmacs': json.loads('{}')}}\n\
                 ramp = [{{'at': i / 10, 'rate': i + 1, 'max_tokens': n}} for i, n in enumerate({answers})]\n\
                 b = {{'ramp': bound.ramp_bound(w, ramp, {prompts}, cost, machine), **bound.rates(cost, machine)}}\n\
                 print(json.dumps({{k: 'inf' if v == math.inf else v for k, v in b.items()}}))",
                slo.0,
                slo.1,
                json!(gmacs)
            );
            python_json(&dir, &py)
        }
    }
}

fn close(v: &Value, key: &str, want: f64) {
    let got = v[key].as_f64().unwrap_or_else(|| panic!("{key}: {v}"));
    assert!(
        (got - want).abs() < 1e-6 * want.max(1.0),
        "{key}: {got}, not {want}: {v}"
    );
}

/// Four requests: A (40 tokens), B (60 of its own), C (A's 40 and 20 more), D (5 tokens, a
/// 2-token answer).
fn four() -> (Vec<Vec<u32>>, Vec<u32>) {
    let a: Vec<u32> = (0..40).collect();
    let b: Vec<u32> = (1000..1060).collect();
    let c: Vec<u32> = (0..60).collect();
    let d: Vec<u32> = (2000..2005).collect();
    (vec![a, b, c, d], vec![9, 9, 9, 2])
}

#[test]
fn a_request_that_cannot_meet_an_slo_alone_is_not_counted() {
    let (prompts, answers) = four();
    for task in BOTH {
        // One token's arithmetic is 1 ms at 100 G MAC/s; a decode step, 10 ms. B's prompt takes
        // 60 ms (> 50) to read; C's takes 20, as it shares A's 40 tokens; D's second token needs
        // a step of its own (10 ms > 5), where A's eight tokens after the first need two steps
        // (4 or 5 tokens each): 2.5 ms each. So with B the ramp's first two requests cannot
        // both be met: the bound is A's rate.
        let b = bounds(task, (50, 5), &prompts, &answers, Some(100.0));
        close(&b, "ramp", 1.0);
        close(&b, "decode_tps", 100.0 * task.per_step());
        close(&b, "batch_decode_tps", 1000.0);
        close(&b, "prefill_tps", 1000.0);
        // Relaxed SLOs: every request alone could, and four requests' 0.15 s of arithmetic fit
        // between the first arrival and the last deadline: the machine keeps up with the ramp.
        let b = bounds(task, (1000, 100), &prompts, &answers, Some(100.0));
        assert_eq!(b["ramp"], "inf", "{task:?}: {b}");
    }
}

#[test]
fn the_machines_arithmetic_caps_the_rate_a_ramp_can_show() {
    // Twenty one-token prompts with two-token answers, each 0.2 s of arithmetic at 1 G MAC/s;
    // a deadline is (1050 + 2 * 200) / 1000 = 1.45 s after the last arrival. The first 15
    // requests need 14 met (90%): 2.8 s of work by 1.4 + 1.45 s; the first 16 need 15: 3.0 s by
    // 2.95 s. So the bound is the 15th request's rate.
    let prompts: Vec<Vec<u32>> = (0..20).map(|i| vec![i]).collect();
    let answers = vec![2; 20];
    for task in BOTH {
        let b = bounds(task, (1050, 200), &prompts, &answers, Some(1.0));
        close(&b, "ramp", 15.0);
        // Unknown arithmetic: only memory bounds, and only the decode steps.
        let b = bounds(task, (1050, 200), &prompts, &answers, None);
        assert_eq!(b["ramp"], "inf", "{task:?}: {b}");
        assert_eq!(b["prefill_tps"], "inf", "{task:?}: {b}");
        close(&b, "decode_tps", 100.0 * task.per_step());
    }
}

#[test]
fn the_gguf_files_tensors_give_the_models_cost() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("model.gguf");
    // A block's two matrices (Q4_K: 144 bytes a 256; F16), its norm (one dimension: no
    // matrix), the embedding (F16, not read by a decode step when an output exists), the output
    // (Q6_K: 210 bytes a 256).
    gguf(
        &file,
        &[
            ("token_embd.weight", &[256, 100], 1),
            ("blk.0.attn_q.weight", &[256, 64], 12),
            ("blk.0.ffn_up.weight", &[64, 32], 1),
            ("blk.0.attn_norm.weight", &[256], 0),
            ("output.weight", &[256, 100], 14),
        ],
    );
    let py = format!(
        "import json, bound; print(json.dumps(bound.model_cost({:?})))",
        file.display().to_string()
    );
    let cost = python_json(&Task::VllmServe.dir(), &py);
    close(
        &cost,
        "step_bytes",
        (64.0 * 144.0) + (64.0 * 32.0 * 2.0) + 100.0 * 210.0,
    );
    close(&cost, "block_macs", 256.0 * 64.0 + 64.0 * 32.0);
    close(&cost, "output_macs", 25_600.0);
    // Tied to the embedding: the output is the embedding's matrix.
    gguf(
        &file,
        &[
            ("token_embd.weight", &[256, 100], 1),
            ("blk.0.attn_q.weight", &[256, 64], 12),
        ],
    );
    let cost = python_json(&Task::VllmServe.dir(), &py);
    close(&cost, "step_bytes", 64.0 * 144.0 + 25_600.0 * 2.0);
    // Not a GGUF file: a clear refusal, not a bound.
    std::fs::write(&file, b"safetensors").unwrap();
    let out = std::process::Command::new("python3")
        .current_dir(Task::VllmServe.dir())
        .args(["-c", &py])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("model.gguf: not a GGUF file"), "{err}");
}
