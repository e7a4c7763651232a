//! llm-serve's ramp (tasks/llm-serve/capacity.mjs): the trace's requests laid on a rate that
//! doubles at the workload's pace, in order and from the path's own place in a log, and the
//! capacity read at 90% from a fitted curve, saying when the ramp never turned.

use crate::common::node_json;
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
