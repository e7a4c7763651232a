// The answer check's tolerance for a model, measured (harness-owned; run by hand, not by
// polymorph):
//
//   POLYMORPH_MODEL="<name> sha256:<hash>" POLYMORPH_NODE_MODULES=... node tolerance.mjs [SEEDS]
//
// The reference configuration's own perturbations (several sequences decoding at once, flash
// attention, a q8_0 KV cache, a small batch) answer the check's prompts greedily, for each of
// SEEDS (default 3) seeds' fillers, and every answer is scored teacher-forced under the reference
// with no tolerance: the widest gap between an answer's token and the reference's most likely is
// what a correct engine shows. It prints the widest per perturbation and the tolerance to put in
// models.json's `check.tie_nats`: MARGIN times the widest, rounded up to a tenth of a nat.
import {chatPrompt, createContext, loadModel, REFERENCE, sequenceOf} from "./engine.mjs";
import {checkPrompts, referee} from "./verify.mjs";

/// The tolerance over the widest gap measured: chosen on SmolLM2-135M, whose widest, 0.71 nats,
/// gives the 1.0 it was checked with
/// (docs/experiments/2026-12-06-llm-serve-teacher-forced-check.md).
const MARGIN = 1.4;

const PERTURBATIONS = {
    "three sequences": {sequences: 3},
    "flash attention": {flash_attention: true},
    "three sequences, flash attention, q8_0 KV cache": {sequences: 3, flash_attention: true, kv_cache: "q8_0"},
    "batches of 64 tokens": {batch_size: 64},
};

const seeds = Number(process.argv[2] ?? 3);
if (!(Number.isInteger(seeds) && seeds >= 1)) throw new Error("usage: node tolerance.mjs [SEEDS, a whole number >= 1]");
const engine = await loadModel();
const {answer_tokens: answerTokens} = engine.file.check;
const ref = await referee(engine, Infinity);

/// Greedy answers to `jobs` from a context of `config`, its sequences all decoding at once.
async function answers(config, jobs) {
    const context = await createContext(engine, config);
    const out = new Array(jobs.length);
    let next = 0;
    const worker = async () => {
        const seq = sequenceOf(engine, context, config);
        for (let i = next++; i < jobs.length; i = next++) {
            await seq.clearHistory();
            const prompt = engine.model.tokenize(chatPrompt([{role: "user", content: jobs[i].prompt}]), true);
            const tokens = [];
            for await (const t of seq.evaluate(prompt, {temperature: 0, yieldEogToken: true})) {
                if (!jobs[i].ignoreEos && engine.model.isEogToken(t)) break;
                tokens.push(t);
                if (tokens.length >= answerTokens) break;
            }
            out[i] = {prompt, tokens};
        }
    };
    await Promise.all(Array.from({length: config.sequences}, worker));
    await context.dispose();
    return out;
}

let widest = 0;
for (const [name, change] of Object.entries(PERTURBATIONS)) {
    const config = {...REFERENCE, ...change};
    let worst = 0;
    for (let seed = 1; seed <= seeds; seed++) {
        const jobs = checkPrompts(engine.file, seed);
        for (const [i, a] of (await answers(config, jobs)).entries()) {
            const v = await ref.judge(a.prompt, a.tokens, {ignoreEos: jobs[i].ignoreEos, maxTokens: answerTokens});
            if (!v.ok) throw new Error(`${name}, seed ${seed}: ${v.why}`);
            worst = Math.max(worst, v.worst);
        }
    }
    console.log(`${name}: the widest gap ${worst.toFixed(3)} nats over ${seeds} seeds`);
    widest = Math.max(widest, worst);
}
const tolerance = Math.ceil(MARGIN * widest * 10 - 1e-9) / 10;
console.log(JSON.stringify({model: engine.file.name, widest, margin: MARGIN, tie_nats: tolerance}));
process.exit(0);
