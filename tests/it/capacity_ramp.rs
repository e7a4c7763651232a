//! llm-serve's ramp (tasks/llm-serve/capacity.mjs): the trace's requests laid on a rate that
//! doubles at the workload's pace, in order and from the path's own place in a log, and the
//! capacity read at 90% from a fitted curve, saying when the ramp never turned; vllm-serve's
//! (tasks/vllm-serve/capacity.py) lays the same ramps and reads the same capacities.

use crate::common::{node_json, python_json};
use serde_json::Value;
use std::path::PathBuf;

/// What `body` (JavaScript with `load`, `rampRequests`, `fitCapacity` and `pace` in scope)
/// prints as JSON.
fn node(body: &str) -> Value {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tasks/llm-serve");
    let js = format!(
        "import {{load}} from {:?}; import {{fitCapacity, pace, rampRequests}} from {:?}; {body}",
        dir.join("traffic.mjs").display().to_string(),
        dir.join("capacity.mjs").display().to_string()
    );
    node_json(&dir, &js)
}

#[test]
fn a_ramp_lays_the_traces_requests_on_a_doubling_rate_in_order() {
    for workload in ["chat", "log-azure", "log-mooncake"] {
        let v = node(&format!(
            "const w = load('workloads/{workload}.json'); \
             const out = [0, 1, 2, 3].map((p) => rampRequests(w, p)); \
             console.log(JSON.stringify({{pace: pace(w), paths: out.map((r) => ({{ \
                 first: r[0].messages[0].content, n: r.length, \
                 ordered: r.every((q, i) => i === 0 || q.at >= r[i - 1].at), \
                 last: r.at(-1).at, top: r.at(-1).rate, start: r[0].rate}}))}}));"
        ));
        let from = v["pace"]["from"].as_f64().unwrap();
        let doubling = v["pace"]["doubling"].as_f64().unwrap();
        let paths = v["paths"].as_array().unwrap();
        for p in paths {
            assert_eq!(p["ordered"], true, "{workload}: {p}");
            assert!(p["last"].as_f64().unwrap() < 30.0, "{workload}: {p}");
            assert_eq!(p["start"].as_f64().unwrap(), from, "{workload}: {p}");
            // The rate at the last arrival is the pace's: from * 2^(at / doubling).
            let want = from * 2f64.powf(p["last"].as_f64().unwrap() / doubling);
            assert!(
                (p["top"].as_f64().unwrap() - want).abs() < 1e-9 * want,
                "{p}"
            );
            // Arrivals by 30 s: about from * doubling / ln 2 * (2^(30 / doubling) - 1).
            let expected = from * doubling / 2f64.ln() * (2f64.powf(30.0 / doubling) - 1.0);
            let n = p["n"].as_f64().unwrap();
            assert!(
                n > 0.7 * expected && n < 1.3 * expected,
                "{workload}: {n} of {expected}"
            );
        }
        // Each path starts somewhere else: in the log, or on its own draw.
        let firsts: std::collections::HashSet<_> =
            paths.iter().map(|p| p["first"].to_string()).collect();
        assert!(firsts.len() >= 3, "{workload}: {firsts:?}");
    }
    // A pace that cannot ramp is refused, naming the fields.
    let v = node(
        "try { pace({name: 'x', rate_rps: 1, ramp: {doubling_s: 0}}); console.log('null'); } \
         catch (e) { console.log(JSON.stringify(e.message)); }",
    );
    assert!(v.as_str().unwrap().contains("ramp.doubling_s"), "{v}");
}

#[test]
fn capacity_is_the_fitted_curves_90_percent_point_and_says_when_the_ramp_never_turned() {
    // Met up to 2/s and missed from 2.2/s on: the curve's middle lies between, and its 90%
    // point is 9^(1/8) = 1.32 times below the middle.
    let v = node(
        "const recs = [1, 1.2, 1.5, 1.8, 2, 2.2, 2.5, 3, 3.5, 4].map((rate) => ({rate, good: rate <= 2})); \
         console.log(JSON.stringify([fitCapacity(recs), \
             fitCapacity(recs.map((r) => ({...r, good: true}))), \
             fitCapacity(recs.map((r) => ({...r, good: false})))]));",
    );
    let (c50, cap) = (
        v[0]["c50"].as_f64().unwrap(),
        v[0]["capacity"].as_f64().unwrap(),
    );
    assert!(c50 > 2.0 && c50 < 2.2, "{v}");
    assert!((c50 / cap - 9f64.powf(1.0 / 8.0)).abs() < 1e-9, "{v}");
    assert_eq!(v[0]["censored"], Value::Null, "{v}");
    // Every request met: the curve sits at the grid's top, twice the highest rate.
    assert_eq!(v[1]["censored"], "above", "{v}");
    assert!((v[1]["c50"].as_f64().unwrap() - 8.0).abs() < 0.05, "{v}");
    assert_eq!(v[2]["censored"], "below", "{v}");
}

/// What `body` (Python with `traffic` and `capacity` imported, run in tasks/llm-serve so that
/// the workloads are llm-serve's) prints as JSON.
fn python(body: &str) -> Value {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let py = format!(
        "import sys, json; sys.path.insert(0, {:?}); import traffic, capacity\n{body}",
        root.join("tasks/vllm-serve").display().to_string()
    );
    python_json(&root.join("tasks/llm-serve"), &py)
}

