"""Traffic traces (harness-owned), as llm-serve's traffic.mjs draws them: a workload file names
the arrival rate, the window, the prompt and answer lengths and the two SLOs (time to first
token, time per output token); the trace is drawn from its seed with the same generator, so every
bench process of a context replays the same open-loop Poisson arrivals and the same prompts; with
`paths`, from one of that many seeds from `seed` on, which the bench's round picks (both sides of a
pair replay the same one). Or the workload names a request log (log.py) and the trace is a stretch
of it, as llm-serve draws it."""

import json
import math

import log

FIELDS = ("name", "rate_rps", "window_s", "prompt_words", "answer_tokens", "slo_ttft_ms",
          "slo_tpot_ms", "seed")

# Common English words, mostly one token each: a prompt of n words is about n tokens.
WORDS = """the of and to in is was for on that with as by at from his her this had not are but
which have one were all their they been has new more two when who other after also into first
time can only its over most some could would them these than such may then about year city
world part made state between many where under three during area house school water story long
people same country under began called river since small family town power early before large
north south east west common found known among while light order point group music work place
line field round game film book market night death money road table paper black white green
stone field heart voice space earth speed metal glass train plant ocean storm cloud rain winter
summer garden island valley forest bridge castle village season number letter method system
model engine server memory kernel token cache batch queue thread signal window answer prompt""".split()

MASK = 0xFFFFFFFF


def _imul(a, b):
    return (a * b) & MASK


class Rng:
    """mulberry32, bit for bit as traffic.mjs computes it: the same seed, the same draws."""

    def __init__(self, seed):
        self.a = seed & MASK

    def next(self):
        self.a = (self.a + 0x6D2B79F5) & MASK
        t = self.a
        t = _imul(t ^ (t >> 15), t | 1)
        t ^= (t + _imul(t ^ (t >> 7), t | 61)) & MASK
        return ((t ^ (t >> 14)) & MASK) / 4294967296

    def int(self, lo, hi):
        return lo + math.floor(self.next() * (hi - lo + 1))

    def exp(self, rate):
        return -math.log(1 - self.next()) / rate

    def words(self, n):
        return " ".join(WORDS[math.floor(self.next() * len(WORDS))] for _ in range(n))


# The most arrival paths a workload may name.
MAX_PATHS = 64


def load(path):
    """Reads and checks a workload file."""
    with open(path, encoding="utf-8") as f:
        w = json.load(f)
    # A log gives each request's lengths; the ranges are then optional bounds on them.
    needed = [k for k in FIELDS if "log" not in w or k not in ("prompt_words", "answer_tokens")]
    missing = [k for k in needed if k not in w]
    if missing:
        raise SystemExit(f"{path}: the workload lacks {', '.join(missing)}")

    def span(r):
        return (isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) for x in r)
                and 1 <= r[0] <= r[1])

    if not all(span(w[k]) for k in ("prompt_words", "answer_tokens") if k in w or "log" not in w):
        raise SystemExit(f"{path}: prompt_words and answer_tokens are [min, max] with 1 <= min <= max")
    if not all(w[k] > 0 for k in ("rate_rps", "window_s", "slo_ttft_ms", "slo_tpot_ms")):
        raise SystemExit(f"{path}: rate_rps, window_s and both SLOs must be positive")
    paths = w.get("paths", 1)
    if not (isinstance(paths, int) and not isinstance(paths, bool) and 1 <= paths <= MAX_PATHS):
        raise SystemExit(f"{path}: paths is a whole number from 1 to {MAX_PATHS}")
    if "log" in w:
        w["entries"] = log.read(path, w)
        # Every path's stretch of the log must hold a request, not just the one drawn first.
        for p in range(paths):
            requests(w, p)
    return w


def path_of(w, round_seed):
    """Which of the workload's paths a bench process replays: its round's seed
    (POLYMORPH_ROUND_SEED, shared by both sides of a pair) modulo `paths`; 0 without either."""
    return int(round_seed or "0") % w.get("paths", 1)


def requests(w, path=0):
    """[{at (seconds after the start), messages, max_tokens}] for the workload's window, on its
    path `path` (drawn from seed `seed + path`)."""
    if "entries" in w:
        return log.requests({**w, "seed": w["seed"] + path}, Rng)
    r = Rng(w["seed"] + path)
    out = []
    t = r.exp(w["rate_rps"])
    while t < w["window_s"]:
        words = r.int(*w["prompt_words"])
        ask = "Summarise these notes in plain words" if r.next() < 0.5 else "Continue this list and explain it"
        out.append({"at": t, "max_tokens": r.int(*w["answer_tokens"]),
                    "messages": [{"role": "user", "content": f"{ask}: {r.words(words)}"}]})
        t += r.exp(w["rate_rps"])
    return out
