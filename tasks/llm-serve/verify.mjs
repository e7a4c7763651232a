// Answers checked against the reference configuration (harness-owned). Greedy decoding is not
// bit-for-bit the same across configurations: batching several sequences, flash attention or a
// quantized KV cache change the sums' order, and a 4-bit model has near-ties. So an answer must
// match the reference's greedy answer token for token up to its first difference, and that
// difference must be a near-tie in the reference's own probabilities (the two tokens within
// TIE_NATS); past it the two answers continue from different text and are not compared. An
// answer that differs where the reference was sure, ends where the reference goes on, or goes on
// where the reference ends, is wrong, and the reason says where and by how much.
import {createContext, REFERENCE} from "./engine.mjs";

/// How far apart two tokens' log-probabilities may be and still count as a tie.
export const TIE_NATS = 0.5;

/// A checker holding one reference-configuration context.
export async function referee(engine) {
    const context = await createContext(engine, REFERENCE);
    const seq = context.getSequence();
    const show = (t) => JSON.stringify(engine.model.detokenize([t]));
    /// {ok, compared, tie, why} for `answer` (token ids) to `prompt` (token ids).
    const judge = async (prompt, answer, {ignoreEos, maxTokens}) => {
        await seq.clearHistory();
        let i = 0;
        for await (const o of seq.evaluateWithMetadata(prompt, {probabilities: true}, {temperature: 0, yieldEogToken: true})) {
            const eos = engine.model.isEogToken(o.token);
            if (i === answer.length) {
                if (i === maxTokens || (eos && !ignoreEos)) return {ok: true, compared: i, tie: false};
                return {ok: false, compared: i, why: `the answer ends after ${i} tokens where the reference goes on with ${show(o.token)} (p=${o.probabilities.get(o.token).toFixed(4)})`};
            }
            if (answer[i] !== o.token) {
                const pRef = o.probabilities.get(o.token) ?? 0;
                const pGot = o.probabilities.get(answer[i]) ?? 0;
                const gap = Math.log(pRef) - Math.log(pGot);
                if (gap <= TIE_NATS) return {ok: true, compared: i, tie: true};
                return {ok: false, compared: i, why: `token ${i}: ${show(answer[i])} (p=${pGot.toFixed(4)}) where the reference says ${eos ? "end" : show(o.token)} (p=${pRef.toFixed(4)}), ${gap.toFixed(2)} nats apart`};
            }
            i += 1;
        }
        // The reference ended (an end token it was told to pass): nothing further to compare.
        return ignoreEos ? {ok: true, compared: i, tie: false} : {ok: false, compared: i, why: "the reference stopped early"};
    };
    return {judge, dispose: () => context.dispose()};
}
