"""The load generator (harness-owned), as llm-serve's bench.mjs: replays a ramp of rising load
through the workload's request mix against this tree's configuration of `vllm serve` and prints
its capacity, the metric: the arrival rate at which 90% of requests meet both SLOs (time to first
token, mean time per output token after the first), from a logistic fit over every request of the
ramp (capacity.py). A request refused, failed or cut short is a miss, so shedding load never pays
by itself; time runs from a request's scheduled arrival, so a server that falls behind is charged
for the wait. The ramp's requests ask for token ids, not log-probabilities. Two answers, chosen
by POLYMORPH_SEED, are then scored under the reference configuration, served after the ramp by its
own `vllm serve`. No bound is stated: the GPU's probe is not written yet."""

import json
import os

import capacity
import client
import models
import traffic
import verify

VERIFIED = 2
HERE = os.path.dirname(os.path.abspath(__file__))

w = traffic.load(os.environ.get("POLYMORPH_WORKLOAD") or os.path.join(HERE, "workloads", "chat.json"))
ramp = capacity.ramp_requests(w, traffic.path_of(w, os.environ.get("POLYMORPH_ROUND_SEED")))
m = models.model()
with client.Server(client.read_config(), m) as server:
    client.ask(server.port, [{"role": "user", "content": "Hello"}], 4)
    sent = capacity.run_ramp(server.port, w, ramp)

fit = capacity.fit_capacity(sent)
met = [s for s in sent if s["good"]]
answered = [s for s in sent if s["answer"] and s["answer"]["ok"] and len(s["answer"]["tokens"]) == s["max_tokens"]]


def p90(xs):
    s = sorted(xs)
    if not s:
        return None
    v = s[min(len(s) - 1, int(0.9 * len(s)))]
    return v if v != float("inf") else None


checked = 0
if answered:
    r = traffic.Rng(int(os.environ.get("POLYMORPH_SEED", "1")))
    picked = [answered[r.int(0, len(answered) - 1)] for _ in range(VERIFIED)]
    with client.Server(client.REFERENCE, m) as ref:
        for s in picked:
            # The answer's first tokens, scored under the reference (teacher-forced).
            n = min(m["check"]["bench_tokens"], len(s["answer"]["tokens"]))
            ok, _, _, why = verify.judge(ref, s["messages"], s["answer"]["tokens"][:n])
            if not ok:
                raise SystemExit(f"the ramp's request at {s['at']:.2f} s: its answer is not the reference's: {why}")
            checked += 1


def line(metric, value, **extra):
    print(json.dumps({"metric": metric, "case": w["name"], "value": value, **extra}))


# "verified": how many of the answers served in the ramp were compared with the reference.
line("capacity", fit["capacity"], verified=checked)
line("met", len(met) / len(sent))
line("ttft_p90_ms", p90([s["ttft"] if s["ttft"] is not None else float("inf") for s in sent]))
line("tpot_p90_ms", p90([s["tpot"] for s in answered]))
start, doubling = capacity.pace(w)
edge = {"below": f" (every request missed from the start: lower the workload's ramp.from_rps below {start})",
        "above": " (every request met: the capacity is above the ramp's top rate)"}.get(fit["censored"], "")
print(f"{w['name']}: a ramp from {start:.3f}/s doubling every {doubling} s sent {len(sent)} requests up to "
      f"{sent[-1]['rate']:.2f}/s; {len(met)} met {w['slo_ttft_ms']} ms to the first token and {w['slo_tpot_ms']} ms "
      f"a token; capacity at {capacity.SHARE * 100:.0f}%: {fit['capacity']:.3f}/s{edge}")
