// Answers checked against the reference configuration (harness-owned), teacher-forced. Greedy
// decoding is not bit-for-bit the same across configurations: batching several sequences, flash
// attention or a quantized KV cache change the sums' order, and a 4-bit model has near-ties, so
// after a near-tie two correct servers go on from different text. So the reference reads the
// prompt and the whole answer in one pass and gives, at every position, its distribution of the
// next token given the answer's own tokens before it: each token the server gave must be within
// the model's tolerance of the reference's most likely token there, and an answer that ends must
// end where an end token is within it of the most likely. Every token is scored, not only those
// up to the first difference: a server that answered another question (a trimmed prompt) drifts
// from the reference's distribution somewhere in its answer, and the reason says where and by how
// much.
import {createContext, REFERENCE} from "./engine.mjs";
import {rng} from "./traffic.mjs";

// How far below the reference's most likely token (in log-probability) an answer's token may be
// is the model's own (models.json's `check.tie_nats`): the widest gap that the reference
// configuration's own perturbations (several sequences, flash attention, a q8_0 KV cache, a small
// batch) give on the check's prompts, with a margin (tolerance.mjs measures it).

/// The check's prompts for a model (models.json's `check` sizes them): six fixed ones (empty,
/// non-ASCII, a long one, plain questions) and the seeded fillers, in an order the seed draws:
/// [{prompt, ignoreEos}].
export function checkPrompts(file, seed) {
    const {fillers, long_prompt_words: longWords} = file.check;
    const fixed = [
        "",
        "What is the capital of France?",
        "Explain what a hash table is, in three sentences.",
        "Übersetze ins Englische: Grüße aus Köln, 東京 und São Paulo.",
        "Write a haiku about the sea.",
        `Read these notes and name the three words that appear most often: ${rng(7).words(longWords)}`,
    ];
    const r = rng(seed);
    return [
        ...fixed.map((p) => ({prompt: p, ignoreEos: false})),
        ...Array.from({length: fillers}, (_, i) => ({prompt: r.words(r.int(5, 400)), ignoreEos: i % 2 === 1})),
    ].sort(() => r.next() - 0.5);
}

/// The most likely token of `probs` among those `keep` accepts: [token, probability]. The map
/// node-llama-cpp returns is sorted from the most likely token down, so the first that `keep`
/// accepts is the one.
function most(probs, keep = () => true) {
    for (const [t, p] of probs) if (keep(t)) return [t, p];
    return [null, 0];
}

/// A checker holding one reference-configuration context; an answer's tokens may be `tieNats` below
/// the reference's most likely (the model's own tolerance unless given).
export async function referee(engine, tieNats = engine.file.check.tie_nats) {
    const context = await createContext(engine, REFERENCE);
    const seq = context.getSequence();
    const eog = (t) => t != null && engine.model.isEogToken(t);
    const show = (t) => (eog(t) ? "the end" : JSON.stringify(engine.model.detokenize([t])));
    const nats = (a, b) => Math.log(a) - Math.log(b);
    /// {ok, compared, tie, worst, why} for `answer` (token ids) to `prompt` (token ids): `worst`
    /// is the largest gap in nats between an answer's token and the reference's most likely.
    const judge = async (prompt, answer, {ignoreEos, maxTokens}) => {
        if (!prompt.length) throw new Error("the referee needs a prompt of at least one token");
        await seq.clearHistory();
        const next = {generateNext: {probabilities: true}};
        const forced = [...prompt.slice(-1), ...answer].map((t) => [t, next]);
        const out = await seq.controlledEvaluate([...prompt.slice(0, -1), ...forced]);
        const at = (i) => out[prompt.length - 1 + i]?.next?.probabilities ?? new Map();
        let worst = 0;
        for (const [i, token] of answer.entries()) {
            const probs = at(i);
            const [top, pTop] = most(probs);
            const pGot = probs.get(token) ?? 0;
            const gap = nats(pTop, pGot);
            if (!(gap <= tieNats)) {
                return {ok: false, compared: i, worst, why: `token ${i}: ${show(token)} (p=${pGot.toFixed(4)}) where the reference, given the answer's ${i} tokens before it, says ${show(top)} (p=${pTop.toFixed(4)}), ${gap.toFixed(2)} nats apart`};
            }
            worst = Math.max(worst, gap);
        }
        const n = answer.length;
        if (n < maxTokens) {
            if (ignoreEos) return {ok: false, compared: n, worst, why: `the answer ends after ${n} tokens where ${maxTokens} were asked for past any end token`};
            const probs = at(n);
            const [top, pTop] = most(probs);
            const [, pEnd] = most(probs, eog);
            const gap = nats(pTop, pEnd);
            if (!(gap <= tieNats)) {
                return {ok: false, compared: n, worst, why: `the answer ends after ${n} tokens where the reference goes on with ${show(top)} (p=${pTop.toFixed(4)}; an end p=${pEnd.toFixed(4)}), ${gap.toFixed(2)} nats apart`};
            }
            worst = Math.max(worst, gap);
        }
        return {ok: true, compared: n, tie: worst > 0, worst};
    };
    return {judge, dispose: () => context.dispose()};
}
