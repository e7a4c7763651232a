// The machine's bound (harness-owned): from the probe's two rates (probe.c: memory read
// bandwidth and 8-bit multiply-accumulates a second, on the cores this process may use) and the
// model's weights (bytes one decode step reads, multiply-accumulates a token costs, from the GGUF
// file's tensors), upper bounds on the decode and prefill rates and on the capacity a ramp of the
// trace's requests can show (the rate it reaches while 90% of its requests so far could meet both
// SLOs). Every simplification leaves out work or time, never adds any, so that no configuration can
// honestly pass a bound: attention, norms and a mixture of experts' tensors are not counted, a
// prompt's prefix shared with an earlier request's costs nothing, and batches may be unbounded.
import {execFileSync} from "node:child_process";
import {join} from "node:path";
import {SHARE} from "./capacity.mjs";
import {HERE, LOOKUP_DRAFT_TOKENS} from "./engine.mjs";

// Bytes per block and elements per block of ggml's weight types (ggml.h's enum ggml_type); a type
// not here counts no bytes, which only raises the bound.
const GGML_TYPES = {
    0: [4, 1], 1: [2, 1], 2: [18, 32], 3: [20, 32], 6: [22, 32], 7: [24, 32], 8: [34, 32],
    9: [36, 32], 10: [84, 256], 11: [110, 256], 12: [144, 256], 13: [176, 256], 14: [210, 256],
    15: [292, 256], 30: [2, 1],
};

/// What one token costs the model: `{stepBytes, blockMacs, outputMacs}`: the bytes of the matrices
/// one decode step multiplies by (the blocks' and the output projection's, the token embedding's
/// when the output is tied to it), the multiply-accumulates of a token through the blocks, and of
/// its logits.
export async function modelCost(lib, path) {
    const info = await lib.readGgufFileInfo(path, {readTensorInfo: true});
    const tensors = info.fullTensorInfo ?? info.tensorInfo ?? [];
    if (!tensors.length) throw new Error(`${path}: the GGUF file lists no tensors`);
    const elements = (t) => t.dimensions.reduce((a, d) => a * Number(d), 1);
    const bytes = (t) => {
        const [size, per] = GGML_TYPES[t.ggmlType] ?? [0, 1];
        return elements(t) / per * size;
    };
    const matrix = (t) => t.dimensions.length === 2 && t.name.endsWith(".weight");
    const blocks = tensors.filter((t) => t.name.startsWith("blk.") && matrix(t));
    const output = tensors.find((t) => t.name === "output.weight") ?? tensors.find((t) => t.name === "token_embd.weight");
    const outputMacs = output ? elements(output) : 0;
    return {
        stepBytes: blocks.reduce((a, t) => a + bytes(t), 0) + (output ? bytes(output) : 0),
        blockMacs: blocks.reduce((a, t) => a + elements(t), 0),
        outputMacs,
    };
}

/// The probe's figures on this machine: `{threads, read_gbps, int8_gmacs}` (int8_gmacs null
/// where no arithmetic bound is known). `probe` is built from probe.c by the task's build.
export function probe(stepBytes) {
    const out = execFileSync(join(HERE, "probe"), [String(Math.max(1, Math.round(stepBytes)))], {encoding: "utf8"});
    return JSON.parse(out);
}

/// Tokens the prompt of each request must compute: those after its longest common prefix with
/// an earlier request's prompt (a server may keep that prefix's cache), at least one.
function uncachedTokens(prompts) {
    return prompts.map((p, i) => {
        let shared = 0;
        for (let j = 0; j < i; j++) {
            let k = 0;
            while (k < p.length && k < prompts[j].length && p[k] === prompts[j][k]) k++;
            shared = Math.max(shared, k);
        }
        return Math.max(1, p.length - shared);
    });
}

/// The machine's two speeds: multiply-accumulates a second (Infinity where the probe claims no
/// arithmetic rate) and the seconds of one decode step's pass over the weights.
function speeds(cost, machine) {
    return {
        macsPerS: machine.int8_gmacs ? machine.int8_gmacs * 1e9 : Infinity,
        stepS: cost.stepBytes / (machine.read_gbps * 1e9),
    };
}

