// The load generator (harness-owned): replays a ramp of rising load through the workload's
// request mix against this tree's server and prints its capacity, the metric: the arrival rate
// at which 90% of requests meet both SLOs (time to first token, mean time per output token after
// the first), from a logistic fit over every request of the ramp (capacity.mjs). A request
// refused, failed or cut short is a miss, so shedding load never pays by itself; time runs from a
// request's scheduled arrival, so a server that falls behind is charged for the wait.
// Two answers, chosen by POLYMORPH_SEED, are then checked against the reference configuration,
// and the bound on the capacity this ramp can show on this machine is stated (bound.mjs), the
// task's limit.
import {startServer, ask} from "./client.mjs";
import {chatPrompt, llamaCpp, loadModel, modelFile} from "./engine.mjs";
import {load, pathOf, rng} from "./traffic.mjs";
import {referee} from "./verify.mjs";
import {modelCost, probe, rampBound, rates} from "./bound.mjs";
import {fitCapacity, MOST_REQUESTS, pace, RAMP_S, rampRequests, runRamp, SHARE} from "./capacity.mjs";

const VERIFIED = 2;
const w = load(process.env.POLYMORPH_WORKLOAD ?? new URL("./workloads/chat.json", import.meta.url).pathname);
// The ramp laid on as far as the bound needs; the bench sends its first RAMP_S seconds.
const far = rampRequests(w, pathOf(w, process.env.POLYMORPH_ROUND_SEED), Infinity);
const ramp = far.filter((q) => q.at < RAMP_S);
// The machine is probed before the server starts, with nothing else of the bench's running.
const file = modelFile();
const cost = await modelCost(await llamaCpp(), file.path);
const machine = probe(cost.stepBytes);
const server = await startServer();
await ask(server.port, [{role: "user", content: "Hello"}], 4);
const sent = await runRamp(server.port, w, ramp);
server.stop();

const fit = fitCapacity(sent);
const met = sent.filter((s) => s.good);
const p90 = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    const v = s[Math.min(s.length - 1, Math.floor(0.9 * s.length))];
    return Number.isFinite(v) ? v : null;
};
const answered = sent.filter((s) => s.answer?.ok && s.answer.tokens.length === s.maxTokens);

const r = rng(Number(process.env.POLYMORPH_SEED ?? 1));
let checked = 0;
const engine = await loadModel(file);
if (answered.length) {
    // How many of a verified answer's first tokens are compared: the reference's time is not
    // free, and it grows with the model (models.json's `check`).
    const verifiedTokens = engine.file.check.bench_tokens;
    const ref = await referee(engine);
    for (let k = 0; k < VERIFIED; k++) {
        const s = answered[r.int(0, answered.length - 1)];
        const prompt = engine.model.tokenize(chatPrompt(s.messages), true);
        const n = Math.min(verifiedTokens, s.answer.tokens.length);
        const v = await ref.judge(prompt, s.answer.tokens.slice(0, n), {ignoreEos: true, maxTokens: n});
        if (!v.ok) {
            console.error(`the ramp's request at ${s.at.toFixed(2)} s: its answer is not the reference's: ${v.why}`);
            process.exit(1);
        }
        checked++;
    }
}
// The machine's bound: the limit no configuration can honestly pass (task.toml's [metric] limit),
// on this ramp's requests, laid on past the time the bench sends for, as far as the machine could
// keep up; and the rates behind it.
const prompts = far.map((q) => engine.model.tokenize(chatPrompt(q.messages), true));
const keptUp = rampBound(w, far, prompts, cost, machine);
// Where the machine could keep up with all MOST_REQUESTS requests, the bound is the fit's own
// ceiling: it places the curve at most twice the highest rate sent.
const limit = Number.isFinite(keptUp) ? keptUp : 2 * far.at(-1).rate;
const machineRates = rates(cost, machine);
const line = (metric, value, extra = {}) =>
    console.log(JSON.stringify({metric, case: w.name, value, ...extra}));
console.log(JSON.stringify({metric: "capacity_bound", value: limit}));
for (const k of ["decode_tps", "batch_decode_tps", "prefill_tps"]) {
    if (Number.isFinite(machineRates[k])) line(`${k}_bound`, machineRates[k]);
}
line("probe_read_gbps", machine.read_gbps);
if (machine.int8_gmacs) line("probe_int8_gmacs", machine.int8_gmacs);
// "verified": how many of the answers served in the ramp were compared with the reference.
line("capacity", fit.capacity, {verified: checked});
line("met", met.length / sent.length);
line("ttft_p90_ms", p90(sent.map((s) => s.ttft ?? Infinity)));
line("tpot_p90_ms", p90(answered.map((s) => s.tpot)));
const {from, doubling, even} = pace(w);
const top = sent.at(-1).rate;
const ceiling = ` (the fit's ceiling: the machine keeps up with ${MOST_REQUESTS} requests)`;
const edge = {below: ` (every request missed from the start: lower the workload's ramp.from_rps below ${from})`,
    above: " (every request met: the capacity is above the ramp's top rate)"}[fit.censored] ?? "";
console.log(`${w.name}: a ramp${even ? " of evenly spaced arrivals" : ""} from ${from.toFixed(3)}/s doubling every ${doubling} s sent ${sent.length} requests ` +
    `up to ${top.toFixed(2)}/s; ${met.length} met ${w.slo_ttft_ms} ms to the first token and ${w.slo_tpot_ms} ms a token; ` +
    `capacity at ${SHARE * 100}%: ${fit.capacity.toFixed(3)}/s${edge}; the bound on this ramp: ` +
    `${limit.toFixed(2)}/s${Number.isFinite(keptUp) ? "" : ceiling} ` +
    `(${machine.threads} cores, ${machine.read_gbps.toFixed(1)} GB/s, ` +
    `${machine.int8_gmacs ? `${machine.int8_gmacs.toFixed(0)} G int8 MAC/s` : "no arithmetic bound"})`);
process.exit(0);
