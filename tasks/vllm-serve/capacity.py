"""Capacity (harness-owned), as llm-serve's capacity.mjs defines and measures it: the arrival rate
at which the server stops meeting its SLOs, from one ramp of rising load within one bench process.
The ramp replays the trace's request mix with the trace's own gaps (Poisson, or a log's bursts), or
evenly spaced where the workload's ramp says "arrivals": "even", at a rate that doubles every
`doubling_s` seconds from `from_rps` (the workload's "ramp"; by default an eighth of the trace's
rate and 4 s), until MISSES requests have missed or RAMP_S seconds have passed; its layout is
capacity.mjs's, request for request. Each request is met or missed (both SLOs, time running from
its scheduled arrival); a miss is counted as soon as it is certain and the request is served on,
so its work stays load. A logistic curve of the share met against log-rate, with a fixed slope, is
fitted to every request by likelihood; the capacity is the rate at which it gives SHARE."""

import math
import threading
import time

import client
import traffic

# The share of requests that capacity asks to meet both SLOs.
SHARE = 0.9
# Misses after which the ramp sends no more.
MISSES = 5
# The longest a ramp sends, in seconds.
RAMP_S = 30
# The most requests a ramp lays out.
MOST_REQUESTS = 1024
# The fitted curve's slope: capacity.mjs's (set by hand on llm-serve's chat ramps).
SLOPE = 8
# How often the watcher looks for requests that can no longer meet their SLOs, in seconds.
WATCH_S = 0.01


def pace(w):
    """The ramp's pace for workload `w`: (from, doubling, even), requests a second, seconds and
    whether its arrivals are evenly spaced (`ramp.arrivals` "even", or "trace", the default)."""
    r = w.get("ramp") or {}
    start = r.get("from_rps", w["rate_rps"] / 8)
    doubling = r.get("doubling_s", 4)
    arrivals = r.get("arrivals", "trace")
    if not (isinstance(start, (int, float)) and isinstance(doubling, (int, float)) and start > 0 and doubling > 0):
        raise SystemExit(f"{w['name']}: ramp.from_rps and ramp.doubling_s must be positive")
    if arrivals not in ("trace", "even"):
        raise SystemExit(f"{w['name']}: ramp.arrivals is \"trace\" or \"even\", not {arrivals!r}")
    return start, doubling, arrivals == "even"


def _gapped(reqs, rate):
    """Each request with its gap to the one before it in the trace (the first's: one mean gap)."""
    return [{**q, "gap": q["at"] - reqs[i - 1]["at"] if i else 1 / rate} for i, q in enumerate(reqs)]


def ramp_requests(w, path, seconds=RAMP_S):
    """The ramp's requests on the workload's path `path`: [{at, rate, messages, max_tokens}], every
    arrival before `seconds` (at most MOST_REQUESTS). The trace's gaps, in units of its mean gap,
    are laid on the ramp by its integral (with even arrivals each gap is one mean gap); a log's
    stretch starts where the path's seed says and wraps around."""
    start, doubling, even = pace(w)
    expected = min(MOST_REQUESTS, start * doubling / math.log(2) * (2 ** min(seconds / doubling, 1000) - 1))
    if "entries" in w:
        every = _gapped(traffic.requests({**w, "window_s": math.inf}, 0), w["rate_rps"])
        cut = traffic.Rng(w["seed"] + path).int(0, len(every) - 1)
        shapes = every[cut:] + every[:cut]
    else:
        window = w["window_s"]
        while True:
            window *= 2
            shapes = _gapped(traffic.requests({**w, "window_s": window}, path), w["rate_rps"])
            if len(shapes) > expected + 20 or window >= 1e6:
                break
    out, units, i = [], 0.0, 0
    while len(out) < MOST_REQUESTS:
        q = dict(shapes[i % len(shapes)])
        gap = q.pop("gap")
        if i > 0:
            units += 1 if even else gap * w["rate_rps"]
        at = doubling * math.log2(1 + units * math.log(2) / (start * doubling))
        if at >= seconds:
            break
        out.append({**q, "at": at, "rate": start * 2 ** (at / doubling)})
        i += 1
    return out


