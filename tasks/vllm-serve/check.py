"""The correctness check (harness-owned): the weights are the ones the context names (sha256);
then fixed prompts (an empty one, non-ASCII, a long one, plain questions) go to this tree's
configuration of `vllm serve` among seeded random fillers, all at once, so that they are batched,
chunked and cached as the configuration does it; every token of each answer, fillers' included,
must be within a near-tie of the reference configuration's most likely token given the answer's
own prefix (teacher-forced, verify.py). The reference is served after the candidate, by its own
`vllm serve`."""

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


def run(server, job):
    return client.ask(server.port, [{"role": "user", "content": job["prompt"]}], sizes["answer_tokens"],
                      ignore_eos=job["ignore_eos"])


with client.Server(client.read_config(), m) as server, ThreadPoolExecutor(max_workers=len(jobs)) as pool:
    answers = list(pool.map(lambda j: run(server, j), jobs))
for job, a in zip(jobs, answers):
    if not a["ok"]:
        raise SystemExit(f"FAIL: a prompt of {len(job['prompt'])} characters got no answer: {a['error']}")

ties = 0
widest = 0.0
with client.Server(client.REFERENCE, m) as ref:
    for job, a in zip(jobs, answers):
        ok, tie, gap, why = verify.judge(ref, [{"role": "user", "content": job["prompt"]}], a["tokens"])
        if not ok:
            raise SystemExit(f"FAIL: the prompt {job['prompt'][:50]!r}: {why}")
        ties += tie
        widest = max(widest, gap)
print(f"ok: all {len(jobs)} answers are the reference's, token by token ({ties} with a near-tie; the widest"
      f" {widest:.3f} nats of {verify.TIE_NATS}); {m['name']} sha256 {sha[:12]}")
