"""The embedding server (harness-owned): reads config.json, starts its worker processes, and
answers newline-delimited JSON requests on 127.0.0.1 ({"id": n, "text": "..."} in,
{"id": n, "embedding": "<base64 float32>"} out), batching them by batching.py's policy.
Prints `ready PORT` once every worker has loaded the model and embedded a warm-up batch."""

import asyncio
import base64
import json
import multiprocessing as mp
import os
import sys
import time

import batching

KEYS = {"max_batch": int, "max_wait_ms": (int, float), "order": str, "workers": int, "threads": int}


def load_config(path):
    with open(path) as f:
        cfg = json.load(f)
    for k, t in KEYS.items():
        if not isinstance(cfg.get(k), t):
            raise SystemExit(f"error: {path}: {k} must be {t}, got {cfg.get(k)!r}")
    if cfg["max_batch"] < 1 or cfg["workers"] < 1 or cfg["threads"] < 1 or cfg["max_wait_ms"] < 0:
        raise SystemExit(f"error: {path}: max_batch, workers and threads must be >= 1, max_wait_ms >= 0")
    if cfg["order"] not in ("fifo", "length"):
        raise SystemExit(f"error: {path}: order must be \"fifo\" or \"length\", got {cfg['order']!r}")
    return cfg


def worker(conn, threads):
    # The BLAS reads its thread count when numpy loads, so it is set before the import.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    from model import Model
    model = Model()
    model.embed_ids([[101, 2000, 102]] * 4)
    conn.send("ready")
    while True:
        try:
            batch = conn.recv()
        except EOFError:
            return
        conn.send_bytes(model.embed_ids(batch).astype("float32").tobytes())


class Request:
    __slots__ = ("id", "ids", "tokens", "arrival", "writer")

    def __init__(self, rid, ids, writer):
        self.id, self.ids, self.tokens = rid, ids, len(ids)
        self.arrival, self.writer = time.monotonic(), writer


class Server:
    def __init__(self, cfg):
        from model import tokenizer
        self.cfg, self.tok = cfg, tokenizer()
        self.pending, self.idle, self.busy = [], [], {}
        self.loop = asyncio.get_running_loop()
        self.timer = None
        ctx = mp.get_context("spawn")
        self.workers = []
        for _ in range(cfg["workers"]):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=worker, args=(child, cfg["threads"]), daemon=True)
            p.start()
            self.workers.append((p, parent))

    async def start(self):
        for p, conn in self.workers:
            if await self.loop.run_in_executor(None, conn.recv) != "ready":
                raise SystemExit("a worker failed to start")
            self.loop.add_reader(conn.fileno(), self.finished, conn)
            self.idle.append(conn)

    def finished(self, conn):
        try:
            data = conn.recv_bytes()
        except EOFError:
            self.loop.remove_reader(conn.fileno())
            print("a worker died", file=sys.stderr)
            os._exit(1)
        batch = self.busy.pop(conn)
        width = len(data) // 4 // len(batch)
        for i, r in enumerate(batch):
            vec = base64.b64encode(data[i * width * 4:(i + 1) * width * 4]).decode()
            r.writer.write(b'{"id": %d, "embedding": "%s"}\n' % (r.id, vec.encode()))
        self.idle.append(conn)
        self.dispatch()

    def dispatch(self):
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        while self.idle and self.pending:
            got = batching.choose(self.pending, self.cfg, time.monotonic())
            if isinstance(got, (int, float)):
                self.timer = self.loop.call_at(got, self.dispatch)
                return
            if not got:
                raise SystemExit("batching.choose returned an empty batch")
            taken = {id(r) for r in got}
            self.pending = [r for r in self.pending if id(r) not in taken]
            conn = self.idle.pop()
            self.busy[conn] = got
            conn.send([r.ids for r in got])

    async def client(self, reader, writer):
        while line := await reader.readline():
            msg = json.loads(line)
            ids = self.tok.encode(msg["text"]).ids
            self.pending.append(Request(msg["id"], ids, writer))
            self.dispatch()
        writer.close()


async def main(config_path):
    srv = Server(load_config(config_path))
    await srv.start()
    server = await asyncio.start_server(srv.client, "127.0.0.1", 0, limit=1 << 22)
    print("ready", server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "config.json"))
