"""What the check and the bench compare with the reference (harness-owned): the check's prompts,
drawn for each process from a fixed pool, and a fixed sample of each arrival path's ramp
requests. reference.py answers every one of them once per context under the reference
configuration, so that check.py and bench.py need not serve the reference themselves."""

import capacity
import traffic

PROMPTS = [
    "",
    "What is the capital of France?",
    "Explain what a hash table is, in three sentences.",
    "Übersetze ins Englische: Grüße aus Köln, 東京 und São Paulo.",
    "Write a haiku about the sea.",
]
# The seed of the check's pool of fillers, and how many times a process's fillers it holds.
POOL_SEED = 1
POOL_TIMES = 2
# Each arrival path's ramp requests kept with the reference's answers: a fixed draw of this many
# among its first EARLY (those a ramp sends at its lowest rates, which every server answers whole).
SAMPLED = 8
EARLY = 32


def _job(prompt, ignore_eos, max_tokens):
    return {"messages": [{"role": "user", "content": prompt}], "ignore_eos": ignore_eos, "max_tokens": max_tokens}


def check_pool(sizes):
    """Every prompt the check may send, for models.json's `check` sizes, as (fixed, fillers): the
    fixed prompts and a long one, and POOL_TIMES as many seeded random fillers as a process sends
    (every other one asked to go on past its end)."""
    n = sizes["answer_tokens"]
    fixed = PROMPTS + ["Read these notes and name the three words that appear most often: "
                       + traffic.Rng(7).words(sizes["long_prompt_words"])]
    r = traffic.Rng(POOL_SEED)
    fillers = [_job(r.words(r.int(5, 400)), i % 2 == 1, n) for i in range(POOL_TIMES * sizes["fillers"])]
    return [_job(p, False, n) for p in fixed], fillers


def check_jobs(sizes, seed):
    """One check process's prompts, drawn by its seed: the fixed ones and `fillers` of the pool's
    fillers, in a shuffled order."""
    fixed, fillers = check_pool(sizes)
    r = traffic.Rng(seed)
    order = sorted(range(len(fillers)), key=lambda _: r.next())
    jobs = fixed + [fillers[i] for i in order[:sizes["fillers"]]]
    order = sorted(range(len(jobs)), key=lambda _: r.next())
    return [jobs[i] for i in order]


def bench_sample(w, path):
    """The indices of path `path`'s ramp requests kept with the reference's answers."""
    n = min(EARLY, len(capacity.ramp_requests(w, path)))
    r = traffic.Rng(w["seed"] + 1000 + path)
    return sorted(sorted(range(n), key=lambda _: r.next())[:SAMPLED])


def bench_pool(w, tokens):
    """Every path's sampled ramp requests, each answered up to `tokens` (models.json's
    `bench_tokens`) or its own most, whichever is fewer, and past the end token as the ramp asks
    (capacity.py)."""
    out = []
    for path in range(w.get("paths", 1)):
        reqs = capacity.ramp_requests(w, path)
        out += [{"messages": reqs[i]["messages"], "ignore_eos": True,
                 "max_tokens": min(tokens, reqs[i]["max_tokens"])} for i in bench_sample(w, path)]
    return out


def key(messages, ignore_eos):
    """The key a stored answer is found by."""
    return repr((messages, bool(ignore_eos)))