/// Each request's least time to its first token and per token after it on this machine, whether
/// it could meet both SLOs alone, and its multiply-accumulates: [{feasible, macs}].
function perRequest(w, prompts, answers, cost, machine) {
    const {macsPerS, stepS} = speeds(cost, machine);
    const tokenMacs = cost.blockMacs + cost.outputMacs;
    // A decode step reads the weights once, whatever its batch; with lookup decoding it may
    // accept LOOKUP_DRAFT_TOKENS drafted tokens besides its own.
    const prefill = uncachedTokens(prompts);
    return answers.map((n, i) => {
        const ttft = Math.max(stepS, (prefill[i] * cost.blockMacs + cost.outputMacs) / macsPerS);
        const steps = Math.ceil((n - 1) / (LOOKUP_DRAFT_TOKENS + 1));
        const tpot = n > 1 ? Math.max(steps * stepS, (n - 1) * tokenMacs / macsPerS) / (n - 1) : 0;
        return {
            feasible: ttft * 1000 <= w.slo_ttft_ms && tpot * 1000 <= w.slo_tpot_ms,
            macs: (prefill[i] - 1 + n) * cost.blockMacs + n * cost.outputMacs,
        };
    });
}

/// The bound on the capacity a ramp (capacity.mjs) can measure: the highest rate it reaches while
/// the machine could still meet SHARE of the requests sent so far. Meeting them needs, for every
/// stretch of arrivals from request j to request i, the work of those of them that must be met
/// (all but the misses SHARE allows and the requests before j) done between j's arrival and the
/// latest deadline: the cheapest of them that could each meet both SLOs alone are counted, and
/// stretches back by powers of two are tried. `ramp` is the ramp's requests in arrival order,
/// `{at, rate, maxTokens}`, with `prompts` their tokens. Infinity where the machine could meet
/// every request the ramp sends.
export function rampBound(w, ramp, prompts, cost, machine) {
    const {macsPerS} = speeds(cost, machine);
    const each = perRequest(w, prompts, ramp.map((q) => q.maxTokens), cost, machine);
    const slack = (w.slo_ttft_ms + Math.max(...ramp.map((q) => q.maxTokens)) * w.slo_tpot_ms) / 1000;
    let feasibleSoFar = 0;
    for (const [i, q] of ramp.entries()) {
        if (each[i].feasible) feasibleSoFar++;
        const need = Math.ceil(SHARE * (i + 1));
        if (feasibleSoFar < need) return ramp[i - 1]?.rate ?? 0;
        const backs = [];
        for (let back = 1; back < i + 1; back *= 2) backs.push(back);
        for (const back of [...backs, i + 1]) {
            const j = i + 1 - back;
            const must = need - j;
            if (must <= 0) continue;
            const cheapest = each.slice(j, i + 1).filter((r) => r.feasible).map((r) => r.macs).sort((a, b) => a - b);
            const work = cheapest.slice(0, must).reduce((a, m) => a + m, 0);
            if (cheapest.length < must || work > macsPerS * (q.at - ramp[j].at + slack)) return ramp[i - 1]?.rate ?? 0;
        }
    }
    return Infinity;
}

/// Upper bounds on the rates of a model of `cost` on a machine of `machine` (the probe's), in
/// tokens a second: one sequence's decode (with lookup decoding's drafts), a batch's decode, and
/// prefill. Infinity where the probe claims no arithmetic rate.
export function rates(cost, machine) {
    const {macsPerS, stepS} = speeds(cost, machine);
    const tokenMacs = cost.blockMacs + cost.outputMacs;
    return {
        decode_tps: Math.min((LOOKUP_DRAFT_TOKENS + 1) / stepS, macsPerS / tokenMacs),
        batch_decode_tps: macsPerS / tokenMacs,
        prefill_tps: macsPerS / cost.blockMacs,
    };
}
