"""The client side (harness-owned): starts vLLM's OpenAI-compatible server (`vllm serve`, from the
PATH) with a configuration's flags, waits until it is healthy, sends it streamed chat requests
that return each token's id (`return_token_ids`, vLLM 0.10.2 or later; no log-probabilities, so
that vLLM treats them as it treats a user's: it does not speculate on a request that asks for
them), asks the reference for its distributions over a given answer, and stops a server with
every process it started."""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

# The longest prompt and answer a trace may hold, in tokens; fixed, so that every configuration
# serves the same requests.
MAX_MODEL_LEN = 4096
# The first vLLM release that reads GGUF only through the separate vllm-gguf-plugin package.
GGUF_PLUGIN_FROM = (0, 24)
# How long a server may take to load the weights, profile memory and capture CUDA graphs.
STARTUP_S = 600
# The configuration answers are checked against: one sequence at a time, chunked prefill on with
# vLLM's default step size (recent vLLM warns that turning it off may give incorrect outputs), no
# prefix cache, no CUDA graphs, the model's own KV-cache type, no speculation.
REFERENCE = {
    "max_num_seqs": 1,
    "max_num_batched_tokens": 0,
    "chunked_prefill": True,
    "kv_cache_dtype": "auto",
    "ngram_tokens": 0,
    "prefix_caching": False,
    "cuda_graphs": False,
}
KEYS = tuple(REFERENCE)


def flags(config):
    """`vllm serve` flags for config.json's fields; 0 means vLLM's own default."""
    unknown = sorted(set(config) - set(KEYS))
    absent = [k for k in KEYS if k not in config]
    if unknown or absent:
        raise SystemExit(f"config.json: unknown {unknown}, missing {absent}; its fields are {', '.join(KEYS)}")
    out = []
    if config["max_num_seqs"]:
        out += ["--max-num-seqs", str(config["max_num_seqs"])]
    if config["max_num_batched_tokens"]:
        out += ["--max-num-batched-tokens", str(config["max_num_batched_tokens"])]
    out.append("--enable-chunked-prefill" if config["chunked_prefill"] else "--no-enable-chunked-prefill")
    out += ["--kv-cache-dtype", config["kv_cache_dtype"]]
    if config["ngram_tokens"]:
        spec = {"method": "ngram", "num_speculative_tokens": config["ngram_tokens"],
                "prompt_lookup_min": 2, "prompt_lookup_max": 4}
        out += ["--speculative-config", json.dumps(spec)]
    out.append("--enable-prefix-caching" if config["prefix_caching"] else "--no-enable-prefix-caching")
    if not config["cuda_graphs"]:
        out.append("--enforce-eager")
    return out


