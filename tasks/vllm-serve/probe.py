"""The GPU's probe (harness-owned), run by the Python that runs `vllm` (bound.py): the most bytes a
second the GPU's memory was read at, and the most multiply-accumulates a second its matrix
units reached, each the best of several timed runs, so that the bound they give is an upper one.
Reading: a sum over a buffer of at least the bytes one decode step reads (argv[1]) and at least
eight times a large L2 cache, and a copy, counted as its reads and writes; arithmetic: a 16-bit
float matrix product and, where PyTorch has it, an 8-bit integer one. Prints one JSON line,
{device, read_gbps, gmacs}, or {error} where there is no CUDA device."""

import json
import sys

# The least buffer read, in bytes: eight times the 50 MB L2 cache of an H100 or H200.
LEAST_BYTES = 400 * 1000 * 1000
# The side of the square matrices multiplied.
SIDE = 8192
# Timed runs of each kernel, after one untimed.
RUNS = 10


def best_seconds(torch, kernel):
    """The least time of RUNS runs of `kernel`, in seconds, by CUDA events."""
    kernel()
    best = float("inf")
    for _ in range(RUNS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        kernel()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / 1000)
    return best


def main():
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"error": f"PyTorch is not importable by {sys.executable}: {e}"}))
        return
    if not torch.cuda.is_available():
        print(json.dumps({"error": "PyTorch sees no CUDA device"}))
        return
    step_bytes = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    n = max(step_bytes, LEAST_BYTES) // 2 * 2
    src = torch.ones(n // 2, dtype=torch.float16, device="cuda")
    dst = torch.empty_like(src)
    read = n / best_seconds(torch, lambda: src.sum(dtype=torch.float32))
    copy = 2 * n / best_seconds(torch, lambda: dst.copy_(src))
    del src, dst
    a = torch.ones(SIDE, SIDE, dtype=torch.float16, device="cuda")
    macs = SIDE**3 / best_seconds(torch, lambda: a @ a)
    if hasattr(torch, "_int_mm"):
        b = torch.ones(SIDE, SIDE, dtype=torch.int8, device="cuda")
        try:
            macs = max(macs, SIDE**3 / best_seconds(torch, lambda: torch._int_mm(b, b)))
        except RuntimeError:
            pass
    print(json.dumps({"device": torch.cuda.get_device_name(), "read_gbps": max(read, copy) / 1e9,
                      "gmacs": macs / 1e9}))


if __name__ == "__main__":
    main()
