"""The batching policy (editable): which waiting requests a free worker takes, and when.

`choose` is called whenever a worker is free and requests wait. It returns the requests to run
as one batch now, or a time (in `time.monotonic()` seconds) to call it again. `cfg` is
config.json; a request has `.arrival` (monotonic seconds) and `.tokens` (its length)."""


def choose(pending, cfg, now):
    oldest = pending[0]
    full = len(pending) >= cfg["max_batch"]
    due = oldest.arrival + cfg["max_wait_ms"] / 1000.0
    if not full and now < due:
        return due
    if cfg["order"] == "fifo":
        return pending[: cfg["max_batch"]]
    # length-aware: the oldest request and those closest to it in length, so a batch pads little
    rest = sorted(pending[1:], key=lambda r: abs(r.tokens - oldest.tokens))
    return [oldest] + rest[: cfg["max_batch"] - 1]
