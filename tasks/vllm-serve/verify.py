"""Answers checked against the reference configuration (harness-owned), by the rule llm-serve's
verify.mjs applies. Greedy decoding is not bit-for-bit the same across configurations: batching,
chunked prefill, an fp8 KV cache or CUDA graphs change the sums' order, and a quantized model has
near-ties. So an answer must match the reference's greedy answer token for token up to its first
difference, and there the two tokens must be a near-tie in the reference's own log-probabilities
(within TIE_NATS); past it the answers continue from different text and are not compared. An
answer that differs where the reference was sure, ends where the reference goes on, or goes on
where the reference ends, is wrong, and the reason says where and by how much."""

# How far apart two tokens' log-probabilities may be and still count as a tie.
TIE_NATS = 0.5
# How many of the reference's most likely tokens it reports at each step.
TOP = 5


def judge(answer, reference):
    """(ok, tie, why) for `answer` (client.ask's result) against `reference` (the reference
    configuration's answer to the same request, asked with top=TOP)."""
    a, r = answer["tokens"], reference["tokens"]
    for i, (got, want) in enumerate(zip(a, r)):
        if got == want:
            continue
        top = reference["top"][i]
        p_ref = top.get(want, reference["logprobs"][i])
        if got not in top:
            return False, False, (f"token {i}: {got!r} where the reference says {want!r}, not among the"
                                  f" reference's {len(top)} most likely tokens")
        gap = p_ref - top[got]
        if gap <= TIE_NATS:
            return True, True, None
        return False, False, (f"token {i}: {got!r} where the reference says {want!r},"
                              f" {gap:.2f} nats apart")
    if len(a) < len(r):
        return False, False, f"the answer ends after {len(a)} tokens where the reference goes on with {r[len(a)]!r}"
    if len(a) > len(r):
        return False, False, f"the answer goes on with {a[len(r)]!r} after {len(r)} tokens, where the reference ends"
    return True, False, None
