"""The machine's bound (harness-owned), as llm-serve's bound.mjs states it, for a GPU: from the
probe's two rates (probe.py: the GPU's memory read bandwidth and its tensor cores' multiply-
accumulates a second) and the model's weights (the bytes one decode step reads and the multiply-
accumulates a token costs, from the GGUF file's tensors), upper bounds on the decode and prefill
rates and on the capacity a ramp of the trace's requests can show. Every simplification leaves
out work or time, never adds any, so that no configuration can honestly pass it: attention, norms
and the KV cache's reads are not counted, a prompt's prefix shared with an earlier request's costs
nothing, batches are unbounded, and every decode step may accept the most n-gram drafts any
configuration asks for."""

import bisect
import json
import math
import os
import shutil
import struct
import subprocess

from capacity import SHARE

HERE = os.path.dirname(os.path.abspath(__file__))
# The most drafted tokens a decode step of any configuration may accept: task.toml's largest
# `ngram_tokens`.
MAX_DRAFT_TOKENS = 4
# Bytes and elements per block of ggml's weight types (ggml.h's enum ggml_type), as bound.mjs; a
# type not here counts no bytes, which only raises the bound.
GGML_TYPES = {
    0: (4, 1), 1: (2, 1), 2: (18, 32), 3: (20, 32), 6: (22, 32), 7: (24, 32), 8: (34, 32),
    9: (36, 32), 10: (84, 256), 11: (110, 256), 12: (144, 256), 13: (176, 256), 14: (210, 256),
    15: (292, 256), 30: (2, 1),
}
# The sizes of GGUF's fixed-size metadata value types; 8 is a string, 9 an array.
GGUF_SCALARS = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def gguf_tensors(path):
    """The tensors a GGUF file (version 2 or 3) lists: [(name, dims, ggml type)]."""
    with open(path, "rb") as f:
        def read(n):
            b = f.read(n)
            if len(b) != n:
                raise SystemExit(f"{path}: the GGUF file ends inside its header")
            return b

        def u32():
            return struct.unpack("<I", read(4))[0]

        def u64():
            return struct.unpack("<Q", read(8))[0]

        def string():
            return read(u64()).decode("utf-8", "replace")

        def skip(kind):
            if kind in GGUF_SCALARS:
                read(GGUF_SCALARS[kind])
            elif kind == 8:
                string()
            elif kind == 9:
                inner, count = u32(), u64()
                if inner in GGUF_SCALARS:
                    read(GGUF_SCALARS[inner] * count)
                else:
                    for _ in range(count):
                        skip(inner)
            else:
                raise SystemExit(f"{path}: unknown GGUF metadata type {kind}")

        if read(4) != b"GGUF":
            raise SystemExit(f"{path}: not a GGUF file")
        version = u32()
        if version not in (2, 3):
            raise SystemExit(f"{path}: GGUF version {version}; versions 2 and 3 are read")
        tensors, kvs = u64(), u64()
        for _ in range(kvs):
            string()
            skip(u32())
        out = []
        for _ in range(tensors):
            name = string()
            dims = [u64() for _ in range(u32())]
            kind = u32()
            u64()  # the tensor's offset in the data section
            out.append((name, dims, kind))
        return out


def model_cost(path):
    """What one token costs the model, as bound.mjs's modelCost: {step_bytes, block_macs,
    output_macs}: the bytes of the matrices a decode step multiplies by (the blocks' and the output
    projection's, the token embedding's when the output is tied to it), the multiply-accumulates of
    a token through the blocks, and of its logits."""
    tensors = gguf_tensors(path)
    if not tensors:
        raise SystemExit(f"{path}: the GGUF file lists no tensors")

    def elements(t):
        return math.prod(t[1])

    def size(t):
        per_block, per = GGML_TYPES.get(t[2], (0, 1))
        return elements(t) / per * per_block

    blocks = [t for t in tensors if t[0].startswith("blk.") and len(t[1]) == 2 and t[0].endswith(".weight")]
    named = {t[0]: t for t in tensors}
    output = named.get("output.weight") or named.get("token_embd.weight")
    return {
        "step_bytes": sum(size(t) for t in blocks) + (size(output) if output else 0),
        "block_macs": sum(elements(t) for t in blocks),
        "output_macs": elements(output) if output else 0,
    }


