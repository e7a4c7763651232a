"""Request logs as traffic (harness-owned), as llm-serve's log.mjs reads and replays them, draw
for draw: a workload may name an Azure LLM inference trace (CSV: TIMESTAMP, ContextTokens,
GeneratedTokens) or a Mooncake trace (JSON lines: timestamp in ms, input_length, output_length,
hash_ids of 512-token blocks) with its sha256; the trace is a stretch of it `window_s` long, where
the seed puts it, its arrivals stretched to `rate_rps` on average, its lengths times
`length_scale`, and prompts that share the words of the blocks whose hash ids repeat."""

import calendar
import hashlib
import json
import math
import os
import re

# The Mooncake trace's block: a hash id stands for this many tokens of the prompt.
BLOCK_TOKENS = 512
STAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(\.\d+)?$")


def _count(x, where, field):
    n = int(x) if isinstance(x, str) and re.fullmatch(r"[0-9]+", x.strip()) else x
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise SystemExit(f"{where}: {field} is {json.dumps(x)}, not a count")
    return n


def _lines(text):
    return [(line.strip(), k + 1) for k, line in enumerate(text.split("\n")) if line.strip()]


def _azure(text, where):
    lines = _lines(text)
    head = [c.strip() for c in (lines[0][0] if lines else "").split(",")]

    def col(name):
        if name not in head:
            raise SystemExit(f"{where}: no {name} column (an Azure LLM inference trace has TIMESTAMP,"
                             " ContextTokens, GeneratedTokens)")
        return head.index(name)

    ti, ci, gi = col("TIMESTAMP"), col("ContextTokens"), col("GeneratedTokens")
    rows, first = [], None
    for line, k in lines[1:]:
        f = [c.strip() for c in line.split(",")]
        m = STAMP.match(f[ti] if ti < len(f) else "")
        if not m:
            stamp = f[ti] if ti < len(f) else None
            raise SystemExit(f"{where}: line {k}: TIMESTAMP {json.dumps(stamp)} is not YYYY-MM-DD HH:MM:SS[.fraction]")
        secs = calendar.timegm(tuple(int(m.group(i)) for i in range(1, 7)))
        frac = float("0" + m.group(7)) if m.group(7) else 0.0
        first = first or (secs, frac)
        at = f"{where}: line {k}"
        rows.append({"line": k, "t": (secs - first[0]) + (frac - first[1]), "blocks": None,
                     "prompt": _count(f[ci] if ci < len(f) else None, at, "ContextTokens"),
                     "answer": _count(f[gi] if gi < len(f) else None, at, "GeneratedTokens")})
    return rows


def _mooncake(text, where):
    rows, first = [], None
    for line, k in _lines(text):
        at = f"{where}: line {k}"
        try:
            o = json.loads(line)
        except ValueError:
            raise SystemExit(f"{at}: not a JSON object") from None
        stamp = o.get("timestamp") if isinstance(o, dict) else None
        if isinstance(stamp, bool) or not isinstance(stamp, (int, float)) or stamp < 0:
            raise SystemExit(f"{at}: no timestamp (milliseconds, >= 0)")
        blocks = o.get("hash_ids")
        if blocks is not None and not (isinstance(blocks, list) and all(
                isinstance(h, int) and not isinstance(h, bool) and h >= 0 for h in blocks)):
            raise SystemExit(f"{at}: hash_ids is not a list of block ids (integers >= 0)")
        first = stamp if first is None else first
        rows.append({"line": k, "t": (stamp - first) / 1000, "blocks": blocks,
                     "prompt": _count(o.get("input_length"), at, "input_length"),
                     "answer": _count(o.get("output_length"), at, "output_length")})
    return rows


def read(workload_path, w):
    """The log `w` names, read and checked: [{line, t (seconds after its first request), prompt,
    answer (logged token counts), blocks (hash ids, or None)}]."""
    log = w["log"]
    if not isinstance(log, str) or os.path.isabs(log) or ".." in log.split("/"):
        raise SystemExit(f'{workload_path}: "log" is a path under the workload file\'s folder')
    where = f"{workload_path}: log {log}"
    if not isinstance(w.get("log_sha256"), str):
        raise SystemExit(f'{workload_path}: a workload with a log names its sha256 ("log_sha256"), so that a'
                         " changed log changes the workload")
    if "length_scale" in w and not w["length_scale"] > 0:
        raise SystemExit(f"{workload_path}: length_scale must be positive")
    with open(os.path.join(os.path.dirname(workload_path), log), "rb") as f:
        data = f.read()
    sha = hashlib.sha256(data).hexdigest()
    if sha != w["log_sha256"]:
        raise SystemExit(f"{where}: its sha256 is {sha} where the workload names {w['log_sha256']}: a changed log"
                         " needs its new hash in the workload file, whose hash keys the context")
    text = data.decode("utf-8")
    if log.endswith(".csv"):
        rows = _azure(text, where)
    elif log.endswith(".jsonl"):
        rows = _mooncake(text, where)
    else:
        raise SystemExit(f"{where}: a log is .csv (the Azure LLM inference trace's columns) or .jsonl (the"
                         " Mooncake trace's)")
    if len(rows) < 2:
        raise SystemExit(f"{where}: fewer than two requests")
    for before, row in zip(rows, rows[1:]):
        if row["t"] < before["t"]:
            raise SystemExit(f"{where}: line {row['line']} arrives before the line above it")
    if not rows[-1]["t"] > 0:
        raise SystemExit(f"{where}: every request arrives at once, so there is no rate to scale")
    return rows


def requests(w, rng):
    """The workload's trace from its log: [{at, messages, max_tokens}], drawn with `rng`
    (traffic.py's Rng class)."""
    rows = w["entries"]
    logged = rows[-1]["t"]
    stretch = (len(rows) - 1) / logged / w["rate_rps"]
    span = logged * stretch
    r = rng(w["seed"])
    offset = r.next() * (span - w["window_s"]) if span > w["window_s"] else 0
    scale = w.get("length_scale", 1)

    def sized(n, bounds):
        x = max(1, math.floor(n * scale + 0.5))
        return min(bounds[1], max(bounds[0], x)) if bounds else x

    block_words = sized(BLOCK_TOKENS, None)
    out = []
    for row in rows:
        at = row["t"] * stretch - offset
        if at < 0 or at >= w["window_s"]:
            continue
        words = sized(row["prompt"], w.get("prompt_words"))
        ask = "Summarise these notes in plain words" if r.next() < 0.5 else "Continue this list and explain it"
        parts, left = [], words
        for h in row["blocks"] or []:
            if left <= 0:
                break
            n = min(left, block_words)
            parts.append(rng(h).words(n))
            left -= n
        if left > 0:
            parts.append(r.words(left))
        out.append({"at": at, "max_tokens": sized(row["answer"], w.get("answer_tokens")),
                    "messages": [{"role": "user", "content": " ".join(parts) + f"\n\n{ask}."}]})
    if not out:
        raise SystemExit(f"{w['name']}: the {w['window_s']} s of its log that seed {w['seed']} picks hold no request:"
                         " widen window_s or pick another seed")
    return out
