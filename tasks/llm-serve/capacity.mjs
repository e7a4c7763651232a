// Capacity (harness-owned): the arrival rate at which the server stops meeting its SLOs, from one
// ramp of rising load within one bench process. The ramp replays the trace's request mix with
// the trace's own gaps (Poisson, or a log's bursts) or, where the workload's ramp says
// `"arrivals": "even"`, evenly spaced, at a rate that doubles every `doubling_s` seconds from
// `from_rps` (the workload's "ramp"; by default an eighth of the trace's rate and 4 s), until
// MISSES requests have missed or RAMP_S seconds have passed. Each request is met or
// missed (both SLOs, time running from its scheduled arrival); a miss is counted as soon as it
// is certain and the request is served on, so its work stays load. A logistic curve of the share
// met against log-rate, with a fixed slope (as adaptive psychophysics' QUEST assumes one), is fitted
// to every request of the ramp by likelihood; the capacity is the rate at which it gives SHARE.
// The ramp overestimates a steady load's capacity by what a queue takes to build at its pace, the
// same for every configuration; the slower the pace, the nearer the steady figure.
import {ask} from "./client.mjs";
import {requests, rng} from "./traffic.mjs";

/// The share of requests that capacity asks to meet both SLOs.
export const SHARE = 0.9;
/// Misses after which the ramp sends no more.
export const MISSES = 5;
/// The longest a ramp sends, in seconds.
export const RAMP_S = 30;
/// The most requests a ramp lays out (the bound's ramp goes on past RAMP_S).
export const MOST_REQUESTS = 1024;
/// The fitted curve's slope: the share met falls from 90% to 10% over a factor of
/// 81^(1/SLOPE) = 1.73 in rate. Set by hand, not fitted, on the chat trace's ramps with
/// SmolLM2-135M, where most ramps turn from met to missed within a request or two and the
/// scattered ones fitted slopes of 2-12 (docs/experiments/2026-12-07-llm-serve-capacity-ramp.md).
export const SLOPE = 8;

/// The ramp's pace for workload `w`: `{from, doubling, even}` (requests a second, seconds, and
/// whether its arrivals are evenly spaced: `ramp.arrivals` "even", or "trace", the default).
export function pace(w) {
    const r = w.ramp ?? {};
    const from = r.from_rps ?? w.rate_rps / 8;
    const doubling = r.doubling_s ?? 4;
    const arrivals = r.arrivals ?? "trace";
    if (!(from > 0 && doubling > 0)) throw new Error(`${w.name}: ramp.from_rps and ramp.doubling_s must be positive`);
    if (!["trace", "even"].includes(arrivals)) throw new Error(`${w.name}: ramp.arrivals is "trace" or "even", not ${JSON.stringify(arrivals)}`);
    return {from, doubling, even: arrivals === "even"};
}

/// The ramp's requests on the workload's path `path`: [{at (seconds), rate, messages, maxTokens}],
/// every arrival before `seconds` (at most MOST_REQUESTS). The trace's gaps, in units of its mean
/// gap, are laid on the ramp by its integral: arrivals by time t are expected to number
/// from * doubling / ln 2 * (2^(t / doubling) - 1). With even arrivals each gap is one mean gap
/// (the k-th request arrives when k are expected): the trace gives only the request mix. A log's
/// stretch starts where the path's seed says and wraps around.
export function rampRequests(w, path, seconds = RAMP_S) {
    const {from, doubling, even} = pace(w);
    const expected = Math.min(MOST_REQUESTS, from * doubling / Math.LN2 * (2 ** (seconds / doubling) - 1));
    // Each shape's gap to the one before it in the trace (a log's first: one mean gap).
    const gapped = (reqs) => reqs.map((q, i) => ({...q, gap: i > 0 ? q.at - reqs[i - 1].at : 1 / w.rate_rps}));
    let shapes;
    if (w.entries) {
        const all = gapped(requests({...w, window_s: Infinity}, 0));
        const cut = rng(w.seed + path).int(0, all.length - 1);
        shapes = [...all.slice(cut), ...all.slice(0, cut)];
    } else {
        let window = w.window_s;
        do {
            window *= 2;
            shapes = gapped(requests({...w, window_s: window}, path));
        } while (shapes.length <= expected + 20 && window < 1e6);
    }
    const out = [];
    let units = 0;
    for (let i = 0; out.length < MOST_REQUESTS; i++) {
        const {gap, ...q} = shapes[i % shapes.length];
        if (i > 0) units += even ? 1 : gap * w.rate_rps;
        const at = doubling * Math.log2(1 + units * Math.LN2 / (from * doubling));
        if (at >= seconds) break;
        out.push({...q, at, rate: from * 2 ** (at / doubling)});
    }
    return out;
}

