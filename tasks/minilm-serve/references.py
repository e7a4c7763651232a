"""Writes references.json (harness-owned): the fixed texts `check` sends through the server and
their embeddings, computed one text at a time in float64 with the exact erf. Run it again only
when the pinned model changes: `python references.py`."""

import json

import numpy as np

from model import MAX_TOKENS, Model, tokenizer

TEXTS = [
    "",
    "Grüße aus Zürich, naïve café — 東京の天気は？ 🚀",
    "How do I choose the batch size of an embedding server?",
    "polymorph keeps only the improvements it has verified.",
    " ".join(f"token{i} of a document longer than the model reads" for i in range(60)),
]


def main():
    tok = tokenizer()
    whole = tokenizer()
    whole.no_truncation()
    longest = len(whole.encode(TEXTS[-1]).ids)
    assert longest > MAX_TOKENS, f"the long text has only {longest} tokens"
    model = Model(np.float64, exact=True)
    out = [{"text": t, "embedding": [round(float(x), 9) for x in model.embed_ids([tok.encode(t).ids])[0]]}
           for t in TEXTS]
    with open("references.json", "w") as f:
        json.dump(out, f)
        f.write("\n")


if __name__ == "__main__":
    main()
