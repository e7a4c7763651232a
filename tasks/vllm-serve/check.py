"""The correctness check (harness-owned): the weights are the ones the context names (sha256);
then fixed prompts (an empty one, non-ASCII, a long one, plain questions) go to this tree's
configuration of `vllm serve` among random fillers (drawn for each process from a fixed pool),
all at once, so that they are batched, chunked and cached as the configuration does it; every
token of each answer, fillers' included, must be within a near-tie of the reference
configuration's most likely token given the answer's own prefix (teacher-forced, verify.py): from
the reference's answers computed once per context (reference.py), and, for an answer that leaves
them at a near-tie, by the reference served after the candidate by its own `vllm serve`."""

import os
from concurrent.futures import ThreadPoolExecutor

import client
import jobs
import models
import verify

m = models.model()
sizes = m["check"]
sha = models.sha256_of(m["path"])
if sha != m["sha256"]:
    raise SystemExit(f"FAIL: {m['path']} has sha256 {sha}, not the {m['name']} the context names ({m['sha256']})")
todo = jobs.check_jobs(sizes, int(os.environ.get("POLYMORPH_SEED", "1")))


def run(server, job):
    return client.ask(server.port, job["messages"], job["max_tokens"], ignore_eos=job["ignore_eos"])


with client.Server(client.read_config(), m) as server, ThreadPoolExecutor(max_workers=len(todo)) as pool:
    answers = list(pool.map(lambda j: run(server, j), todo))
for job, a in zip(todo, answers):
    if not a["ok"]:
        raise SystemExit(f"FAIL: a prompt of {len(job['messages'][0]['content'])} characters got no answer: {a['error']}")

ties = 0
widest = 0.0
with verify.Referee(m) as ref:
    for job, a in zip(todo, answers):
        ok, tie, gap, why = ref.judge(job["messages"], a["tokens"], job["ignore_eos"])
        if not ok:
            raise SystemExit(f"FAIL: the prompt {job['messages'][0]['content'][:50]!r}: {why}")
        ties += tie
        widest = max(widest, gap)
    served = ref.served
print(f"ok: all {len(todo)} answers are the reference's, token by token ({ties} with a near-tie; the widest"
      f" {widest:.3f} nats of {verify.TIE_NATS}; {served} scored by the reference served here, the rest by its"
      f" answers kept for this context); {m['name']} sha256 {sha[:12]}")