/// Replays the ramp `reqs` against the server on `port`; resolves to one record per request sent,
/// `{good, ttft, tpot, answer}` besides its own fields, once every request sent is decided.
export async function runRamp(port, w, reqs) {
    const start = performance.now() + 50;
    let misses = 0;
    const sent = [];
    for (const q of reqs) {
        const wait = start + q.at * 1000 - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        if (misses >= MISSES) break;
        const at = start + q.at * 1000;
        const rec = {...q, good: null, ttft: null, tpot: null, answer: null};
        let first = null;
        sent.push(new Promise((decided) => {
            const decide = (good) => {
                if (rec.good !== null) return;
                rec.good = good;
                if (!good) misses++;
                clearInterval(watch);
                decided(rec);
            };
            // Late is late whatever comes after: no first token by its SLO, or an answer that
            // cannot end in time even if its remaining tokens came at once.
            const watch = setInterval(() => {
                const now = performance.now();
                if (first === null ? now - at > w.slo_ttft_ms : q.maxTokens > 1 && now - first > w.slo_tpot_ms * (q.maxTokens - 1)) decide(false);
            }, 10);
            ask(port, q.messages, q.maxTokens, {ignoreEos: true, onToken: (now) => { first ??= now; }}).then((a) => {
                const n = a.tokens.length;
                rec.answer = a;
                rec.ttft = n > 0 ? a.times[0] - at : Infinity;
                rec.tpot = n > 1 ? (a.times[n - 1] - a.times[0]) / (n - 1) : 0;
                decide(a.ok && n === q.maxTokens && rec.ttft <= w.slo_ttft_ms && rec.tpot <= w.slo_tpot_ms);
            });
        }));
    }
    return Promise.all(sent);
}

/// The capacity of the ramp's records (`rate`, `good`): the logistic P(met | rate) =
/// 1 / (1 + (rate / c50)^SLOPE) of greatest likelihood, searched over c50 on a grid of 0.2% steps
/// from half the lowest rate sent to twice the highest, and the rate where it gives SHARE. A ramp
/// that met every request says only that the capacity is above its highest rate, so the fit is
/// held within the grid and `censored` says which end it reached.
export function fitCapacity(recs) {
    if (!recs.length) throw new Error("the ramp sent no request");
    const xs = recs.map((r) => [Math.log(r.rate), r.good]);
    const lo = Math.min(...xs.map(([x]) => x)) - Math.LN2;
    const hi = Math.max(...xs.map(([x]) => x)) + Math.LN2;
    let best = {ll: -Infinity, m: lo};
    const steps = Math.floor((hi - lo) / 0.002 + 1e-9);
    for (let k = 0; k <= steps; k++) {
        const m = lo + k * 0.002;
        let ll = 0;
        for (const [x, good] of xs) {
            // log P(met) = -log(1 + e^z), log P(missed) = z - log(1 + e^z), z = SLOPE (x - m).
            const z = SLOPE * (x - m);
            const soft = z > 30 ? z : Math.log1p(Math.exp(z));
            ll += good ? -soft : z - soft;
        }
        if (ll > best.ll) best = {ll, m};
    }
    const atEdge = best.m <= lo + 0.002 ? "below" : best.m >= hi - 0.002 ? "above" : null;
    return {
        capacity: Math.exp(best.m - Math.log(SHARE / (1 - SHARE)) / SLOPE),
        c50: Math.exp(best.m),
        censored: atEdge,
    };
}
