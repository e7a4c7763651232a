"""The correctness check (harness-owned): the fixed texts of references.json (the empty string,
non-ASCII, one longer than the model reads) go through the server with this tree's configuration,
in one burst among random fillers so that they are batched, padded and reordered; each answer
must have cosine >= 0.9999 to its stored reference. A few fillers are recomputed here too."""

import asyncio
import json
import os
import random
import sys

import traffic
from client import Connection, Server, cosine
from model import Model, tokenizer

MIN_COSINE = 0.9999
FILLERS = 40


async def ask(texts):
    async with Server() as srv:
        conn = await Connection.open(srv.port)
        got = {}
        reader = asyncio.ensure_future(conn.read(got.__setitem__))
        for i, t in enumerate(texts):
            conn.send(i, t)
        for _ in range(600):
            if len(got) == len(texts):
                break
            await asyncio.sleep(0.1)
        reader.cancel()
        return got


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "references.json")) as f:
        refs = json.load(f)
    rng = random.Random(int(os.environ.get("POLYMORPH_SEED", "1")))
    words = traffic.vocabulary(tokenizer())
    fillers = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 300))) for _ in range(FILLERS)]
    texts = fillers + [r["text"] for r in refs]
    rng.shuffle(texts)
    got = asyncio.run(ask(texts))
    missing = [i for i in range(len(texts)) if i not in got]
    if missing:
        sys.exit(f"FAIL: {len(missing)} of {len(texts)} requests got no answer")
    worst = 1.0
    for r in refs:
        i = texts.index(r["text"])
        c = cosine(got[i], r["embedding"])
        worst = min(worst, c)
        if c < MIN_COSINE:
            sys.exit(f"FAIL: text {r['text'][:40]!r}: cosine {c:.6f} to its reference (< {MIN_COSINE})")
    model, tok = Model(), tokenizer()
    for t in rng.sample(fillers, 3):
        i = texts.index(t)
        c = cosine(got[i], model.embed_ids([tok.encode(t).ids])[0])
        worst = min(worst, c)
        if c < MIN_COSINE:
            sys.exit(f"FAIL: a filler of {len(t.split())} words: cosine {c:.6f} (< {MIN_COSINE})")
    print(f"ok: {len(refs)} reference texts and 3 fillers among {len(texts)} requests, worst cosine {worst:.7f}")


if __name__ == "__main__":
    main()
