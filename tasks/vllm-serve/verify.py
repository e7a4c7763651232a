"""Answers checked against the reference configuration (harness-owned), by the rule llm-serve's
verify.mjs applies. Greedy decoding is not bit-for-bit the same across configurations: batching,
chunked prefill, an fp8 KV cache or CUDA graphs change the sums' order, and a quantized model has
near-ties, after which two correct servers go on from different text. So each answer is scored
whole, teacher-forced: at every answer position, the reference's distribution of the next token
given the answer's own tokens before it; every token the server gave must be within TIE_NATS of
the reference's most likely token there. vLLM returns an answer's end token with its ids, so an
answer that stops is scored at its end too, and one that goes on where the reference would stop
is wrong at that token. The reason says at which token and by how many nats.

The reference's own greedy answers to the check's prompts and to a sample of the ramps' requests
are computed once per context (reference.py, kept by polymorph and shown read-only at
$POLYMORPH_REFERENCE): while an answer follows the reference's own, those distributions are the
teacher-forced ones. Only an answer that leaves it at a near-tie (or at a token the stored
distribution does not hold) is scored by a reference served for it (`prompt_logprobs`, one pass),
started at the first such answer of a process."""

import json
import os

import client
import jobs

# How far an answer's token may be below the reference's most likely token, in nats: llm-serve's
# tolerance, measured there against correct configurations and a prompt-trimming scheduler (not
# yet measured on vLLM).
TIE_NATS = 1.0
# How many of the reference's most likely tokens it reports at each position (vLLM allows 20).
TOP = 5
# The file reference.py writes under $POLYMORPH_REFERENCE.
ANSWERS = "answers.json"


def score(tokens, rows, path=None):
    """(ok, tie, widest, why) for `tokens` under the reference's distributions `rows` ({token id:
    logprob} a position): `tie` when some token was not the reference's most likely, `widest` the
    largest gap in nats. With `path`, the reference's own greedy answer over whose positions
    `rows` were taken: None where the answer leaves it at a near-tie, outlasts it, or gives a
    token the row does not hold but might be near: what follows needs the reference served."""
    if not tokens:
        return False, False, 0.0, "the answer has no tokens, not even an end token"
    widest = 0.0
    for i, got in enumerate(tokens):
        if path is not None and i >= len(path):
            return None
        row = rows[i]
        best = max(row, key=row.get)
        if got not in row:
            if path is not None and min(row.values()) >= row[best] - TIE_NATS:
                return None
            below = f"below its {len(row)} most likely, the least {row[best] - min(row.values()):.2f} nats under"
            return False, False, widest, (f"token {i}: {got!r}, {below} the most likely {best!r}"
                                          if path is not None else
                                          f"token {i}: {got!r}, which the reference did not score (its most likely: {best!r})")
        gap = row[best] - row[got]
        widest = max(widest, gap)
        if gap > TIE_NATS:
            return False, False, widest, (f"token {i}: {got!r} where the reference's most likely is {best!r},"
                                          f" {gap:.2f} nats apart")
        if path is not None and got != path[i]:
            return None
    return True, widest > 0, widest, None


class Referee:
    """Scores answers: from the stored reference where an answer follows it, else under the
    reference configuration served by its own `vllm serve` (started once, at the first answer
    that needs it; stopped on leaving). `served` counts the answers scored that way."""

    def __init__(self, model):
        self.model = model
        self.stored = {}
        self.live = None
        self.served = 0
        where = os.environ.get("POLYMORPH_REFERENCE")
        if where:
            with open(os.path.join(where, ANSWERS), encoding="utf-8") as f:
                for entry in json.load(f)["answers"]:
                    rows = [{int(t): lp for t, lp in row.items()} for row in entry["rows"]]
                    self.stored[jobs.key(entry["messages"], entry["ignore_eos"])] = (entry["tokens"], rows)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        if self.live is not None:
            self.live.stop()

    def judge(self, messages, tokens, ignore_eos=False):
        """(ok, tie, widest, why) for `tokens`, a server's answer to `messages`."""
        if not tokens:
            return score(tokens, [])
        kept = self.stored.get(jobs.key(messages, ignore_eos))
        if kept is not None:
            path, rows = kept
            verdict = score(tokens, rows, path)
            if verdict is not None:
                return verdict
        if self.live is None:
            self.live = client.Server(client.REFERENCE, self.model)
        self.served += 1
        port = self.live.port
        return score(tokens, client.distributions(port, client.tokenize(port, messages), tokens, TOP))
