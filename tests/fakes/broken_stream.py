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

and in a provider's own protocol (the pass-through): `anthropic_*` (Messages events) and
`responses_*` (Responses events): `_ok` a whole answer, `_error_first`/`_failed_first` the
provider's error event before any content, `_start_only` only the opening events, `_cut` cut after
the first text without the terminal event.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter

from .server import started_thread

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


def _event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


_MESSAGE = {"id": "msg_native", "type": "message", "role": "assistant", "model": "m", "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1}}
_A_START = _event("message_start", {"type": "message_start", "message": _MESSAGE})
_A_TEXT = (_event("content_block_start", {"type": "content_block_start", "index": 0,
                                          "content_block": {"type": "text", "text": ""}})
           + _event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                            "delta": {"type": "text_delta", "text": "native answer"}}))
_A_END = (_event("content_block_stop", {"type": "content_block_stop", "index": 0})
          + _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                         "stop_sequence": None},
                                     "usage": {"output_tokens": 2}})
          + _event("message_stop", {"type": "message_stop"}))
_RESPONSE = {"id": "resp_native", "object": "response", "created_at": 1, "status": "in_progress", "model": "m",
             "output": []}
_R_START = (_event("response.created", {"type": "response.created", "sequence_number": 0, "response": _RESPONSE})
            + _event("response.in_progress", {"type": "response.in_progress", "sequence_number": 1,
                                              "response": _RESPONSE}))
_R_ITEM = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
_R_TEXT = (_event("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 2,
                                                 "output_index": 0, "item": _R_ITEM})
           + _event("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 3,
                                                   "item_id": "msg_1", "output_index": 0, "content_index": 0,
                                                   "delta": "native answer", "logprobs": []}))
_DONE_ITEM = {**_R_ITEM, "status": "completed",
              "content": [{"type": "output_text", "text": "native answer", "annotations": []}]}
_R_END = (_event("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 4,
                                               "output_index": 0, "item": _DONE_ITEM})
          + _event("response.completed", {"type": "response.completed", "sequence_number": 5,
                                          "response": {**_RESPONSE, "status": "completed", "output": [_DONE_ITEM]}}))
ANSWERS.update({
    # a provider's own protocol, relayed untouched by the pass-through
    "anthropic_ok": _SSE_HEAD + _A_START + _A_TEXT + _A_END,
    "anthropic_error_first": _SSE_HEAD + _A_START + _event("error", {
        "type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    "anthropic_start_only": _SSE_HEAD + _A_START,
    "anthropic_cut": _SSE_HEAD + _A_START + _A_TEXT,
    "responses_ok": _SSE_HEAD + _R_START + _R_TEXT + _R_END,
    "responses_failed_first": _SSE_HEAD + _R_START + _event("response.failed", {
        "type": "response.failed", "sequence_number": 2,
        "response": {**_RESPONSE, "status": "failed", "error": {"code": "server_error", "message": "boom"}}}),
    "responses_start_only": _SSE_HEAD + _R_START,
    "responses_cut": _SSE_HEAD + _R_START + _R_TEXT,
})
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

        self._thread = started_thread(run, ready, "broken upstream")
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
