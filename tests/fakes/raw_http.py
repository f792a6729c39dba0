"""A raw HTTP/1.1 upstream on loopback whose answers are written byte for byte by the test: framing
(Content-Length, chunked, the connection's end), compression, split writes, stalls, garbage and
hang-ups exactly as a real server or a broken one sends them. For the lean client
(hub/backends/h1.py), which a well-behaved fake server would never corner.

`answer(request) -> list[bytes | float | None]`: each bytes item is written (and drained), a float
sleeps that long, None closes the connection. After the list the connection waits for the next
request. The list may be any iterable, a generator too: it is consumed as it is written, so an
answer can be made up as the client takes it (`written` counts the bytes drained so far). Runs in
its own thread (`start()`), or in the running loop (`await serve()`). `open_now` counts the
connections accepted and not yet ended, `closed_at` when each one ended (either side closing it)."""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .server import run_loop_until_stopped


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    connection: int  # which connection (1, 2, ...) carried it


Script = Callable[[Request], Iterable]

CHAT = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def chat_chunk(delta: dict, finish: str | None = None) -> bytes:
    c = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "m",
         "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(c).encode() + b"\n\n"


def sse(words: list[str]) -> bytes:
    return (chat_chunk({"role": "assistant", "content": ""})
            + b"".join(chat_chunk({"content": w}) for w in words)
            + chat_chunk({}, "stop") + b"data: [DONE]\n\n")


def encode(body: bytes, encoding: str | None) -> bytes:
    if encoding == "gzip":
        return gzip.compress(body)
    if encoding == "deflate":
        return zlib.compress(body)
    return body


def framed(body: bytes, framing: str, *, status: int = 200, ctype: str = "application/json",
           encoding: str | None = None, chunk: int = 7) -> list:
    """An answer as the writes that send it: `length`, `chunked` (chunks of `chunk` bytes), `eof`
    (HTTP/1.0 without a length, the connection's end ends it) or `close` (HTTP/1.1, a length and
    `Connection: close`)."""
    data = encode(body, encoding)
    version = "HTTP/1.0" if framing == "eof" else "HTTP/1.1"
    head = [f"{version} {status} X", f"content-type: {ctype}"]
    if encoding:
        head.append(f"content-encoding: {encoding}")
    if framing in ("length", "close"):
        head.append(f"content-length: {len(data)}")
    if framing == "close":
        head.append("connection: close")
    if framing == "chunked":
        head.append("transfer-encoding: chunked")
        pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)]
        data = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    out: list = [("\r\n".join(head) + "\r\n\r\n").encode() + data]
    if framing in ("eof", "close"):
        out.append(None)
    return out


@dataclass
class RawUpstream:
    answer: Script
    requests: list[Request] = field(default_factory=list)
    connections: int = 0
    open_now: int = 0
    most_open: int = 0
    closed_by_client: int = 0
    written: int = 0  # answer bytes drained into the connections
    port: int = 0
    closed_at: dict[int, float] = field(default_factory=dict)  # connection -> when it ended (time.monotonic)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ------------------------------------------------------------ in its own thread

    def start(self) -> RawUpstream:
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self.serve())
            ready.set()
            run_loop_until_stopped(self._loop, self._server)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("raw upstream failed to start")
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    # ------------------------------------------------------------ in the running loop

    async def serve(self) -> RawUpstream:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        self._server.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        me = self.connections
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    self.closed_by_client += 1
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:] if h)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                req = Request(method, path, headers, body, me)
                self.requests.append(req)
                for step in self.answer(req):
                    if step is None:
                        return
                    if isinstance(step, float | int):
                        await asyncio.sleep(step)
                        continue
                    writer.write(step)
                    await writer.drain()
                    self.written += len(step)
        except ConnectionError:
            self.closed_by_client += 1
        finally:
            self.open_now -= 1
            self.closed_at[me] = time.monotonic()
            writer.close()