def gguf_hint(path):
    """What to try when a vLLM that reads GGUF only through its plugin (0.24.0 and later) would not
    start on a GGUF file; empty otherwise."""
    if not path.endswith(".gguf"):
        return ""
    try:
        out = subprocess.run(["vllm", "--version"], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    version = (out.strip().splitlines() or [""])[-1].split("+")[0]
    release = tuple(int(p) if p.isdigit() else 0 for p in (version.split(".") + ["0", "0"])[:2])
    if release < GGUF_PLUGIN_FROM:
        return ""
    return (f" (vLLM {version} reads GGUF files only through the vllm-gguf-plugin package: install it beside vLLM,"
            f" or use vLLM 0.10.2 to 0.23)")


def read_config(path="config.json"):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A running `vllm serve`, used as a context: leaving it ends its whole process group."""

    def __init__(self, config, model):
        """`model` is models.model()'s: its file, and a tokenizer directory where it names one."""
        self.port = _free_port()
        tokenizer = ["--tokenizer", model["tokenizer"]] if model.get("tokenizer") else []
        argv = ["vllm", "serve", model["path"], *tokenizer, "--host", "127.0.0.1", "--port", str(self.port),
                "--served-model-name", "local", "--max-model-len", str(MAX_MODEL_LEN), "--seed", "0",
                "--generation-config", "vllm", *flags(config)]
        # Nothing is downloaded at run time: the model's configuration comes from the GGUF file,
        # and so does the tokenizer unless models.json names a local one.
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
        try:
            self.proc = subprocess.Popen(argv, stdout=sys.stderr, stderr=sys.stderr, env=env,
                                         start_new_session=True)
        except FileNotFoundError:
            raise SystemExit("vllm is not on the PATH") from None
        until = time.monotonic() + STARTUP_S
        while not self._healthy():
            code = self.proc.poll()
            if code is not None:
                self.stop()   # what it started may outlive it
                raise SystemExit(f"vllm serve exited ({code}) before it was healthy: {' '.join(argv)}"
                                 f"{gguf_hint(model['path'])}")
            if time.monotonic() > until:
                self.stop()
                raise SystemExit(f"vllm serve was not healthy after {STARTUP_S} s")
            time.sleep(0.5)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.stop()

    def _healthy(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
        try:
            conn.request("GET", "/health")
            return conn.getresponse().status == 200
        except OSError:
            return False
        finally:
            conn.close()

    def stop(self):
        for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue


def _post(port, path, body):
    """A JSON request and its JSON answer; an HTTP error is raised with its text."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=STARTUP_S)
    try:
        conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        res = conn.getresponse()
        text = res.read().decode(errors="replace")
        if res.status != 200:
            raise SystemExit(f"{path}: HTTP {res.status}: {text[:300]}")
        return json.loads(text)
    finally:
        conn.close()


def tokenize(port, messages):
    """The prompt's token ids as the server's chat template and tokenizer make them."""
    return _post(port, "/tokenize", {"model": "local", "messages": messages, "add_generation_prompt": True})["tokens"]


def distributions(port, prompt, answer, top):
    """The server's distribution at each of `answer`'s positions given the prompt and the answer's
    own tokens before it (teacher-forced, one pass: `prompt_logprobs`): one {token id: logprob}
    a position, holding its `top` most likely tokens and the answer's own token."""
    got = _post(port, "/v1/completions", {"model": "local", "prompt": [*prompt, *answer], "max_tokens": 1,
                                          "temperature": 0, "prompt_logprobs": top})
    rows = got["choices"][0]["prompt_logprobs"][len(prompt):]
    if len(rows) != len(answer) or any(r is None for r in rows):
        raise SystemExit(f"/v1/completions gave {len(rows)} distributions for an answer of {len(answer)} tokens")
    return [{int(t): e["logprob"] for t, e in r.items()} for r in rows]


def ask(port, messages, max_tokens, ignore_eos=False, deadline=None, on_token=None):
    """One streamed request: {ok, tokens (ids, an end token included as vLLM returns it), times
    (time.monotonic() per token), finish, error}. Past `deadline` (a time.monotonic() value) the
    connection is closed and the answer is what came by then. `on_token(time)` is called as each
    chunk of tokens arrives."""
    got = {"ok": False, "tokens": [], "times": [], "finish": None, "error": None}
    body = {"model": "local", "messages": messages, "max_tokens": max_tokens, "temperature": 0,
            "seed": 0, "stream": True, "ignore_eos": ignore_eos, "return_token_ids": True}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=STARTUP_S)
    try:
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"content-type": "application/json"})
        # The response reads from this socket; the connection lets go of it once it has the
        # response's headers.
        sock = conn.sock
        if deadline is not None:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
        res = conn.getresponse()
        if res.status != 200:
            got["error"] = f"HTTP {res.status}: {res.read()[:200].decode(errors='replace')}"
            return got
        while True:
            if deadline is not None:
                sock.settimeout(max(0.001, deadline - time.monotonic()))
            line = res.readline()
            if not line:
                got["error"] = "the stream ended without [DONE]"
                return got
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                got["ok"] = got["finish"] is not None
                return got
            event = json.loads(data)
            if "error" in event or event.get("object") == "error":
                got["error"] = str(event.get("error", event.get("message")))
                return got
            now = time.monotonic()
            for choice in event.get("choices") or []:
                ids = choice.get("token_ids")
                if ids is None and (choice.get("delta") or {}).get("content"):
                    got["error"] = ("the server streams text without token ids: tasks/vllm-serve needs vLLM 0.10.2 or"
                                    " later (return_token_ids)")
                    return got
                got["tokens"] += ids or []
                got["times"] += [now] * len(ids or [])
                if ids and on_token:
                    on_token(now)
                got["finish"] = choice.get("finish_reason") or got["finish"]
    except (OSError, ValueError, KeyError, http.client.HTTPException) as e:
        got["error"] = f"{type(e).__name__}: {e}"
        return got
    finally:
        conn.close()
