// The machine's bound (harness-owned): from the probe's two rates (probe.c: memory read
// bandwidth and 8-bit multiply-accumulates a second, on the cores this process may use) and the
// model's weights (bytes one decode step reads, multiply-accumulates a token costs, from the GGUF
// file's tensors), upper bounds on the decode and prefill rates, on the goodput of the trace at
// its load, and on its capacity (the arrival rate at which 90% of its request mix could meet both
// SLOs). Every simplification leaves out work or time, never adds any, so that no configuration can
// honestly pass a bound: attention, norms and a mixture of experts' tensors are not counted, a
// prompt's prefix shared with an earlier request's costs nothing, and batches may be unbounded.
import {execFileSync} from "node:child_process";
import {join} from "node:path";
import {HERE, LOOKUP_DRAFT_TOKENS} from "./engine.mjs";

/// The share of a trace's requests that capacity asks to meet both SLOs.
export const CAPACITY_SHARE = 0.9;

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

/// The bounds for trace `w` whose requests (in arrival order) have prompts of `prompts` tokens and
/// answers of `answers` tokens, for a model of `cost` on a machine of `machine` (the probe's).
/// Rates are Infinity where the probe claims none.
export function bounds(w, prompts, answers, cost, machine) {
    const macsPerS = machine.int8_gmacs ? machine.int8_gmacs * 1e9 : Infinity;
    const bytesPerS = machine.read_gbps * 1e9;
    const tokenMacs = cost.blockMacs + cost.outputMacs;
    // A decode step reads the weights once, whatever its batch; with lookup decoding it may
    // accept LOOKUP_DRAFT_TOKENS drafted tokens besides its own.
    const stepS = cost.stepBytes / bytesPerS;
    const prefill = uncachedTokens(prompts);
    const requests = answers.map((n, i) => {
        const ttft = Math.max(stepS, (prefill[i] * cost.blockMacs + cost.outputMacs) / macsPerS);
        const steps = Math.ceil((n - 1) / (LOOKUP_DRAFT_TOKENS + 1));
        const tpot = n > 1 ? Math.max(steps * stepS, (n - 1) * tokenMacs / macsPerS) / (n - 1) : 0;
        return {
            feasible: ttft * 1000 <= w.slo_ttft_ms && tpot * 1000 <= w.slo_tpot_ms,
            macs: (prefill[i] - 1 + n) * cost.blockMacs + n * cost.outputMacs,
        };
    });
    const cheapest = requests.filter((r) => r.feasible).map((r) => r.macs).sort((a, b) => a - b);
    // Goodput at the trace's load: the requests that could each meet both SLOs alone, cheapest
    // first, as many as the machine's arithmetic can do between the first arrival and the bench's
    // last deadline.
    const horizonS = w.window_s + (w.slo_ttft_ms + Math.max(...answers) * w.slo_tpot_ms) / 1000;
    let met = 0;
    let spent = 0;
    for (const m of cheapest) {
        if (spent + m > macsPerS * horizonS) break;
        spent += m;
        met++;
    }
    // Capacity: at rate x the mix's cheapest 90% must be done at x times their mean work.
    const need = Math.ceil(CAPACITY_SHARE * answers.length);
    const work = cheapest.slice(0, need).reduce((a, m) => a + m, 0);
    return {
        goodput: (met + 0.5) / w.window_s,
        met,
        capacity_rps: cheapest.length < need ? 0 : macsPerS * answers.length / work,
        decode_tps: Math.min((LOOKUP_DRAFT_TOKENS + 1) / stepS, macsPerS / tokenMacs),
        batch_decode_tps: macsPerS / tokenMacs,
        prefill_tps: macsPerS / cost.blockMacs,
    };
}
