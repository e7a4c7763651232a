"""Traffic traces (harness-owned): a workload file names its arrival rate, window, length
distribution and latency SLO; the trace is drawn from its seed, so every bench process of a
context replays the same arrivals (open-loop, Poisson) and the same texts."""

import json
import random

from model import tokenizer

FIELDS = ("name", "rate_rps", "window_s", "min_tokens", "max_tokens", "slo_ms", "seed")


def load(path):
    with open(path) as f:
        w = json.load(f)
    missing = [k for k in FIELDS if k not in w]
    if missing:
        raise SystemExit(f"{path}: workload lacks {', '.join(missing)}")
    if not 0 < w["min_tokens"] <= w["max_tokens"] or w["rate_rps"] <= 0 or w["window_s"] <= 0:
        raise SystemExit(f"{path}: need 0 < min_tokens <= max_tokens, rate_rps > 0, window_s > 0")
    return w


def vocabulary(tok):
    """Whole lowercase words of the vocabulary: each is one token, so a text of n words is n
    tokens plus [CLS] and [SEP]."""
    vocab = tok.get_vocab()
    return sorted(w for w in vocab if w.isascii() and w.isalpha() and w.islower() and len(w) >= 3)


def requests(w):
    """[(arrival offset in seconds, text)] for the workload's window."""
    rng = random.Random(w["seed"])
    words = vocabulary(tokenizer())
    out, t = [], rng.expovariate(w["rate_rps"])
    while t < w["window_s"]:
        n = rng.randint(w["min_tokens"], w["max_tokens"]) - 2
        out.append((t, " ".join(rng.choice(words) for _ in range(max(n, 0)))))
        t += rng.expovariate(w["rate_rps"])
    return out
