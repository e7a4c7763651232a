// The load generator (harness-owned): replays the workload's trace open-loop against this tree's
// server and prints goodput, the metric: requests per second that met both SLOs (time to first
// token, mean time per output token after the first), at the load offered. A request refused,
// failed, cut short or unfinished when the window and its SLOs are over is a miss, so shedding
// load never pays by itself. Time runs from a request's scheduled arrival, so a server that falls
// behind is charged for the wait. Goodput counts half a request more than met the SLOs, as
// minilm-serve does: a configuration that meets none still has a ratio to another.
// Two answers, chosen by POLYMORPH_SEED, are then checked against the reference configuration,
// and the bound on this trace's goodput on this machine is stated (bound.mjs), the task's limit.
import {ask, startServer} from "./client.mjs";
import {chatPrompt, llamaCpp, loadModel, modelFile} from "./engine.mjs";
import {load, pathOf, requests, rng} from "./traffic.mjs";
import {referee} from "./verify.mjs";
import {bounds, modelCost, probe} from "./bound.mjs";

const VERIFIED = 2;
const w = load(process.env.POLYMORPH_WORKLOAD ?? new URL("./workloads/chat.json", import.meta.url).pathname);
const reqs = requests(w, pathOf(w, process.env.POLYMORPH_ROUND_SEED));
// The machine is probed before the server starts, with nothing else of the bench's running.
const file = modelFile();
const cost = await modelCost(await llamaCpp(), file.path);
const machine = probe(cost.stepBytes);
const server = await startServer();
await ask(server.port, [{role: "user", content: "Hello"}], 4);

const abort = new AbortController();
const start = performance.now() + 50;
const longest = Math.max(...reqs.map((q) => q.maxTokens));
const deadline = w.window_s * 1000 + w.slo_ttft_ms + longest * w.slo_tpot_ms;
const timer = setTimeout(() => abort.abort(), start - performance.now() + deadline);
const done = await Promise.all(reqs.map((q) => new Promise((resolve) => {
    setTimeout(() => ask(server.port, q.messages, q.maxTokens, {ignoreEos: true, signal: abort.signal}).then(resolve),
        Math.max(0, start + q.at * 1000 - performance.now()));
})));
clearTimeout(timer);
server.stop();

const scored = done.map((a, i) => {
    const n = a.tokens.length;
    const complete = a.ok && n === reqs[i].maxTokens;
    const ttft = n > 0 ? a.times[0] - (start + reqs[i].at * 1000) : Infinity;
    const tpot = n > 1 ? (a.times[n - 1] - a.times[0]) / (n - 1) : 0;
    return {complete, ttft, tpot, good: complete && ttft <= w.slo_ttft_ms && tpot <= w.slo_tpot_ms};
});
const good = scored.filter((s) => s.good).length;
const p90 = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    const v = s[Math.min(s.length - 1, Math.floor(0.9 * s.length))];
    return Number.isFinite(v) ? v : null;
};
const finished = scored.filter((s) => s.complete);

const answered = done.map((a, i) => [a, i]).filter(([a, i]) => scored[i].complete);
const r = rng(Number(process.env.POLYMORPH_SEED ?? 1));
let checked = 0;
const engine = await loadModel(file);
if (answered.length) {
    // How many of a verified answer's first tokens are compared: the reference's time is not
    // free, and it grows with the model (models.json's `check`).
    const verifiedTokens = engine.file.check.bench_tokens;
    const ref = await referee(engine);
    for (let k = 0; k < VERIFIED; k++) {
        const [a, i] = answered[r.int(0, answered.length - 1)];
        const prompt = engine.model.tokenize(chatPrompt(reqs[i].messages), true);
        const n = Math.min(verifiedTokens, a.tokens.length);
        const v = await ref.judge(prompt, a.tokens.slice(0, n), {ignoreEos: true, maxTokens: n});
        if (!v.ok) {
            console.error(`request ${i}: its answer is not the reference's: ${v.why}`);
            process.exit(1);
        }
        checked++;
    }
}
// The machine's bound: the limit no configuration can honestly pass (task.toml's [metric] limit),
// and the rates and capacity behind it.
const prompts = reqs.map((q) => engine.model.tokenize(chatPrompt(q.messages), true));
const bound = bounds(w, prompts, reqs.map((q) => q.maxTokens), cost, machine);
const line = (metric, value, extra = {}) =>
    console.log(JSON.stringify({metric, case: w.name, value, ...extra}));
console.log(JSON.stringify({metric: "goodput_bound", value: bound.goodput}));
for (const k of ["capacity_rps", "decode_tps", "batch_decode_tps", "prefill_tps"]) {
    if (Number.isFinite(bound[k])) line(`${k}_bound`, bound[k]);
}
line("probe_read_gbps", machine.read_gbps);
if (machine.int8_gmacs) line("probe_int8_gmacs", machine.int8_gmacs);
// "verified": how many of the answers served in the timed window were compared with the reference.
line("goodput", (good + 0.5) / w.window_s, {verified: checked});
line("ttft_p90_ms", p90(scored.map((s) => s.ttft)));
line("tpot_p90_ms", p90(finished.map((s) => s.tpot)));
line("finished", finished.length / reqs.length);
console.log(`${w.name}: ${reqs.length} requests at ${w.rate_rps}/s for ${w.window_s} s, ${good} within ` +
    `${w.slo_ttft_ms} ms to the first token and ${w.slo_tpot_ms} ms a token, ${finished.length} finished; ` +
    `the machine's bound: ${bound.met} (${machine.threads} cores, ${machine.read_gbps.toFixed(1)} GB/s, ` +
    `${machine.int8_gmacs ? `${machine.int8_gmacs.toFixed(0)} G int8 MAC/s` : "no arithmetic bound"})`);
process.exit(0);
