//! llm-serve's machine bound (tasks/llm-serve/bound.mjs) on what a ramp of load can show: each
//! request is charged what it must cost (a pass over the weights per decode step, lookup
//! decoding's drafts at most, the prompt's arithmetic less a prefix an earlier request shared), a
//! request that cannot meet an SLO alone is never counted as met, the machine's arithmetic caps
//! the rest between arrivals and deadlines, and without an arithmetic rate only memory bounds
//! anything.

use crate::common::node_json;
use serde_json::Value;
use std::path::PathBuf;

/// The ramp's bound and the machine's rates, for requests with `prompts` (token ids) and `answers`
/// (lengths) arriving 0.1 s apart at rates 1, 2, 3, ... a second, for a model whose decode step
/// reads 100 MB and whose token costs 1e8 multiply-accumulates, on a machine that reads 10 GB/s
/// and multiplies at `gmacs` G MAC/s (`null`: unknown).
fn bounds(slo: (u32, u32), prompts: &str, answers: &str, gmacs: &str) -> Value {
    let bound = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tasks/llm-serve/bound.mjs");
    let js = format!(
        "import {{rampBound, rates}} from {:?}; \
         const w = {{slo_ttft_ms: {}, slo_tpot_ms: {}}}; \
         const cost = {{stepBytes: 1e8, blockMacs: 1e8, outputMacs: 0}}; \
         const machine = {{threads: 2, read_gbps: 10, int8_gmacs: {gmacs}}}; \
         const ramp = {answers}.map((n, i) => ({{at: i / 10, rate: i + 1, maxTokens: n}})); \
         const b = {{ramp: rampBound(w, ramp, {prompts}, cost, machine), ...rates(cost, machine)}}; \
         console.log(JSON.stringify(b, (k, v) => v === Infinity ? \"inf\" : v));",
        bound.display().to_string(),
        slo.0,
        slo.1
    );
    node_json(bound.parent().unwrap(), &js)
}

fn close(v: &Value, key: &str, want: f64) {
    let got = v[key].as_f64().unwrap_or_else(|| panic!("{key}: {v}"));
    assert!(
        (got - want).abs() < 1e-6 * want.max(1.0),
        "{key}: {got}, not {want}: {v}"
    );
}

// Four requests: A (40 tokens), B (60 of its own), C (A's 40 and 20 more), D (5 tokens, a
// 2-token answer). One token's arithmetic is 1 ms at 100 G MAC/s; a decode step, 10 ms.
const PROMPTS: &str = "[[...Array(40).keys()], [...Array(60).keys()].map((i) => 1000 + i), \
     [...Array(60).keys()], [7, 7, 7, 7, 7].map((t, i) => 2000 + i)]";
const ANSWERS: &str = "[9, 9, 9, 2]";

#[test]
fn a_request_that_cannot_meet_an_slo_alone_is_not_counted() {
    // B's prompt takes 60 ms (> 50) to read; C's takes 20, as it shares A's 40 tokens; D's second
    // token needs a step of its own (10 ms > 5), where A's eight tokens after the first need two
    // steps of four (lookup decoding's three drafts and the step's own token): 2.5 ms each. So
    // with B the ramp's first two requests cannot both be met: the bound is A's rate.
    let b = bounds((50, 5), PROMPTS, ANSWERS, "100");
    close(&b, "ramp", 1.0);
    close(&b, "decode_tps", 400.0);
    close(&b, "batch_decode_tps", 1000.0);
    close(&b, "prefill_tps", 1000.0);
    // Relaxed SLOs: every request alone could, and four requests' 0.15 s of arithmetic fit between
    // the first arrival and the last deadline: the machine keeps up with the whole ramp.
    let b = bounds((1000, 100), PROMPTS, ANSWERS, "100");
    assert_eq!(b["ramp"], "inf", "{b}");
}

#[test]
fn the_machines_arithmetic_caps_the_rate_a_ramp_can_show() {
    // Twenty one-token prompts with two-token answers, each 0.2 s of arithmetic at 1 G MAC/s;
    // a deadline is (1050 + 2 * 200) / 1000 = 1.45 s after the last arrival. The first 15
    // requests need 14 met (90%): 2.8 s of work by 1.4 + 1.45 s; the first 16 need 15: 3.0 s by
    // 2.95 s. So the bound is the 15th request's rate.
    let prompts = "[...Array(20).keys()].map((i) => [i])";
    let answers = "Array(20).fill(2)";
    let b = bounds((1050, 200), prompts, answers, "1");
    close(&b, "ramp", 15.0);
    // Unknown arithmetic: only memory bounds, and only the decode steps.
    let b = bounds((1050, 200), prompts, answers, "null");
    assert_eq!(b["ramp"], "inf", "{b}");
    assert_eq!(b["prefill_tps"], "inf", "{b}");
    close(&b, "decode_tps", 400.0);
}
