// Traffic traces (harness-owned): a workload file names the arrival rate, the window, the prompt
// and answer lengths and the two SLOs (time to first token, time per output token); the trace is
// drawn from its seed, so every bench process of a context replays the same arrivals (open-loop,
// Poisson) and the same prompts; with `paths`, from one of that many seeds from `seed` on, which
// the bench's round picks (both sides of a pair replay the same one). Or the workload names a
// request log (log.mjs) and the trace is a stretch of it, its arrivals scaled to the workload's rate.
import {readFileSync} from "node:fs";
import {logRequests, readLog} from "./log.mjs";

const FIELDS = ["name", "rate_rps", "window_s", "prompt_words", "answer_tokens", "slo_ttft_ms", "slo_tpot_ms", "seed"];

// Common English words, mostly one token each: a prompt of n words is about n tokens.
const WORDS = `the of and to in is was for on that with as by at from his her this had not are but
which have one were all their they been has new more two when who other after also into first
time can only its over most some could would them these than such may then about year city
world part made state between many where under three during area house school water story long
people same country under began called river since small family town power early before large
north south east west common found known among while light order point group music work place
line field round game film book market night death money road table paper black white green
stone field heart voice space earth speed metal glass train plant ocean storm cloud rain winter
summer garden island valley forest bridge castle village season number letter method system
model engine server memory kernel token cache batch queue thread signal window answer prompt`
    .split(/\s+/).filter(Boolean);

/// A small, seeded generator (mulberry32): the same seed draws the same trace everywhere.
export function rng(seed) {
    let a = seed >>> 0;
    const next = () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    return {
        next,
        int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
        exp: (rate) => -Math.log(1 - next()) / rate,
        words: (n) => Array.from({length: n}, () => WORDS[Math.floor(next() * WORDS.length)]).join(" "),
    };
}

/// The most arrival paths a workload may name.
const MAX_PATHS = 64;

/// Reads and checks a workload file (and the request log it names, if any).
export function load(path) {
    const w = JSON.parse(readFileSync(path, "utf8"));
    // A log gives each request's lengths; the ranges are then optional bounds on them.
    const needed = "log" in w ? FIELDS.filter((k) => k !== "prompt_words" && k !== "answer_tokens") : FIELDS;
    const missing = needed.filter((k) => !(k in w));
    if (missing.length) throw new Error(`${path}: the workload lacks ${missing.join(", ")}`);
    const range = (r) => Array.isArray(r) && r.length === 2 && Number.isInteger(r[0]) && r[0] >= 1 && r[0] <= r[1];
    const ranges = ["prompt_words", "answer_tokens"].filter((k) => k in w || !("log" in w));
    if (!ranges.every((k) => range(w[k]))) throw new Error(`${path}: prompt_words and answer_tokens are [min, max] with 1 <= min <= max`);
    if (!(w.rate_rps > 0 && w.window_s > 0 && w.slo_ttft_ms > 0 && w.slo_tpot_ms > 0)) throw new Error(`${path}: rate_rps, window_s and both SLOs must be positive`);
    if ("paths" in w && !(Number.isInteger(w.paths) && w.paths >= 1 && w.paths <= MAX_PATHS)) {
        throw new Error(`${path}: paths is a whole number from 1 to ${MAX_PATHS}`);
    }
    if ("log" in w) {
        w.entries = readLog(path, w);
        // Every path's stretch of the log must hold a request, not just the one drawn first.
        for (let p = 0; p < (w.paths ?? 1); p++) requests(w, p);
    }
    return w;
}

/// Which of the workload's paths a bench process replays: its round's seed
/// (POLYMORPH_ROUND_SEED, shared by both sides of a pair) modulo `paths`; 0 without either.
export function pathOf(w, roundSeed) {
    return Number.parseInt(roundSeed ?? "0", 10) % (w.paths ?? 1) || 0;
}

/// [{at (seconds after the start), messages, maxTokens}] for the workload's window, on its path
/// `path` (drawn from seed `seed + path`).
export function requests(w, path = 0) {
    if (w.entries) return logRequests({...w, seed: w.seed + path}, rng);
    const r = rng(w.seed + path);
    const out = [];
    for (let t = r.exp(w.rate_rps); t < w.window_s; t += r.exp(w.rate_rps)) {
        const words = r.int(...w.prompt_words);
        const ask = r.next() < 0.5 ? "Summarise these notes in plain words" : "Continue this list and explain it";
        out.push({at: t, maxTokens: r.int(...w.answer_tokens),
            messages: [{role: "user", content: `${ask}: ${r.words(words)}`}]});
    }
    return out;
}