def probe(step_bytes):
    """The GPU's figures, {device, read_gbps, gmacs}, from probe.py run by the Python that runs
    `vllm` (which has PyTorch); or {error} saying why there are none."""
    vllm = shutil.which("vllm")
    if vllm is None:
        return {"error": "vllm is not on the PATH"}
    with open(vllm, "rb") as f:
        first = f.readline().decode("utf-8", "replace").strip()
    interpreter = first[2:].split() if first.startswith("#!") else []
    if not interpreter or not os.path.basename(interpreter[-1]).startswith("python"):
        return {"error": f"{vllm}'s first line names no Python to run the probe with: {first[:80]!r}"}
    cmd = interpreter + [os.path.join(HERE, "probe.py"), str(max(1, round(step_bytes)))]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"the probe did not run: {e}"}
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        return {"error": f"the probe failed ({out.returncode}): {out.stderr.strip()[-300:]}"}
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError:
        return {"error": f"the probe printed no figures: {lines[-1][:200]!r}"}


def uncached_tokens(prompts):
    """Tokens the prompt of each request must compute: those after its longest common prefix with
    an earlier request's prompt (a server may keep that prefix's cache), at least one. The longest
    prefix shared with any earlier prompt is shared with one of its two neighbours in their sorted
    order."""

    def common(a, b):
        k = 0
        while k < len(a) and k < len(b) and a[k] == b[k]:
            k += 1
        return k

    seen, out = [], []
    for p in map(tuple, prompts):
        at = bisect.bisect_left(seen, p)
        shared = max([common(p, seen[k]) for k in (at - 1, at) if 0 <= k < len(seen)], default=0)
        out.append(max(1, len(p) - shared))
        seen.insert(at, p)
    return out


def speeds(cost, machine):
    """Multiply-accumulates a second (infinite where the probe claims no arithmetic rate) and the
    seconds of one decode step's pass over the weights."""
    macs = machine["gmacs"] * 1e9 if machine.get("gmacs") else math.inf
    return macs, cost["step_bytes"] / (machine["read_gbps"] * 1e9)


def per_request(w, prompts, answers, cost, machine):
    """Each request's least time to its first token and per token after it on this machine:
    [(whether it could meet both SLOs alone, its multiply-accumulates)]."""
    macs_per_s, step_s = speeds(cost, machine)
    token_macs = cost["block_macs"] + cost["output_macs"]
    out = []
    for n, uncached in zip(answers, uncached_tokens(prompts)):
        ttft = max(step_s, (uncached * cost["block_macs"] + cost["output_macs"]) / macs_per_s)
        steps = math.ceil((n - 1) / (MAX_DRAFT_TOKENS + 1))
        tpot = max(steps * step_s, (n - 1) * token_macs / macs_per_s) / (n - 1) if n > 1 else 0
        feasible = ttft * 1000 <= w["slo_ttft_ms"] and tpot * 1000 <= w["slo_tpot_ms"]
        out.append((feasible, (uncached - 1 + n) * cost["block_macs"] + n * cost["output_macs"]))
    return out


def ramp_bound(w, ramp, prompts, cost, machine):
    """The bound on the capacity a ramp can measure, as bound.mjs's rampBound: the highest rate it
    reaches while the machine could still meet SHARE of the requests sent so far, each stretch of
    arrivals back by powers of two doing the work of the cheapest requests it must meet between
    its first arrival and the latest deadline. `ramp`: [{at, rate, max_tokens}] in arrival order,
    `prompts` their tokens. Infinite where the machine could meet every request the ramp sends."""
    macs_per_s, _ = speeds(cost, machine)
    each = per_request(w, prompts, [q["max_tokens"] for q in ramp], cost, machine)
    slack = (w["slo_ttft_ms"] + max(q["max_tokens"] for q in ramp) * w["slo_tpot_ms"]) / 1000
    feasible_so_far = 0
    for i, q in enumerate(ramp):
        before = ramp[i - 1]["rate"] if i else 0
        feasible_so_far += each[i][0]
        need = math.ceil(SHARE * (i + 1))
        if feasible_so_far < need:
            return before
        backs = []
        back = 1
        while back < i + 1:
            backs.append(back)
            back *= 2
        for back in backs + [i + 1]:
            j = i + 1 - back
            must = need - j
            if must <= 0:
                continue
            cheapest = sorted(m for ok, m in each[j:i + 1] if ok)
            work = sum(cheapest[:must])
            if len(cheapest) < must or work > macs_per_s * (q["at"] - ramp[j]["at"] + slack):
                return before
    return math.inf


def rates(cost, machine):
    """Upper bounds in tokens a second: one sequence's decode (with the most drafts), a batch's
    decode, and prefill; infinite where the probe claims no arithmetic rate."""
    macs_per_s, step_s = speeds(cost, machine)
    token_macs = cost["block_macs"] + cost["output_macs"]
    return {
        "decode_tps": min((MAX_DRAFT_TOKENS + 1) / step_s, macs_per_s / token_macs),
        "batch_decode_tps": macs_per_s / token_macs,
        "prefill_tps": macs_per_s / cost["block_macs"],
    }
