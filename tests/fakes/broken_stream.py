"""An OpenAI-compatible upstream that breaks its streams on the wire, on a raw loopback socket.

The mode is the first path segment (`<url>/<mode>/v1/chat/completions`), so each provider of a
test config can break a different way. Every answer is written byte for byte and the connection is
then closed (no chunked encoding: the stream is delimited by the connection, as a proxy or a
crashed server would leave it):

  close        200 event-stream headers, then the connection closes
  garbage      200 event-stream, a first line that is not JSON
  error_first  200 event-stream, an error chunk before any content
  html         200 text/html with a web page (a captive portal, a proxy's error page)
  empty        200 event-stream with no events at all
  done_only    200 event-stream with only `data: [DONE]`
  role_only    200 event-stream, the role chunk, then the connection closes
  cut          200 event-stream, the role chunk and one word of text, then the connection closes
  json         200 application/json with a chat completion (for non-streaming requests)
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter

_SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"


def _chunk(delta: dict, finish: str | None = None) -> bytes:
    body = {"id": "chatcmpl-broken", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


_HTML = b"<!doctype html><html><head><title>Gateway</title></head><body>Please sign in</body></html>"
_COMPLETION = json.dumps({"id": "chatcmpl-broken", "object": "chat.completion", "created": 1, "model": "m",
                          "choices": [{"index": 0, "message": {"role": "assistant", "content": "from broken"},
                                       "finish_reason": "stop"}]}).encode()

ANSWERS: dict[str, bytes] = {
    "close": _SSE_HEAD,
    "garbage": _SSE_HEAD + b"data: {this is not json\n\n" + _chunk({"content": "late"}),
    "error_first": _SSE_HEAD + b'data: {"error": {"message": "model overloaded", "type": "server_error"}}\n\n',
    "html": b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
            % len(_HTML) + _HTML,
    "empty": _SSE_HEAD,
    "done_only": _SSE_HEAD + b"data: [DONE]\n\n",
    "role_only": _SSE_HEAD + _chunk({"role": "assistant", "content": ""}),
    "cut": _SSE_HEAD + _chunk({"role": "assistant", "content": ""}) + _chunk({"content": "Half"}),
    "json": b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
            % len(_COMPLETION) + _COMPLETION,
}
STREAM_FAILURES = ("close", "garbage", "error_first", "html", "empty", "done_only", "role_only")


class BrokenUpstream:
    def __init__(self) -> None:
        self.port = 0
        self.requests: Counter[str] = Counter()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.port}/{mode}/v1"

    def start(self) -> BrokenUpstream:
        ready = threading.Event()

        async def main() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            async with self._server:
                await self._server.serve_forever()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            try:
                self._loop.run_until_complete(main())
            except asyncio.CancelledError:
                pass

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("broken upstream did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._server is not None:
            self._loop.call_soon_threadsafe(self._server.close)
            for task in asyncio.all_tasks(self._loop):
                self._loop.call_soon_threadsafe(task.cancel)
        if self._thread is not None:
            self._thread.join(timeout=5)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            if length:
                await reader.readexactly(length)
            path = head.split(b" ", 2)[1].decode()
            mode = path.strip("/").split("/", 1)[0]
            self.requests[mode] += 1
            writer.write(ANSWERS.get(mode, b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"))
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
