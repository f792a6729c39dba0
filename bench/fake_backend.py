"""A very fast fake OpenAI-compatible model and fake SearXNG provider for the benchmarks.

Raw asyncio protocol on uvloop with httptools parsing and pre-encoded answers, so that on
loopback it is never the bottleneck (tens of thousands of requests per second on one core).

Endpoints
  POST */chat/completions   non-stream JSON, or `"stream": true` SSE with N chunks (chunked encoding)
  GET  /search?q=..&format=json   SearXNG wire: {"query", "results": [{"url", "title", "content"}]}
  GET  /stats               {"chat": n, "search": n, "tool_calls": n, "tool_results": n}
  GET  /health              200

Behaviour of the fake model
  * A request whose `tools` include the search tool (default name `web_search`) and whose last
    message is not a tool result is answered with `--tool-calls` web_search calls (the search
    round's first model call); otherwise it answers text. Plain relays (no tools) always get text.
  * `--ttfb-ms`: delay before the answer (non-stream) or before the first SSE chunk (stream; the
    status line and headers go out at once, like vLLM). `--chunk-ms`: delay between SSE chunks.
  * A request may override these with a body field the gateway relays untouched:
    `"bench": {"ttfb_ms": .., "chunk_ms": .., "chunks": .., "tool_calls": ..}`. A model name
    ending in `-x<k>` (e.g. `m-x2`) also asks for k web_search calls.

Run: `python bench/fake_backend.py --port 9100 [--chunks 20] [--ttfb-ms 0] [--chunk-ms 0]
[--search-ms 0] [--tool-calls 1]`; it prints `READY <port>` on stdout once listening.
Environment variables FAKE_CHUNKS, FAKE_TTFB_MS, FAKE_CHUNK_MS, FAKE_SEARCH_MS, FAKE_TOOL_CALLS
set the same defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import socket
import sys
from urllib.parse import parse_qs

import httptools
import msgspec

_decode = msgspec.json.decode
_encode = msgspec.json.encode

CREATED = 1_700_000_000
MODEL = "bench-model"
WORDS = ("The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ".")


class Settings:
    chunks = 20
    ttfb_ms = 0.0
    chunk_ms = 0.0
    search_ms = 0.0
    tool_calls = 1
    tool_name = "web_search"
    results = 5


S = Settings()
STATS = {"chat": 0, "search": 0, "tool_calls": 0, "tool_results": 0}


# ----------------------------------------------------------------------------- pre-encoded answers


def _head(status: str, ctype: bytes, length: int | None, keep_alive: bool) -> bytes:
    h = [b"HTTP/1.1 " + status.encode(), b"content-type: " + ctype]
    if length is None:
        h.append(b"transfer-encoding: chunked")
        h.append(b"cache-control: no-cache")
    else:
        h.append(b"content-length: " + str(length).encode())
    if not keep_alive:
        h.append(b"connection: close")
    return b"\r\n".join(h) + b"\r\n\r\n"


def _full(status: str, ctype: bytes, body: bytes, keep_alive: bool = True) -> bytes:
    return _head(status, ctype, len(body), keep_alive) + body


def _text() -> str:
    return "".join(WORDS)


USAGE = {"prompt_tokens": 12, "completion_tokens": 20, "total_tokens": 32}


def completion(message: dict, finish: str) -> bytes:
    return _encode({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": CREATED, "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": USAGE,
    })


@functools.lru_cache(maxsize=64)
def text_completion(keep_alive: bool) -> bytes:
    body = completion({"role": "assistant", "content": _text() + " [1]"}, "stop")
    return _full("200 OK", b"application/json", body, keep_alive)


def _calls_in_model(model: object) -> int | None:
    """A model name ending in "-x<k>" asks for k parallel calls (for clients whose protocol cannot
    carry the `bench` field upstream: Anthropic Messages, Responses)."""
    if isinstance(model, str) and "-x" in model:
        tail = model.rsplit("-x", 1)[1]
        if tail.isdigit():
            return int(tail)
    return None


def _event(obj) -> bytes:
    data = b"data: " + (obj if isinstance(obj, bytes) else _encode(obj)) + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


def _chunk(delta: dict, finish: str | None) -> dict:
    return {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": CREATED, "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


@functools.lru_cache(maxsize=64)
def text_events(n: int, usage: bool) -> tuple[bytes, ...]:
    """n content chunks (the first carries the role, the last the finish_reason), [usage], [DONE], end."""
    out = []
    for i in range(n):
        delta: dict = {"content": WORDS[i % len(WORDS)]}
        if i == 0:
            delta = {"role": "assistant", **delta}
        out.append(_event(_chunk(delta, "stop" if i == n - 1 else None)))
    return _ending(out, usage)


def _ending(out: list[bytes], usage: bool) -> tuple[bytes, ...]:
    """The stream's events, then [the usage chunk], [DONE] and the chunked encoding's last chunk."""
    if usage:
        out.append(_event({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": CREATED,
                           "model": MODEL, "choices": [], "usage": USAGE}))
    out.append(_event(b"[DONE]"))
    out.append(b"0\r\n\r\n")
    return tuple(out)


def tool_calls_for(query: str, k: int) -> list[dict]:
    return [{"id": f"call_{i}", "type": "function",
             "function": {"name": S.tool_name,
                          "arguments": _encode({"query": f"{query} part {i}" if k > 1 else query}).decode()}}
            for i in range(k)]


def tool_events(calls: list[dict], usage: bool) -> tuple[bytes, ...]:
    delta = {"role": "assistant", "content": None,
             "tool_calls": [{"index": i, **c} for i, c in enumerate(calls)]}
    out = [_event(_chunk(delta, None)), _event(_chunk({}, "tool_calls"))]
    return _ending(out, usage)


def search_body(query: str) -> bytes:
    return _encode({
        "query": query,
        "number_of_results": S.results,
        "results": [{"url": f"https://example.com/{i}/{abs(hash(query)) % 10**8}",
                     "title": f"Result {i} for {query}",
                     "content": f"Snippet {i} about {query}. " + "Lorem ipsum dolor sit amet. " * 8,
                     "engine": "fake", "score": 1.0 / (i + 1)}
                    for i in range(S.results)],
        "answers": [], "suggestions": [], "unresponsive_engines": [],
    })


NOT_FOUND = _full("404 Not Found", b"application/json", b'{"error":{"message":"not found"}}')
HEALTH = _full("200 OK", b"application/json", b'{"status":"ok"}')


# ----------------------------------------------------------------------------- protocol


class HttpProtocol(asyncio.Protocol):
    __slots__ = ("transport", "parser", "url", "body", "pending", "closed")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""
        self.body: list[bytes] = []
        self.pending: asyncio.Future | None = None  # keeps pipelined answers in order
        self.closed = False

    def connection_made(self, transport) -> None:
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass

    def connection_lost(self, exc) -> None:
        self.closed = True

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.write(_full("400 Bad Request", b"text/plain", b"bad request", False))
            self.transport.close()

    # httptools callbacks
    def on_message_begin(self) -> None:
        self.url = b""
        self.body = []

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        keep = self.parser.should_keep_alive()
        method = self.parser.get_method()
        path, _, query = self.url.partition(b"?")
        body = b"".join(self.body)
        if self.pending is None and method == b"POST" and path.endswith(b"/chat/completions"):
            self._chat(body, keep)
        elif self.pending is None and method == b"GET" and path == b"/search":
            self._start(self._search(query, keep))
        elif method == b"GET" and path == b"/stats":
            self._write(_full("200 OK", b"application/json", _encode(STATS), keep), keep)
        elif method == b"GET" and path == b"/health":
            self._write(HEALTH, keep)
        elif self.pending is not None:  # pipelined behind a slow answer: queue in order
            self._start(self._after(self.pending, method, path, query, body, keep))
        else:
            self._write(NOT_FOUND, keep)

    # handlers

    def _write(self, data: bytes, keep: bool) -> None:
        if self.closed:
            return
        self.transport.write(data)
        if not keep:
            self.transport.close()

    def _start(self, coro) -> None:
        fut = asyncio.ensure_future(coro)
        self.pending = fut

        def done(f: asyncio.Future) -> None:
            if self.pending is f:
                self.pending = None
            if not f.cancelled() and f.exception() is not None:
                print(f"fake backend handler failed: {f.exception()!r}", file=sys.stderr)
                if not self.closed:
                    self.transport.close()

        fut.add_done_callback(done)

    async def _after(self, prev, method, path, query, body, keep) -> None:
        try:
            await prev
        except Exception:
            return
        if method == b"POST" and path.endswith(b"/chat/completions"):
            await self._chat_async(body, keep)
        elif method == b"GET" and path == b"/search":
            await self._search(query, keep)
        else:
            self._write(NOT_FOUND, keep)

    def _plan(self, body: bytes):
        try:
            req = _decode(body)
        except msgspec.DecodeError:
            return None
        if not isinstance(req, dict):
            return None
        STATS["chat"] += 1
        o = req.get("bench") if isinstance(req.get("bench"), dict) else {}
        stream = req.get("stream") is True
        ttfb = float(o.get("ttfb_ms", S.ttfb_ms)) / 1000
        chunk = float(o.get("chunk_ms", S.chunk_ms)) / 1000
        n = max(1, int(o.get("chunks", S.chunks)))
        usage = bool((req.get("stream_options") or {}).get("include_usage"))
        calls = None
        tools = req.get("tools") or ()
        if any(isinstance(t, dict) and (t.get("function") or {}).get("name") == S.tool_name for t in tools):
            msgs = req.get("messages") or [{}]
            last = msgs[-1] if isinstance(msgs[-1], dict) else {}
            if last.get("role") == "tool":
                STATS["tool_results"] += sum(1 for m in msgs if isinstance(m, dict) and m.get("role") == "tool")
            else:
                text = last.get("content") if isinstance(last.get("content"), str) else "query"
                k = int(o.get("tool_calls", _calls_in_model(req.get("model")) or S.tool_calls))
                STATS["tool_calls"] += k
                calls = tool_calls_for(text.removeprefix("search the web for ").strip() or "query", k)
        return stream, ttfb, chunk, n, usage, calls

    def _chat(self, body: bytes, keep: bool) -> None:
        plan = self._plan(body)
        if plan is None:
            self._write(_full("400 Bad Request", b"application/json", b'{"error":{"message":"bad json"}}', keep), keep)
            return
        stream, ttfb, chunk, n, usage, calls = plan
        if not stream and ttfb <= 0 and calls is None:
            self._write(text_completion(keep), keep)  # the hot path: one pre-encoded write
            return
        if stream and ttfb <= 0 and chunk <= 0 and calls is None:
            self._write(_head("200 OK", b"text/event-stream", None, keep) + b"".join(text_events(n, usage)), keep)
            return
        self._start(self._chat_slow(plan, keep))

    async def _chat_async(self, body: bytes, keep: bool) -> None:
        plan = self._plan(body)
        if plan is None:
            self._write(_full("400 Bad Request", b"application/json", b'{"error":{"message":"bad json"}}', keep), keep)
            return
        await self._chat_slow(plan, keep)

    async def _chat_slow(self, plan, keep: bool) -> None:
        stream, ttfb, chunk, n, usage, calls = plan
        if not stream:
            if ttfb > 0:
                await asyncio.sleep(ttfb)
            if calls is None:
                self._write(text_completion(keep), keep)
            else:
                body = completion({"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls")
                self._write(_full("200 OK", b"application/json", body, keep), keep)
            return
        events = text_events(n, usage) if calls is None else tool_events(calls, usage)
        self._write(_head("200 OK", b"text/event-stream", None, True), True)
        if ttfb > 0:
            await asyncio.sleep(ttfb)
        if chunk <= 0:
            self._write(b"".join(events), keep)
            return
        last = len(events) - 1
        for i, ev in enumerate(events):
            if self.closed:
                return
            if i and i < last:  # no pause before the first chunk or the end marker
                await asyncio.sleep(chunk)
            self.transport.write(ev)
        if not keep and not self.closed:
            self.transport.close()

    async def _search(self, query: bytes, keep: bool) -> None:
        STATS["search"] += 1
        params = parse_qs(query.decode("latin-1"))
        q = (params.get("q") or [""])[0]
        if S.search_ms > 0:
            await asyncio.sleep(S.search_ms / 1000)
        self._write(_full("200 OK", b"application/json", search_body(q), keep), keep)


# ----------------------------------------------------------------------------- main


def _env(name: str, default):
    v = os.environ.get(name)
    return type(default)(v) if v not in (None, "") else default


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=_env("FAKE_PORT", 0), help="0 = any free port")
    ap.add_argument("--chunks", type=int, default=_env("FAKE_CHUNKS", 20), help="SSE content chunks per stream")
    ap.add_argument("--ttfb-ms", type=float, default=_env("FAKE_TTFB_MS", 0.0))
    ap.add_argument("--chunk-ms", type=float, default=_env("FAKE_CHUNK_MS", 0.0))
    ap.add_argument("--search-ms", type=float, default=_env("FAKE_SEARCH_MS", 0.0))
    ap.add_argument("--tool-calls", type=int, default=_env("FAKE_TOOL_CALLS", 1),
                    help="web_search calls in the model's first answer when the tool is offered")
    ap.add_argument("--tool-name", default="web_search")
    args = ap.parse_args(argv)
    S.chunks, S.ttfb_ms, S.chunk_ms = args.chunks, args.ttfb_ms, args.chunk_ms
    S.search_ms, S.tool_calls, S.tool_name = args.search_ms, args.tool_calls, args.tool_name

    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover
        pass

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((args.host, args.port))
        sock.listen(4096)
        server = await loop.create_server(HttpProtocol, sock=sock, backlog=4096)
        print(f"READY {sock.getsockname()[1]}", flush=True)
        async with server:
            await server.serve_forever()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
