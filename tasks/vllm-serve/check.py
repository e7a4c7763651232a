"""The correctness check (harness-owned): the weights are the ones the context names (sha256);
then fixed prompts (an empty one, non-ASCII, a long one, plain questions) go to this tree's
configuration of `vllm serve` among seeded random fillers, all at once, so that they are batched,
chunked and cached as the configuration does it; each answer must be the reference
configuration's greedy answer up to a near-tie (verify.py), and so must every filler's answer.
The reference is served after the candidate, by its own `vllm serve`."""

import os
from concurrent.futures import ThreadPoolExecutor

import client
import models
import traffic
import verify

m = models.model()
sizes = m["check"]
PROMPTS = [
    "",
    "What is the capital of France?",
    "Explain what a hash table is, in three sentences.",
    "Übersetze ins Englische: Grüße aus Köln, 東京 und São Paulo.",
    "Write a haiku about the sea.",
    "Read these notes and name the three words that appear most often: "
    + traffic.Rng(7).words(sizes["long_prompt_words"]),
]

sha = models.sha256_of(m["path"])
if sha != m["sha256"]:
    raise SystemExit(f"FAIL: {m['path']} has sha256 {sha}, not the {m['name']} the context names ({m['sha256']})")
r = traffic.Rng(int(os.environ.get("POLYMORPH_SEED", "1")))
jobs = [{"prompt": p, "ignore_eos": False} for p in PROMPTS]
jobs += [{"prompt": r.words(r.int(5, 400)), "ignore_eos": i % 2 == 1}
         for i in range(sizes["fillers"])]
order = sorted(range(len(jobs)), key=lambda _: r.next())
jobs = [jobs[i] for i in order]


def run(server, job, top=0):
    return client.ask(server.port, [{"role": "user", "content": job["prompt"]}], sizes["answer_tokens"],
                      ignore_eos=job["ignore_eos"], top=top)


with client.Server(client.read_config(), m) as server, ThreadPoolExecutor(max_workers=len(jobs)) as pool:
    answers = list(pool.map(lambda j: run(server, j), jobs))
for job, a in zip(jobs, answers):
    if not a["ok"]:
        raise SystemExit(f"FAIL: a prompt of {len(job['prompt'])} characters got no answer: {a['error']}")

checked = list(zip(jobs, answers))
with client.Server(client.REFERENCE, m) as ref:
    expected = [run(ref, j, top=verify.TOP) for j, _ in checked]
ties = 0
for (job, a), want in zip(checked, expected):
    if not want["ok"]:
        raise SystemExit(f"FAIL: the reference configuration did not answer: {want['error']}")
    ok, tie, why = verify.judge(a, want)
    if not ok:
        raise SystemExit(f"FAIL: the prompt {job['prompt'][:50]!r}: {why}")
    ties += tie
print(f"ok: all {len(jobs)} answers match the reference's greedy answers"
      f" ({ties} up to a near-tie); {m['name']} sha256 {sha[:12]}")
