"""The load generator (harness-owned), as llm-serve's bench.mjs: replays a ramp of rising load
through the workload's request mix against this tree's configuration of `vllm serve` and prints
its capacity, the metric: the arrival rate at which 90% of requests meet both SLOs (time to first
token, mean time per output token after the first), from a logistic fit over every request of the
ramp (capacity.py). A request refused, failed or cut short is a miss, so shedding load never pays
by itself; time runs from a request's scheduled arrival, so a server that falls behind is charged
for the wait. The ramp's requests ask for token ids, not log-probabilities. Two answers, chosen
by POLYMORPH_SEED among those whose reference answers were computed for this context
(reference.py), are then scored under the reference configuration; only an answer that leaves the
reference's own at a near-tie needs it served, after the ramp, by its own `vllm serve`. The bound on the capacity this ramp can show on this GPU is then stated
(bound.py), the task's limit, where the GPU could be probed; the reason where not."""

import json
import math
import os

import bound
import capacity
import client
import jobs
import models
import traffic
import verify

VERIFIED = 2
HERE = os.path.dirname(os.path.abspath(__file__))

w = traffic.load(os.environ.get("POLYMORPH_WORKLOAD") or os.path.join(HERE, "workloads", "chat.json"))
path = traffic.path_of(w, os.environ.get("POLYMORPH_ROUND_SEED"))
ramp = capacity.ramp_requests(w, path)
m = models.model()
# The GPU is probed before the server starts, with nothing else of the bench's running.
cost = bound.model_cost(m["path"])
machine = bound.probe(cost["step_bytes"])
with client.Server(client.read_config(), m) as server:
    client.ask(server.port, [{"role": "user", "content": "Hello"}], 4)
    sent = capacity.run_ramp(server.port, w, ramp)
    # The ramp laid on as far as the bound needs (the bench sends its first RAMP_S seconds), its
    # prompts as this server's tokenizer makes them.
    far = capacity.ramp_requests(w, path, math.inf) if "error" not in machine else []
    prompts = [client.tokenize(server.port, q["messages"]) for q in far]

fit = capacity.fit_capacity(sent)
met = [s for s in sent if s["good"]]
# Each with its place in the ramp (the ramp sends its requests in order).
answered = [{**s, "index": i} for i, s in enumerate(sent)
            if s["answer"] and s["answer"]["ok"] and len(s["answer"]["tokens"]) == s["max_tokens"]]


def p90(xs):
    s = sorted(xs)
    if not s:
        return None
    v = s[min(len(s) - 1, int(0.9 * len(s)))]
    return v if v != float("inf") else None


checked = 0
if answered:
    # Drawn among the ramp's requests whose reference answers are kept (jobs.bench_sample), where
    # any of them was answered whole; else among all, scored by the reference served here.
    kept = set(jobs.bench_sample(w, path))
    pool = [s for s in answered if s["index"] in kept] or answered
    r = traffic.Rng(int(os.environ.get("POLYMORPH_SEED", "1")))
    picked = [pool[r.int(0, len(pool) - 1)] for _ in range(VERIFIED)]
    with verify.Referee(m) as ref:
        for s in picked:
            # The answer's first tokens, scored under the reference (teacher-forced).
            n = min(m["check"]["bench_tokens"], len(s["answer"]["tokens"]))
            ok, _, _, why = ref.judge(s["messages"], s["answer"]["tokens"][:n], ignore_eos=True)
            if not ok:
                raise SystemExit(f"the ramp's request at {s['at']:.2f} s: its answer is not the reference's: {why}")
            checked += 1

def line(metric, value, **extra):
    print(json.dumps({"metric": metric, "case": w["name"], "value": value, **extra}))


if "error" in machine:
    stated = f"no bound: {machine['error']}"
else:
    # The machine's bound, the limit no configuration can honestly pass (task.toml's [metric]
    # limit): where the GPU could keep up with all the ramp's requests, the fit's own ceiling, which
    # places the curve at most twice the highest rate sent.
    kept_up = bound.ramp_bound(w, far, prompts, cost, machine)
    limit = kept_up if kept_up != math.inf else 2 * far[-1]["rate"]
    print(json.dumps({"metric": "capacity_bound", "value": limit}))
    for k, v in bound.rates(cost, machine).items():
        if v != math.inf:
            line(f"{k}_bound", v)
    line("probe_read_gbps", machine["read_gbps"])
    line("probe_gmacs", machine["gmacs"])
    ceiling = "" if kept_up != math.inf else f" (the fit's ceiling: the GPU keeps up with {len(far)} requests)"
    stated = (f"the bound on this ramp: {limit:.2f}/s{ceiling} ({machine['device']}, "
              f"{machine['read_gbps']:.0f} GB/s, {machine['gmacs']:.0f} G MAC/s)")
# "verified": how many of the answers served in the ramp were compared with the reference.
line("capacity", fit["capacity"], verified=checked)
line("met", len(met) / len(sent))
line("ttft_p90_ms", p90([s["ttft"] if s["ttft"] is not None else float("inf") for s in sent]))
line("tpot_p90_ms", p90([s["tpot"] for s in answered]))
start, doubling, even = capacity.pace(w)
edge = {"below": f" (every request missed from the start: lower the workload's ramp.from_rps below {start})",
        "above": " (every request met: the capacity is above the ramp's top rate)"}.get(fit["censored"], "")
print(f"{w['name']}: a ramp{' of evenly spaced arrivals' if even else ''} from {start:.3f}/s doubling every {doubling} s sent {len(sent)} requests up to "
      f"{sent[-1]['rate']:.2f}/s; {len(met)} met {w['slo_ttft_ms']} ms to the first token and {w['slo_tpot_ms']} ms "
      f"a token; capacity at {capacity.SHARE * 100:.0f}%: {fit['capacity']:.3f}/s{edge}; {stated}")
