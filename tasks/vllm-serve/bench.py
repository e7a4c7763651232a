"""The load generator (harness-owned), as llm-serve's bench.mjs: replays the workload's trace
open-loop against this tree's configuration of `vllm serve` and prints goodput, the metric:
requests per second that met both SLOs (time to first token, mean time per output token after the
first), at the load offered. A request refused, failed, cut short or unfinished when the window
and its SLOs are over is a miss, so shedding load never pays by itself. Time runs from a
request's scheduled arrival, so a server that falls behind is charged for the wait. Goodput
counts half a request more than met the SLOs, so that a configuration that meets none still has
a ratio to another. The trace's requests ask for token ids, not log-probabilities. Two answers,
chosen by POLYMORPH_SEED, are then scored under the reference configuration, served after the
window by its own `vllm serve`."""

import json
import os
import threading
import time

import client
import models
import traffic
import verify

VERIFIED = 2
HERE = os.path.dirname(os.path.abspath(__file__))

w = traffic.load(os.environ.get("POLYMORPH_WORKLOAD") or os.path.join(HERE, "workloads", "chat.json"))
reqs = traffic.requests(w, traffic.path_of(w, os.environ.get("POLYMORPH_ROUND_SEED")))
if not reqs:
    raise SystemExit(f"{w['name']}: the trace draws no request in its {w['window_s']} s window")
m = models.model()
with client.Server(client.read_config(), m) as server:
    client.ask(server.port, [{"role": "user", "content": "Hello"}], 4)
    start = time.monotonic() + 0.05
    longest = max(q["max_tokens"] for q in reqs)
    deadline = start + w["window_s"] + (w["slo_ttft_ms"] + longest * w["slo_tpot_ms"]) / 1000
    done = [None] * len(reqs)

    def send(i, q):
        time.sleep(max(0.0, start + q["at"] - time.monotonic()))
        done[i] = client.ask(server.port, q["messages"], q["max_tokens"], ignore_eos=True, deadline=deadline)

    threads = [threading.Thread(target=send, args=(i, q)) for i, q in enumerate(reqs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def score(a, q):
    n = len(a["tokens"])
    complete = a["ok"] and n == q["max_tokens"]
    ttft = (a["times"][0] - (start + q["at"])) * 1000 if n else float("inf")
    tpot = (a["times"][-1] - a["times"][0]) * 1000 / (n - 1) if n > 1 else 0.0
    good = complete and ttft <= w["slo_ttft_ms"] and tpot <= w["slo_tpot_ms"]
    return {"complete": complete, "ttft": ttft, "tpot": tpot, "good": good}


scored = [score(a, q) for a, q in zip(done, reqs)]
good = sum(s["good"] for s in scored)
finished = [s for s in scored if s["complete"]]


def p90(xs):
    s = sorted(xs)
    if not s:
        return None
    v = s[min(len(s) - 1, int(0.9 * len(s)))]
    return v if v != float("inf") else None


answered = [i for i, s in enumerate(scored) if s["complete"]]
checked = 0
if answered:
    r = traffic.Rng(int(os.environ.get("POLYMORPH_SEED", "1")))
    picked = [answered[r.int(0, len(answered) - 1)] for _ in range(VERIFIED)]
    with client.Server(client.REFERENCE, m) as ref:
        for i in picked:
            # The answer's first tokens, scored under the reference (teacher-forced).
            n = min(m["check"]["bench_tokens"], len(done[i]["tokens"]))
            ok, _, _, why = verify.judge(ref, reqs[i]["messages"], done[i]["tokens"][:n])
            if not ok:
                raise SystemExit(f"request {i}: its answer is not the reference's: {why}")
            checked += 1


def line(metric, value, **extra):
    print(json.dumps({"metric": metric, "case": w["name"], "value": value, **extra}))


# "verified": how many of the answers served in the timed window were compared with the reference.
line("goodput", (good + 0.5) / w["window_s"], verified=checked)
line("ttft_p90_ms", p90([s["ttft"] for s in scored]))
line("tpot_p90_ms", p90([s["tpot"] for s in finished]))
line("finished", len(finished) / len(reqs))
print(f"{w['name']}: {len(reqs)} requests at {w['rate_rps']}/s for {w['window_s']} s, {good} within "
      f"{w['slo_ttft_ms']} ms to the first token and {w['slo_tpot_ms']} ms a token, {len(finished)} finished")
