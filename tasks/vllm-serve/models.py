"""The weights a context names (harness-owned): task.toml's `[context] model` reaches the commands
as POLYMORPH_MODEL, "<name> sha256:<64 hex digits>"; models.json maps the hash to the file (a path
under the task's Python environment's site-packages, where `polymorph setup` puts it, or an
absolute path to weights of your own), its size, the check's sizes, and optionally `tokenizer`:
a local directory with the model's Hugging Face tokenizer, which vLLM then uses instead of
converting the one in the GGUF file."""

import hashlib
import json
import os
import re
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = ("answer_tokens", "fillers", "long_prompt_words", "bench_tokens")


def model():
    """{name, path, sha256, bytes, check} of the model the context names; exits saying why not."""
    named = os.environ.get("POLYMORPH_MODEL", "")
    m = re.search(r"sha256:([0-9a-f]{64})", named)
    if not m:
        raise SystemExit(f"POLYMORPH_MODEL = {named!r}: expected \"<name> sha256:<64 hex digits>\""
                         " (task.toml [context] model)")
    sha = m.group(1)
    with open(os.path.join(HERE, "models.json"), encoding="utf-8") as f:
        known = json.load(f)["models"].get(sha)
    if known is None:
        raise SystemExit(f"the model sha256:{sha} is not in models.json")
    path = os.path.join(sysconfig.get_paths()["purelib"], known["file"])
    if not os.path.isfile(path):
        raise SystemExit(f"{known['name']}: {path} is missing: `polymorph setup` installs {known['wheel']}")
    size = os.path.getsize(path)
    if size != known["bytes"]:
        raise SystemExit(f"{path}: {size} bytes, where {known['name']} has {known['bytes']}")
    check = known.get("check", {})
    if not all(isinstance(check.get(k), int) and check[k] >= 0 for k in SIZES):
        raise SystemExit(f"models.json: {known['name']} needs \"check\": {{{', '.join(SIZES)}}}, whole numbers")
    tokenizer = known.get("tokenizer")
    if tokenizer is not None and not os.path.isdir(tokenizer):
        raise SystemExit(f"models.json: {known['name']}'s tokenizer {tokenizer} is not a directory")
    return {**known, "sha256": sha, "path": path}


def sha256_of(path):
    """The file's sha256, lower-case hex."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
