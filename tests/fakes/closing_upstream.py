"""A raw HTTP/1.1 upstream on loopback that closes kept-alive connections the way a server whose
keep-alive timer just ran out does: the request that arrives on a connection that already served
`serves` requests gets the socket closed, with no byte of an answer.

On loopback an idle close is seen by the client before its next request (it reads the FIN first);
in production the close and the next request cross on the wire. Closing on the request's arrival
is that crossing, made deterministic. Raw asyncio, so the socket really closes."""

from __future__ import annotations

import asyncio
import json
import threading

from .server import run_loop_until_stopped

_CHAT = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
_SERPER = {"organic": [{"title": "Rust 1.91.0", "link": "https://blog.rust-lang.org/", "snippet": "released",
                        "position": 1}]}


def _chunk(delta: dict, finish: str | None = None) -> bytes:
    c = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "m",
         "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(c).encode() + b"\n\n"


class ClosingUpstream:
    def __init__(self, serves: int = 1, head: bytes = b"") -> None:
        self.serves = serves  # requests answered per connection before it is closed on the next one
        self.head = head  # sent before closing: the start of an answer
        self.requests: list[str] = []  # "<path> answered|closed", in arrival order
        self.connections = 0
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ClosingUpstream:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("closing upstream failed to start")
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        run_loop_until_stopped(self._loop, self._server)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        served = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                length = next((int(v) for k, _, v in (h.partition(":") for h in lines[1:])
                               if k.strip().lower() == "content-length"), 0)
                body = json.loads(await reader.readexactly(length)) if length else {}
                if served >= self.serves:
                    self.requests.append(f"{path} closed")
                    if self.head:
                        writer.write(self.head)
                        await writer.drain()
                    return
                self.requests.append(f"{path} answered")
                served += 1
                writer.write(self._answer(path, body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()

    @staticmethod
    def _answer(path: str, body: dict) -> bytes:
        if path.endswith("/chat/completions") and body.get("stream"):
            payload = (_chunk({"role": "assistant", "content": "fine"}) + _chunk({}, "stop") + b"data: [DONE]\n\n")
            return (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: "
                    + str(len(payload)).encode() + b"\r\n\r\n" + payload)
        payload = json.dumps(_CHAT if path.endswith("/chat/completions") else _SERPER).encode()
        return (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                + str(len(payload)).encode() + b"\r\n\r\n" + payload)
