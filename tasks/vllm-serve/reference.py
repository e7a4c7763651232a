"""The reference (harness-owned; task.toml's [commands] reference): run by polymorph once per
context on the task as given, it serves the reference configuration and writes, to
$POLYMORPH_REFERENCE/answers.json, its greedy answer to every prompt the check may send and to
each arrival path's sampled ramp requests (jobs.py), with its distribution at each of the
answer's positions (teacher-forced: `prompt_logprobs`). polymorph keeps the directory outside
every tree and shows it read-only to each check and bench process of the context."""

import json
import os

import client
import jobs
import models
import traffic
import verify

HERE = os.path.dirname(os.path.abspath(__file__))

where = os.environ.get("POLYMORPH_REFERENCE")
if not where:
    raise SystemExit("POLYMORPH_REFERENCE names no directory to write the reference's answers to")
m = models.model()
w = traffic.load(os.environ.get("POLYMORPH_WORKLOAD") or os.path.join(HERE, "workloads", "chat.json"))
fixed, fillers = jobs.check_pool(m["check"])
checked = fixed + fillers
todo = checked + jobs.bench_pool(w, m["check"]["bench_tokens"])
answers = []
with client.Server(client.REFERENCE, m) as ref:
    for job in todo:
        a = client.ask(ref.port, job["messages"], job["max_tokens"], ignore_eos=job["ignore_eos"])
        if not a["ok"] or not a["tokens"]:
            raise SystemExit(f"the reference did not answer {job['messages'][0]['content'][:50]!r}: {a['error']}")
        rows = client.distributions(ref.port, client.tokenize(ref.port, job["messages"]), a["tokens"], verify.TOP)
        answers.append({**job, "tokens": a["tokens"], "rows": [{str(t): lp for t, lp in r.items()} for r in rows]})
with open(os.path.join(where, verify.ANSWERS), "w", encoding="utf-8") as f:
    json.dump({"model": m["name"], "workload": w["name"], "answers": answers}, f)
print(f"the reference's answers to {len(answers)} prompts ({len(checked)} the check's,"
      f" the rest sampled from the ramps), {sum(len(a['tokens']) for a in answers)} tokens; {m['name']}")
