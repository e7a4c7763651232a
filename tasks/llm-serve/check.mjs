// The correctness check (harness-owned): the weights are the ones the context names (sha256);
// then fixed prompts (an empty one, non-ASCII, a long one, plain questions) go to this tree's
// server among seeded random fillers, all at once, so that they are batched and queued as the
// configuration and the scheduler do it; every token of each answer, fillers' included, must be
// within a near-tie of the reference configuration's most likely token given the answer's own
// prefix (teacher-forced, verify.mjs).
import {ask, startServer} from "./client.mjs";
import {chatPrompt, loadModel, modelFile, sha256Of} from "./engine.mjs";
import {checkPrompts, referee} from "./verify.mjs";

// Sized to the model's speed (models.json's `check`), so that a larger model stays inside the
// task's timeout.
const file = modelFile();
const {answer_tokens: ANSWER_TOKENS, tie_nats: TIE_NATS} = file.check;

const sha = await sha256Of(file.path);
if (sha !== file.sha256) {
    console.error(`FAIL: ${file.path} has sha256 ${sha}, not the ${file.name} the context names (${file.sha256})`);
    process.exit(1);
}
const jobs = checkPrompts(file, Number(process.env.POLYMORPH_SEED ?? 1));

// A request the scheduler refuses (503: its queue is full) is sent again a little later: refusing
// is the scheduler's right under load, answering wrongly is not.
const REFUSED_FOR_MS = 60_000;
const answer = async (j) => {
    const until = performance.now() + REFUSED_FOR_MS;
    for (;;) {
        const a = await ask(server.port, [{role: "user", content: j.prompt}], ANSWER_TOKENS, {ignoreEos: j.ignoreEos});
        if (!a.error?.startsWith("HTTP 503") || performance.now() > until) return a;
        await new Promise((resolve) => setTimeout(resolve, 200));
    }
};
const server = await startServer();
const answers = await Promise.all(jobs.map(answer));
server.stop();
const failed = answers.findIndex((a) => !a.ok);
if (failed >= 0) {
    console.error(`FAIL: a prompt of ${jobs[failed].prompt.length} characters got no answer: ${answers[failed].error}`);
    process.exit(1);
}

const engine = await loadModel();
const ref = await referee(engine);
let ties = 0;
let worst = 0;
for (const [i, j] of jobs.entries()) {
    const prompt = engine.model.tokenize(chatPrompt([{role: "user", content: j.prompt}]), true);
    const v = await ref.judge(prompt, answers[i].tokens, {ignoreEos: j.ignoreEos, maxTokens: ANSWER_TOKENS});
    if (!v.ok) {
        console.error(`FAIL: the prompt ${JSON.stringify(j.prompt.slice(0, 50))}: ${v.why}`);
        process.exit(1);
    }
    ties += v.tie ? 1 : 0;
    worst = Math.max(worst, v.worst);
}
console.log(`ok: all ${jobs.length} answers are the reference's, token by token (${ties} with a near-tie; the widest ${worst.toFixed(3)} nats of ${TIE_NATS}); ${file.name} sha256 ${sha.slice(0, 12)}`);