#[test]
fn python_lays_the_same_ramps_and_reads_the_same_capacities_as_node() {
    for workload in ["chat", "log-azure", "log-mooncake"] {
        for path in [0, 3] {
            let js = node(&format!(
                "const r = rampRequests(load('workloads/{workload}.json'), {path}, Infinity); \
                 console.log(JSON.stringify(r.map((q) => [q.at, q.rate, q.maxTokens, q.messages[0].content])));"
            ));
            let py = python(&format!(
                "r = capacity.ramp_requests(traffic.load('workloads/{workload}.json'), {path}, float('inf'))\n\
                 print(json.dumps([[q['at'], q['rate'], q['max_tokens'], q['messages'][0]['content']] for q in r]))"
            ));
            let (js, py) = (js.as_array().unwrap(), py.as_array().unwrap());
            assert_eq!(js.len(), 1024, "{workload}");
            assert_eq!(js.len(), py.len(), "{workload} path {path}");
            for (a, b) in js.iter().zip(py) {
                assert_eq!(
                    a.as_array().unwrap()[2..],
                    b.as_array().unwrap()[2..],
                    "{workload} path {path}"
                );
                for k in 0..2 {
                    let (x, y) = (a[k].as_f64().unwrap(), b[k].as_f64().unwrap());
                    assert!((x - y).abs() <= 1e-9 * x.abs().max(1.0), "{a} vs {b}");
                }
            }
        }
    }
    // The same records give the same fit, censored or not.
    let recs = "[[1, 1], [1.2, 1], [1.5, 0], [1.8, 1], [2, 1], [2.2, 0], [2.5, 1], [3, 0], [3.5, 0], [4, 0]]";
    let js = node(&format!(
        "const recs = {recs}.map(([rate, good]) => ({{rate, good: !!good}})); \
         console.log(JSON.stringify([recs, recs.map((r) => ({{...r, good: true}})), \
             recs.map((r) => ({{...r, good: false}}))].map(fitCapacity)));"
    ));
    let py = python(&format!(
        "recs = [{{'rate': r, 'good': bool(g)}} for r, g in {recs}]\n\
         print(json.dumps([capacity.fit_capacity(x) for x in [recs, [{{**r, 'good': True}} for r in recs], \
             [{{**r, 'good': False}} for r in recs]]]))"
    ));
    for (a, b) in js.as_array().unwrap().iter().zip(py.as_array().unwrap()) {
        assert_eq!(a["censored"], b["censored"], "{a} vs {b}");
        let (x, y) = (
            a["capacity"].as_f64().unwrap(),
            b["capacity"].as_f64().unwrap(),
        );
        assert!((x - y).abs() <= 1e-9 * x, "{a} vs {b}");
    }
}

#[test]
fn even_arrivals_keep_the_paths_request_mix_and_lay_the_kth_where_k_are_expected() {
    // chat's path 2 with the trace's own (Poisson) gaps and with `ramp.arrivals` "even" (what
    // chat.json names, so Python's even ramp is compared with node's by the test above).
    let v = node(
        "const w = load('workloads/chat.json'); const even = {...w, ramp: {arrivals: 'even'}}; \
         const trace = {...w, ramp: {arrivals: 'trace'}}; \
         const shape = (r) => r.map((q) => [q.at, q.maxTokens, q.messages[0].content]); \
         console.log(JSON.stringify({pace: pace(even), chat: pace(w), trace: shape(rampRequests(trace, 2)), \
             even: shape(rampRequests(even, 2))}));",
    );
    assert_eq!(v["pace"]["even"], true, "{v}");
    assert_eq!(v["chat"], v["pace"], "chat's ramp is the even one");
    let (from, doubling) = (
        v["pace"]["from"].as_f64().unwrap(),
        v["pace"]["doubling"].as_f64().unwrap(),
    );
    let (trace, even) = (
        v["trace"].as_array().unwrap(),
        v["even"].as_array().unwrap(),
    );
    assert!(even.len() > 20, "{v}");
    for (k, q) in even.iter().enumerate() {
        // The k-th request (from 0) arrives when k are expected: from * doubling / ln 2 *
        // (2^(t / doubling) - 1) = k.
        let want = doubling * (1.0 + k as f64 * 2f64.ln() / (from * doubling)).log2();
        let at = q[0].as_f64().unwrap();
        assert!((at - want).abs() < 1e-9, "request {k}: {at} against {want}");
        // The same requests, in the same order, as the trace's own gaps would send.
        if let Some(t) = trace.get(k) {
            assert_eq!(
                q.as_array().unwrap()[1..],
                t.as_array().unwrap()[1..],
                "{k}"
            );
        }
    }
    // Even gaps are not the trace's: the Poisson path's arrivals fall elsewhere.
    assert!(trace.iter().zip(even).any(|(t, e)| t[0] != e[0]));
    // Anything else is refused by both, naming the field and what it takes.
    let js = node(
        "try { pace({name: 'x', rate_rps: 1, ramp: {arrivals: 'uniform'}}); console.log('null'); } \
         catch (e) { console.log(JSON.stringify(e.message)); }",
    );
    let py = python(
        "try:\n    capacity.pace({'name': 'x', 'rate_rps': 1, 'ramp': {'arrivals': 'uniform'}}); print('null')\n\
         except SystemExit as e:\n    print(json.dumps(str(e)))",
    );
    for why in [js, py] {
        let why = why.as_str().unwrap_or_default().to_string();
        assert!(
            why.contains("ramp.arrivals") && why.contains("\"even\"") && why.contains("uniform"),
            "{why}"
        );
    }
}
