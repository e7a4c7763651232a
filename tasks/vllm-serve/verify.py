"""Answers checked against the reference configuration (harness-owned), by the rule llm-serve's
verify.mjs applies. Greedy decoding is not bit-for-bit the same across configurations: batching,
chunked prefill, an fp8 KV cache or CUDA graphs change the sums' order, and a quantized model has
near-ties, after which two correct servers go on from different text. So each answer is scored
whole, teacher-forced: the reference reads the prompt and the answer in one pass
(`prompt_logprobs`) and gives, at every answer position, its distribution of the next token given
the answer's own tokens before it; every token the server gave must be within TIE_NATS of the
reference's most likely token there. vLLM returns an answer's end token with its ids, so an
answer that stops is scored at its end too, and one that goes on where the reference would stop
is wrong at that token. The reason says at which token and by how many nats."""

import client

# How far an answer's token may be below the reference's most likely token, in nats: llm-serve's
# tolerance, measured there against correct configurations and a prompt-trimming scheduler (not
# yet measured on vLLM).
TIE_NATS = 1.0
# How many of the reference's most likely tokens it reports at each position (vLLM allows 20).
TOP = 5


def judge(ref, messages, tokens):
    """(ok, tie, widest, why) for `tokens`, a server's answer to `messages`, under the reference
    server `ref` (a client.Server): `tie` when some token was not the reference's most likely,
    `widest` the largest gap in nats."""
    if not tokens:
        return False, False, 0.0, "the answer has no tokens, not even an end token"
    rows = client.distributions(ref.port, client.tokenize(ref.port, messages), tokens, TOP)
    widest = 0.0
    for i, (got, row) in enumerate(zip(tokens, rows)):
        best = max(row, key=row.get)
        if got not in row:
            return False, False, widest, f"token {i}: {got!r}, which the reference did not score (its most likely: {best!r})"
        gap = row[best] - row[got]
        widest = max(widest, gap)
        if gap > TIE_NATS:
            return False, False, widest, (f"token {i}: {got!r} where the reference's most likely is {best!r},"
                                          f" {gap:.2f} nats apart")
    return True, widest > 0, widest, None