def run_ramp(port, w, reqs):
    """Replays the ramp `reqs` against the server on `port`; returns one record per request sent,
    {good, ttft, tpot, answer} besides its own fields, once every request sent is decided (those
    still being served go on until the server stops)."""
    # One lock over the records, and the condition the ramp's end waits on once all are decided.
    lock = threading.Condition()
    sent = []
    misses = [0]

    def decide(rec, good):
        """Under the lock: the request's verdict, once."""
        if rec["good"] is not None:
            return
        rec["good"] = good
        misses[0] += not good
        lock.notify_all()

    def serve(rec):
        def first(now):
            with lock:
                if rec["first"] is None:
                    rec["first"] = now

        a = client.ask(port, rec["messages"], rec["max_tokens"], ignore_eos=True, on_token=first)
        n = len(a["tokens"])
        with lock:
            rec["answer"] = a
            rec["ttft"] = (a["times"][0] - rec["sched"]) * 1000 if n else math.inf
            rec["tpot"] = (a["times"][-1] - a["times"][0]) * 1000 / (n - 1) if n > 1 else 0.0
            decide(rec, a["ok"] and n == rec["max_tokens"] and rec["ttft"] <= w["slo_ttft_ms"]
                   and rec["tpot"] <= w["slo_tpot_ms"])

    def late(rec, now):
        """Late is late whatever comes after: no first token by its SLO, or an answer that cannot
        end in time even if its remaining tokens came at once."""
        if rec["first"] is None:
            return (now - rec["sched"]) * 1000 > w["slo_ttft_ms"]
        return rec["max_tokens"] > 1 and (now - rec["first"]) * 1000 > w["slo_tpot_ms"] * (rec["max_tokens"] - 1)

    stop = threading.Event()

    def watch():
        while not stop.wait(WATCH_S):
            now = time.monotonic()
            with lock:
                for rec in sent:
                    if rec["good"] is None and late(rec, now):
                        decide(rec, False)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    start = time.monotonic() + 0.05
    for q in reqs:
        time.sleep(max(0.0, start + q["at"] - time.monotonic()))
        with lock:
            if misses[0] >= MISSES:
                break
            rec = {**q, "sched": start + q["at"], "first": None, "good": None, "ttft": None, "tpot": None,
                   "answer": None}
            sent.append(rec)
        threading.Thread(target=serve, args=(rec,), daemon=True).start()
    with lock:
        lock.wait_for(lambda: all(rec["good"] is not None for rec in sent))
        out = [dict(rec) for rec in sent]
    stop.set()
    return out


def fit_capacity(recs):
    """The capacity of the ramp's records (rate, good): the logistic P(met | rate) =
    1 / (1 + (rate / c50)^SLOPE) of greatest likelihood over c50 on a grid of 0.2% steps from half
    the lowest rate sent to twice the highest, and the rate where it gives SHARE; `censored` says
    which end of the grid the fit reached ("below", "above"), None otherwise."""
    if not recs:
        raise SystemExit("the ramp sent no request")
    xs = [(math.log(r["rate"]), r["good"]) for r in recs]
    lo = min(x for x, _ in xs) - math.log(2)
    hi = max(x for x, _ in xs) + math.log(2)
    best_ll, best_m = -math.inf, lo
    steps = int((hi - lo) / 0.002 + 1e-9)
    for k in range(steps + 1):
        m = lo + k * 0.002
        ll = 0.0
        for x, good in xs:
            # log P(met) = -log(1 + e^z), log P(missed) = z - log(1 + e^z), z = SLOPE (x - m).
            z = SLOPE * (x - m)
            soft = z if z > 30 else math.log1p(math.exp(z))
            ll += -soft if good else z - soft
        if ll > best_ll:
            best_ll, best_m = ll, m
    censored = "below" if best_m <= lo + 0.002 else "above" if best_m >= hi - 0.002 else None
    return {"capacity": math.exp(best_m - math.log(SHARE / (1 - SHARE)) / SLOPE), "c50": math.exp(best_m),
            "censored": censored}
