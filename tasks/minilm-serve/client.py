"""Starting the server with a tree's configuration and talking to it (harness-owned)."""

import asyncio
import base64
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
START_TIMEOUT_S = 60


class Server:
    """The server as a child process; stopped (with its workers) on exit."""

    async def __aenter__(self):
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, os.path.join(HERE, "server.py"), os.path.join(HERE, "config.json"),
            stdout=subprocess.PIPE, start_new_session=True)
        try:
            line = await asyncio.wait_for(self.proc.stdout.readline(), START_TIMEOUT_S)
        except asyncio.TimeoutError:
            raise SystemExit(f"the server did not start within {START_TIMEOUT_S} s")
        if not line.startswith(b"ready "):
            raise SystemExit(f"the server did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    async def __aexit__(self, *exc):
        try:
            os.killpg(self.proc.pid, 9)
        except ProcessLookupError:
            pass
        await self.proc.wait()


class Connection:
    """One connection; `send` never waits for an answer, `answers` collects them by id."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.answers = {}

    @classmethod
    async def open(cls, port):
        r, w = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
        return cls(r, w)

    def send(self, rid, text):
        self.writer.write(json.dumps({"id": rid, "text": text}).encode() + b"\n")

    async def read(self, on_answer):
        while line := await self.reader.readline():
            msg = json.loads(line)
            vec = np.frombuffer(base64.b64decode(msg["embedding"]), dtype=np.float32)
            on_answer(msg["id"], vec)


def cosine(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))
