"""The gateway's upstream client against real HTTP servers (issue 25, item 1's fallback): with no
maintained library within 10 % of its CPU per request (bench/README.md, "Upstream client"), the
lean HTTP/1.1 client (hub/upstream/h1.py) stays, and this suite holds it to real servers' framing.

The client is the one the gateway runs: hub/upstream/http.py `make_client()`, driven through
`UpstreamClient.request_direct` (the model calls' way in; every answer is asserted to be the lean
client's `h1.Response`), on uvloop like the gateway. The servers run on loopback in a thread of
their own: uvicorn (its httptools and its h11 protocol) serving a small Starlette app, and aiohttp's
`web` server, with the same endpoints; each records which connection (the client's port) carried
each request, per test, so keep-alive is asserted from the server's side. llama.cpp's `llama-server`
(tests/real_backends.py) is at the end, marked `real_backend`.

Bodies are generated from the request's parameters and compared byte for byte."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from functools import lru_cache

import aiohttp
import pytest
import uvicorn
import uvloop
from aiohttp import web
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from hub.upstream import h1
from hub.upstream.http import make_client

pytestmark = pytest.mark.timeout(60)

MB = 1024 * 1024


@lru_cache(maxsize=16)
def pattern(n: int) -> bytes:
    """n bytes that differ along the way (a piece lost, repeated or reordered shows)."""
    return "".join(f"{i:09d}," for i in range(n // 10 + 1)).encode()[:n]


def params(q) -> dict:
    return {
        "n": int(q.get("n", "100")),
        "mode": q.get("mode", "length"),  # length | chunked
        "piece": int(q.get("piece", "0")),  # write the body in pieces of this size (0: one write)
        "gap": float(q.get("gap", "0")),  # seconds between pieces
        "pause_at": int(q.get("pause_at", "-1")),  # byte offset where the server stops for `pause` s
        "pause": float(q.get("pause", "0")),
        "gzip": q.get("gzip", ""),  # "app": compressed by the handler, whatever was asked for
        "close": q.get("close") == "1",  # Connection: close after this answer
    }


def payload(p: dict) -> bytes:
    body = pattern(p["n"])
    return gzip.compress(body, compresslevel=5, mtime=0) if p["gzip"] == "app" else body


def pieces(data: bytes, p: dict) -> list[bytes]:
    """The body in writes of `piece` bytes, one cut at `pause_at` too (where the pause goes)."""
    if not data:
        return []
    size = p["piece"] or len(data)
    cuts = sorted({*range(0, len(data), size), *([p["pause_at"]] if 0 < p["pause_at"] < len(data) else [])})
    return [data[a:b] for a, b in zip(cuts, [*cuts[1:], len(data)], strict=True)]


async def paced(parts: list[bytes], p: dict):
    """The pieces, with the gaps and the pause between them."""
    sent = 0
    for k, part in enumerate(parts):
        if k and p["gap"]:
            await asyncio.sleep(p["gap"])
        if sent == p["pause_at"] and p["pause"]:
            await asyncio.sleep(p["pause"])
        yield part
        sent += len(part)


class Acks:
    """The SSE endpoint writes an event, then waits until the test has read it: proof that every
    event reached the client on its own, before the next was written."""

    def __init__(self) -> None:
        self.sems: dict[str, threading.Semaphore] = defaultdict(threading.Semaphore)
        self.lock = threading.Lock()

    def get(self, tag: str) -> threading.Semaphore:
        with self.lock:
            return self.sems[tag]


ACKS = Acks()


def sse_event(i: int) -> bytes:
    return b"data: " + json.dumps({"i": i, "text": f"token {i} " + "x" * (i % 7)}).encode() + b"\n\n"


async def sse_events(n: int, tag: str, wait: bool):
    sem = ACKS.get(tag)
    for i in range(n):
        yield sse_event(i)
        if wait and not await asyncio.to_thread(sem.acquire, True, 5):
            yield b"data: NOT-ACKNOWLEDGED\n\n"
            return
    yield b"data: [DONE]\n\n"


# ---------------------------------------------------------------- uvicorn + Starlette


class Server:
    """A server on loopback in a thread; `conns(tag)`: the client ports that carried the test's requests."""

    name = ""

    def __init__(self) -> None:
        self.ports: dict[str, list[int]] = defaultdict(list)
        self.lock = threading.Lock()
        self.port = 0

    def saw(self, tag: str | None, port: int) -> None:
        if tag:
            with self.lock:
                self.ports[tag].append(port)

    def conns(self, tag: str) -> set[int]:
        with self.lock:
            return set(self.ports[tag])

    def requests(self, tag: str) -> int:
        with self.lock:
            return len(self.ports[tag])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def starlette_app(server: Server) -> Starlette:
    async def body(request: Request):
        server.saw(request.headers.get("x-test"), request.scope["client"][1])
        p = params(request.query_params)
        data = payload(p)
        headers = {"content-type": "application/octet-stream"}
        if p["gzip"] == "app":
            headers["content-encoding"] = "gzip"
        if p["close"]:
            headers["connection"] = "close"
        if p["mode"] == "length":
            headers["content-length"] = str(len(data))
            if not (p["piece"] or p["pause"]):
                return Response(data, headers=headers)
        return StreamingResponse(paced(pieces(data, p), p), headers=headers)

    async def echo(request: Request):
        server.saw(request.headers.get("x-test"), request.scope["client"][1])
        data = await request.body()
        return Response(data, headers={"content-type": "application/octet-stream",
                                       "x-length-sent": request.headers.get("content-length", "")})

    async def status(request: Request):
        server.saw(request.headers.get("x-test"), request.scope["client"][1])
        code = int(request.path_params["code"])
        return Response(status_code=code, headers={"etag": '"v1"'} if code == 304 else None)

    async def sse(request: Request):
        tag = request.headers.get("x-test", "")
        server.saw(tag, request.scope["client"][1])
        n = int(request.query_params.get("n", "20"))
        return StreamingResponse(sse_events(n, tag, request.query_params.get("wait") == "1"),
                                 media_type="text/event-stream", headers={"cache-control": "no-cache"})

    return Starlette(routes=[
        Route("/bytes", body, methods=["GET", "POST"]),
        Route("/echo", echo, methods=["POST"]),
        Route("/status/{code}", status, methods=["GET", "POST"]),
        Route("/sse", sse, methods=["GET", "POST"]),
        # compressed by the server's own middleware, when the client asks for gzip
        Route("/server-gzip", body, methods=["GET"]),
    ], middleware=[Middleware(GZipMiddleware, minimum_size=100)])


class UvicornServer(Server):
    def __init__(self, http: str, keep_alive_s: float = 30) -> None:
        super().__init__()
        self.name = f"uvicorn-{http}"
        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and a
        # server with Nagle on holds each answer's second write ~40 ms for the client's delayed ACK
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.sock = sock
        config = uvicorn.Config(starlette_app(self), http=http, loop="asyncio", log_level="warning",
                                lifespan="off", timeout_keep_alive=keep_alive_s, timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve(sockets=[sock])), daemon=True)

    def start(self) -> UvicornServer:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


# ---------------------------------------------------------------- aiohttp.web


class AiohttpServer(Server):
    def __init__(self, keep_alive_s: float = 30) -> None:
        super().__init__()
        self.name = "aiohttp"
        self.keep_alive_s = keep_alive_s
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.runner: web.AppRunner | None = None

    def _peer(self, request: web.Request) -> int:
        return request.transport.get_extra_info("peername")[1] if request.transport else 0

    def app(self) -> web.Application:
        async def body(request: web.Request) -> web.StreamResponse:
            self.saw(request.headers.get("x-test"), self._peer(request))
            p = params(request.query)
            data = payload(p)
            headers = {"content-type": "application/octet-stream"}
            if p["gzip"] == "app":
                headers["content-encoding"] = "gzip"
            if p["mode"] == "length" and not (p["piece"] or p["pause"]):
                resp = web.Response(body=data, headers=headers)
                if p["close"]:
                    resp.force_close()
                return resp
            resp = web.StreamResponse(headers=headers)
            if p["mode"] == "length":
                resp.content_length = len(data)
            else:
                resp.enable_chunked_encoding()
            if p["close"]:
                resp.force_close()
            await resp.prepare(request)
            async for part in paced(pieces(data, p), p):
                await resp.write(part)
            await resp.write_eof()
            return resp

        async def server_gzip(request: web.Request) -> web.StreamResponse:
            self.saw(request.headers.get("x-test"), self._peer(request))
            p = params(request.query)
            data = pattern(p["n"])
            resp = web.StreamResponse(headers={"content-type": "application/octet-stream"})
            resp.enable_compression()  # aiohttp's own, by the request's Accept-Encoding
            if p["mode"] == "chunked":
                resp.enable_chunked_encoding()
            await resp.prepare(request)
            async for part in paced(pieces(data, p), p):
                await resp.write(part)
            await resp.write_eof()
            return resp

        async def echo(request: web.Request) -> web.Response:
            self.saw(request.headers.get("x-test"), self._peer(request))
            data = await request.read()
            return web.Response(body=data, headers={"content-type": "application/octet-stream",
                                                    "x-length-sent": request.headers.get("content-length", "")})

        async def status(request: web.Request) -> web.Response:
            self.saw(request.headers.get("x-test"), self._peer(request))
            code = int(request.match_info["code"])
            return web.Response(status=code, headers={"etag": '"v1"'} if code == 304 else None)

        async def sse(request: web.Request) -> web.StreamResponse:
            tag = request.headers.get("x-test", "")
            self.saw(tag, self._peer(request))
            resp = web.StreamResponse(headers={"content-type": "text/event-stream", "cache-control": "no-cache"})
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            async for ev in sse_events(int(request.query.get("n", "20")), tag, request.query.get("wait") == "1"):
                await resp.write(ev)
            await resp.write_eof()
            return resp

        app = web.Application(client_max_size=16 * MB)
        for method in ("GET", "POST"):
            app.router.add_route(method, "/bytes", body)
            app.router.add_route(method, "/status/{code}", status)
            app.router.add_route(method, "/sse", sse)
        app.router.add_get("/server-gzip", server_gzip)
        app.router.add_post("/echo", echo)
        return app

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def setup() -> None:
            self.runner = web.AppRunner(self.app(), access_log=None, keepalive_timeout=self.keep_alive_s,
                                         shutdown_timeout=1.0)
            await self.runner.setup()
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            await site.start()
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

        self.loop.run_until_complete(setup())
        self.ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self.runner.cleanup())  # type: ignore[union-attr]
        self.loop.close()

    def start(self) -> AiohttpServer:
        self.thread.start()
        if not self.ready.wait(15):
            raise RuntimeError("aiohttp server did not start")
        return self

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def start_server(kind: str, keep_alive_s: float = 30) -> Server:
    if kind == "aiohttp":
        return AiohttpServer(keep_alive_s).start()
    return UvicornServer(kind.removeprefix("uvicorn-"), keep_alive_s).start()


KINDS = ["uvicorn-httptools", "uvicorn-h11", "aiohttp"]


@pytest.fixture(scope="module", params=KINDS)
def server(request) -> Iterator[Server]:
    s = start_server(request.param)
    yield s
    s.stop()


@pytest.fixture
def tag(request) -> str:
    return request.node.nodeid


# ---------------------------------------------------------------- the client, as the gateway runs it


def timeout(read_s: float = 5.0) -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(total=None, sock_connect=5, sock_read=read_s)


class Client:
    """make_client() as the gateway builds it, its requests tagged for the server's records."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.http = make_client({})  # no proxy from the environment: the lean client's case

    def open_connections(self) -> int:
        lean = self.http.direct._h1
        return 0 if lean is None else len(lean._open)

    async def open(self, url: str, *, method: str = "GET", data: bytes | None = None,
                   headers: dict | None = None, read_s: float = 5.0) -> h1.Response:
        resp = await self.http.request_direct(url, data, {"x-test": self.tag, **(headers or {})}, timeout(read_s),
                                              method=method)
        assert isinstance(resp, h1.Response), type(resp)  # the lean client carried it, not aiohttp
        return resp

    async def fetch(self, url: str, *, method: str = "GET", data: bytes | None = None, headers: dict | None = None,
                    read_s: float = 5.0, streamed: bool = False) -> tuple[int, dict, bytes]:
        resp = await self.open(url, method=method, data=data, headers=headers, read_s=read_s)
        try:
            if streamed:
                body = b"".join([part async for part in resp.content.iter_any()])
            else:
                body = await resp.read()
        finally:
            resp.release()
        return resp.status, resp.headers, body

    async def aclose(self) -> None:
        await self.http.aclose()


def run(tag: str, fn, limit: float = 30.0):
    """fn(client) on uvloop (the gateway's loop), bounded in time."""

    async def main():
        client = Client(tag)
        try:
            async with asyncio.timeout(limit):
                return await fn(client)
        finally:
            await client.aclose()

    return uvloop.run(main())


# ---------------------------------------------------------------- framing and bodies


@pytest.mark.parametrize("mode", ["length", "chunked"])
@pytest.mark.parametrize("streamed", [False, True], ids=["read", "iter_any"])
@pytest.mark.parametrize("n", [0, 1, 1000, 300_000])
def test_bodies_arrive_byte_for_byte(server, tag, mode, streamed, n) -> None:
    async def main(c: Client):
        return await c.fetch(f"{server.url}/bytes?n={n}&mode={mode}&piece=65536", streamed=streamed)

    status, headers, body = run(tag, main)
    assert status == 200
    assert body == pattern(n)
    if mode == "chunked":
        assert headers.get("Transfer-Encoding", "").lower() == "chunked"
    else:
        assert int(headers["Content-Length"]) == n


@pytest.mark.parametrize("mode", ["length", "chunked"])
@pytest.mark.parametrize("streamed", [False, True], ids=["read", "iter_any"])
def test_a_5_mb_body_arrives_whole(server, tag, mode, streamed) -> None:
    n = 5 * MB

    async def main(c: Client):
        got = await c.fetch(f"{server.url}/bytes?n={n}&mode={mode}&piece=262144", streamed=streamed)
        again = await c.fetch(f"{server.url}/bytes?n=10")  # the connection is still good
        return got, again

    (status, _, body), (status2, _, small) = run(tag, main)
    assert status == 200 and len(body) == n and body == pattern(n)
    assert status2 == 200 and small == pattern(10)
    assert len(server.conns(tag)) == 1


def test_a_5_mb_body_read_slowly_holds_the_server_back_and_arrives_whole(server, tag) -> None:
    """A consumer that takes its time: reading pauses at h1.HIGH_WATER and resumes as it reads."""
    n = 5 * MB

    async def main(c: Client):
        resp = await c.open(f"{server.url}/bytes?n={n}&mode=chunked&piece=65536")
        parts, most = [], 0
        try:
            async for part in resp.content.iter_any():
                parts.append(part)
                most = max(most, len(part))
                await asyncio.sleep(0.001)
        finally:
            resp.release()
        return b"".join(parts), most

    body, most = run(tag, main)
    assert body == pattern(n)
    assert most <= h1.HIGH_WATER + 512 * 1024  # never the whole body buffered at once


@pytest.mark.parametrize("mode", ["length", "chunked"])
@pytest.mark.parametrize("streamed", [False, True], ids=["read", "iter_any"])
def test_a_gzip_encoded_body_is_decoded(server, tag, mode, streamed) -> None:
    n = 200_000

    async def main(c: Client):
        return await c.fetch(f"{server.url}/bytes?n={n}&mode={mode}&gzip=app&piece=4096", streamed=streamed)

    status, headers, body = run(tag, main)
    assert status == 200 and headers["Content-Encoding"] == "gzip"
    assert body == pattern(n)


@pytest.mark.parametrize("mode", ["length", "chunked"])
def test_the_servers_own_gzip_is_decoded_when_asked_for(server, tag, mode) -> None:
    """The client asks for gzip (a caller's own accept-encoding replaces the lean client's identity);
    the server's middleware compresses, streaming or not."""
    n = 120_000

    async def main(c: Client):
        return await c.fetch(f"{server.url}/server-gzip?n={n}&mode={mode}&piece=8192",
                             headers={"accept-encoding": "gzip"})

    status, headers, body = run(tag, main)
    assert status == 200
    assert headers.get("Content-Encoding") == "gzip"
    assert body == pattern(n)


def test_a_request_body_reaches_the_server_whole(server, tag) -> None:
    sizes = [0, 1, 16384, 16385, MB]

    async def main(c: Client):
        out = []
        for size in sizes:
            out.append(await c.fetch(f"{server.url}/echo", method="POST", data=pattern(size)))
        return out

    for size, (status, headers, body) in zip(sizes, run(tag, main), strict=True):
        assert status == 200 and body == pattern(size)
        assert headers["x-length-sent"] == str(size)
    assert len(server.conns(tag)) == 1


# ---------------------------------------------------------------- streams


def test_an_sse_stream_arrives_event_by_event(server, tag) -> None:
    """The server writes an event only after the client has read the one before: a client that
    buffered would see nothing (the server sends NOT-ACKNOWLEDGED after 5 s)."""
    n = 25
    sem = ACKS.get(tag)

    async def main(c: Client):
        resp = await c.open(f"{server.url}/sse?n={n}&wait=1", method="POST", data=b'{"stream": true}',
                            headers={"content-type": "application/json"})
        buf, events = b"", []
        try:
            assert resp.status == 200
            assert resp.headers["content-type"].startswith("text/event-stream")
            async for part in resp.content.iter_any():
                buf += part
                while b"\n\n" in buf:
                    ev, buf = buf.split(b"\n\n", 1)
                    events.append(ev + b"\n\n")
                    sem.release()  # read: the server may write the next one
        finally:
            resp.release()
        return events, buf

    events, rest = run(tag, main)
    assert rest == b""
    assert events == [sse_event(i) for i in range(n)] + [b"data: [DONE]\n\n"]


@pytest.mark.parametrize("mode", ["length", "chunked"])
def test_a_slow_trickle_arrives_whole(server, tag, mode) -> None:
    n = 3000

    async def main(c: Client):
        t0 = time.monotonic()
        got = await c.fetch(f"{server.url}/bytes?n={n}&mode={mode}&piece=30&gap=0.002", read_s=1.0, streamed=True)
        return got, time.monotonic() - t0

    (status, _, body), took = run(tag, main)
    assert status == 200 and body == pattern(n)
    assert took > 0.15  # it did trickle (100 pieces, 2 ms apart)


@pytest.mark.parametrize("mode", ["length", "chunked"])
@pytest.mark.parametrize("streamed", [False, True], ids=["read", "iter_any"])
def test_a_pause_mid_body_within_the_read_timeout_is_waited_out(server, tag, mode, streamed) -> None:
    n = 400_000

    async def main(c: Client):
        t0 = time.monotonic()
        got = await c.fetch(f"{server.url}/bytes?n={n}&mode={mode}&piece=65536&pause_at=196608&pause=0.5",
                            read_s=1.5, streamed=streamed)
        return got, time.monotonic() - t0

    (status, _, body), took = run(tag, main)
    assert status == 200 and body == pattern(n)
    assert took >= 0.45


@pytest.mark.parametrize("mode", ["length", "chunked"])
def test_a_pause_mid_body_beyond_the_read_timeout_times_out(server, tag, mode) -> None:
    async def main(c: Client):
        t0 = time.monotonic()
        with pytest.raises(h1.ReadTimedOut):
            await c.fetch(f"{server.url}/bytes?n=400000&mode={mode}&piece=65536&pause_at=131072&pause=3",
                          read_s=0.3)
        took = time.monotonic() - t0
        # the client goes on, on a new connection
        status, _, body = await c.fetch(f"{server.url}/bytes?n=10")
        return took, status, body

    took, status, body = run(tag, main)
    assert 0.25 < took < 2.0
    assert status == 200 and body == pattern(10)
    assert len(server.conns(tag)) == 2


# ---------------------------------------------------------------- connections


def test_keep_alive_carries_a_mix_of_requests_on_one_connection(server, tag) -> None:
    """GET and POST, content-length, chunked, gzip, 204 and 304 (no body), echoes: 60 requests one
    after the other, all on the first connection (counted by the server)."""
    plan = []
    for i in range(60):
        kind = i % 6
        if kind == 0:
            plan.append(("GET", f"/bytes?n={i * 37}", None, pattern(i * 37), 200))
        elif kind == 1:
            plan.append(("POST", f"/bytes?n={i * 101}&mode=chunked&piece=100", b"{}", pattern(i * 101), 200))
        elif kind == 2:
            plan.append(("GET", f"/bytes?n={1000 + i}&gzip=app&mode=chunked", None, pattern(1000 + i), 200))
        elif kind == 3:
            plan.append(("POST", "/status/204", b"{}", b"", 204))
        elif kind == 4:
            plan.append(("GET", "/status/304", None, b"", 304))
        else:
            plan.append(("POST", "/echo", pattern(i * 13), pattern(i * 13), 200))

    async def main(c: Client):
        out = []
        for method, path, data, _, _ in plan:
            status, _, body = await c.fetch(server.url + path, method=method, data=data)
            out.append((status, body))
        return out, c.open_connections()

    got, open_conns = run(tag, main)
    assert got == [(status, body) for _, _, _, body, status in plan]
    assert server.requests(tag) == len(plan)
    assert len(server.conns(tag)) == 1
    assert open_conns == 1


@pytest.mark.parametrize("code", [204, 304])
def test_an_answer_without_a_body_leaves_the_connection_usable(server, tag, code) -> None:
    async def main(c: Client):
        out = []
        for _ in range(3):
            out.append(await c.fetch(f"{server.url}/status/{code}", streamed=True))
            out.append(await c.fetch(f"{server.url}/bytes?n=50"))
        return out

    got = run(tag, main)
    assert [(s, b) for s, _, b in got] == [(code, b""), (200, pattern(50))] * 3
    assert len(server.conns(tag)) == 1


@pytest.mark.parametrize("mode", ["length", "chunked"])
def test_a_server_that_closes_after_its_answer_gets_a_new_connection_each_time(server, tag, mode) -> None:
    async def main(c: Client):
        out = []
        for i in range(5):
            out.append(await c.fetch(f"{server.url}/bytes?n={500 + i}&mode={mode}&close=1"))
        out.append(await c.fetch(f"{server.url}/bytes?n=7"))
        return out, c.open_connections()

    got, open_conns = run(tag, main)
    assert [(s, b) for s, _, b in got] == [(200, pattern(500 + i)) for i in range(5)] + [(200, pattern(7))]
    assert got[0][1].get("Connection", "").lower() == "close"
    assert len(server.conns(tag)) == 6  # none reused after Connection: close
    assert open_conns == 1  # only the last, kept-alive one


@pytest.mark.parametrize("kind", KINDS)
def test_a_connection_the_server_idled_out_is_not_reused(kind, tag) -> None:
    """The server closes idle connections after 0.3 s (the gateway keeps them 4 s): the next request
    goes on a new connection and succeeds."""
    server = start_server(kind, keep_alive_s=0.3)
    try:
        async def main(c: Client):
            first = await c.fetch(f"{server.url}/bytes?n=100")
            await asyncio.sleep(0.6)
            second = await c.fetch(f"{server.url}/bytes?n=200", method="POST", data=b"{}")
            return first, second

        (s1, _, b1), (s2, _, b2) = run(tag, main)
        assert (s1, b1, s2, b2) == (200, pattern(100), 200, pattern(200))
        assert len(server.conns(tag)) == 2
    finally:
        server.stop()


def test_an_answer_sent_before_the_request_body_was_read_arrives(tag) -> None:
    """aiohttp's server answers 413 from the Content-Length alone, while the client may still be
    writing 17 MB; the answer arrives and the next request goes on a new connection."""
    server = start_server("aiohttp")
    try:
        async def main(c: Client):
            big = await c.fetch(f"{server.url}/echo", method="POST", data=b"x" * (17 * MB))
            small = await c.fetch(f"{server.url}/echo", method="POST", data=b"ok")
            return big, small

        (s1, _, b1), (s2, _, b2) = run(tag, main)
        assert s1 == 413 and b"exceeded" in b1
        assert (s2, b2) == (200, b"ok")
    finally:
        server.stop()


def test_sixteen_concurrent_requests_are_all_answered_right(server, tag) -> None:
    jobs = []
    for k in range(16):
        for j in range(6):
            n = 1000 * k + 17 * j
            jobs.append((k, ["GET", "POST"][j % 2], f"/bytes?n={n}&mode={['length', 'chunked'][(k + j) % 2]}"
                         + ("&gzip=app" if j == 3 else "") + ("&piece=512" if j == 4 else ""), n))

    async def main(c: Client):
        async def one(k: int) -> list:
            out = []
            for kk, method, path, _ in jobs:
                if kk == k:
                    out.append(await c.fetch(server.url + path, method=method,
                                             data=b"{}" if method == "POST" else None, streamed=k % 2 == 0))
            return out

        results = await asyncio.gather(*(one(k) for k in range(16)))
        return [r for group in results for r in group], c.open_connections()

    got, open_conns = run(tag, main)
    want = [(200, pattern(n)) for _, _, _, n in jobs]
    assert [(s, b) for s, _, b in got] == want
    assert server.requests(tag) == len(jobs)
    assert 1 <= len(server.conns(tag)) <= 16
    assert open_conns <= 16


def test_sixteen_concurrent_streams_arrive_whole(server, tag) -> None:
    async def main(c: Client):
        async def one(k: int) -> bytes:
            _, _, body = await c.fetch(f"{server.url}/sse?n={10 + k}", method="POST", data=b"{}", streamed=True)
            return body

        return await asyncio.gather(*(one(k) for k in range(16)))

    got = run(tag, main)
    assert got == [b"".join(sse_event(i) for i in range(10 + k)) + b"data: [DONE]\n\n" for k in range(16)]
    assert 1 <= len(server.conns(tag)) <= 16


# ---------------------------------------------------------------- llama.cpp's server


@pytest.fixture(scope="module")
def llama_server():
    from .real_backends import smollm2_path, start_llama_server

    s = start_llama_server(smollm2_path(), ctx=1024)
    yield s
    s.stop()


def sse_payloads(raw: bytes) -> list[bytes]:
    return [line[5:].strip() for line in raw.split(b"\n") if line.startswith(b"data:")]


@pytest.mark.real_backend
@pytest.mark.timeout(300)
def test_llama_server_answers_and_streams_through_the_lean_client(llama_server, tag) -> None:
    base = llama_server.url  # .../v1
    chat = {"model": "m", "messages": [{"role": "user", "content": "Count from one to five."}],
            "max_tokens": 24, "temperature": 0, "seed": 7}

    async def main(c: Client):
        out: dict = {}
        status, _, body = await c.fetch(base + "/models")
        out["models"] = (status, json.loads(body))
        status, headers, body = await c.fetch(base + "/chat/completions", method="POST",
                                              data=json.dumps(chat).encode(),
                                              headers={"content-type": "application/json"}, read_s=120)
        out["chat"] = (status, json.loads(body), headers)
        resp = await c.open(base + "/chat/completions", method="POST",
                            data=json.dumps({**chat, "stream": True}).encode(),
                            headers={"content-type": "application/json"}, read_s=120)
        reads = []
        try:
            out["stream_status"] = resp.status
            out["stream_headers"] = resp.headers
            async for part in resp.content.iter_any():
                reads.append(part)
        finally:
            resp.release()
        out["stream"] = reads
        status, _, body = await c.fetch(base + "/no-such-endpoint", method="POST", data=b"{}")
        out["404"] = (status, body)
        status, _, body = await c.fetch(base + "/models")  # still on the first connection
        out["models_again"] = status
        out["open"] = c.open_connections()
        return out

    out = run(tag, main, limit=240)
    status, models = out["models"]
    assert status == 200 and models["data"], models
    status, completion, _ = out["chat"]
    assert status == 200
    text = completion["choices"][0]["message"]["content"]
    assert text
    assert out["stream_status"] == 200
    assert out["stream_headers"]["Content-Type"].startswith("text/event-stream")
    assert len(out["stream"]) > 3  # it arrived piece by piece, not in one read at the end
    payloads = sse_payloads(b"".join(out["stream"]))
    assert payloads[-1] == b"[DONE]"
    events = [json.loads(p) for p in payloads[:-1]]  # every event whole: none cut or merged
    streamed = "".join((e.get("choices") or [{}])[0].get("delta", {}).get("content") or "" for e in events)
    assert streamed.strip()
    assert out["404"][0] == 404
    assert out["models_again"] == 200
    assert out["open"] == 1  # every request on one kept-alive connection



@pytest.mark.real_backend
@pytest.mark.timeout(300)
def test_llama_server_keeps_one_connection_through_a_mix_and_answers_concurrent_requests(llama_server, tag) -> None:
    """Health checks, whole answers and streams one after the other, each answered whole. Health
    checks and whole answers share a kept-alive connection; llama-server ends the connection after
    each streamed answer (it sends `Keep-Alive: timeout=5` and then closes), and after a malformed
    request's 400 (sent with Connection: close): the next request goes on a new one. Then four at
    once (llama-server queues them on its one slot), each whole."""
    base = llama_server.url
    root = base.removesuffix("/v1")

    def chat(stream: bool, n: int) -> bytes:
        return json.dumps({"model": "m", "messages": [{"role": "user", "content": f"Say a word about {n}."}],
                           "max_tokens": 8, "temperature": 0, "stream": stream}).encode()

    json_ct = {"content-type": "application/json"}

    async def main(c: Client):
        seq, conns = [], []
        for i in range(10):
            if i == 8:
                seq.append(await c.fetch(base + "/chat/completions", method="POST", data=b"{not json",
                                         headers=json_ct, read_s=120))
            elif i % 3 == 0:
                seq.append(await c.fetch(root + "/health"))
            elif i % 3 == 1:
                seq.append(await c.fetch(base + "/chat/completions", method="POST", data=chat(False, i),
                                         headers=json_ct, read_s=120))
            else:
                seq.append(await c.fetch(base + "/chat/completions", method="POST", data=chat(True, i),
                                         headers=json_ct, read_s=120, streamed=True))
            conns.append({id(conn) for conn in c.http.direct._h1._open})
        together = await asyncio.gather(*(c.fetch(base + "/chat/completions", method="POST", data=chat(k % 2 == 0, k),
                                                  headers=json_ct, read_s=120, streamed=k % 2 == 0)
                                          for k in range(4)))
        return seq, conns, together

    seq, conns, together = run(tag, main, limit=240)
    for i, (status, headers, body) in enumerate(seq):
        if i == 8:
            assert 400 <= status < 500 and json.loads(body)["error"]
            assert headers.get("Connection", "").lower() == "close"
        elif i % 3 == 0:
            assert status == 200 and json.loads(body)["status"] == "ok"
        elif i % 3 == 1:
            assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] is not None
        else:
            assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
            payloads = sse_payloads(body)
            assert payloads[-1] == b"[DONE]" and all(json.loads(p) for p in payloads[:-1])
    for a, b in ((0, 1), (3, 4), (6, 7)):  # a GET and a whole answer between two streams: one connection
        assert len(conns[a]) == 1 and conns[a] == conns[b], conns
    assert conns[8] == set()  # closed after the 400, as the server asked
    assert len(conns[9]) == 1 and conns[9] != conns[7]
    for k, (status, _, body) in enumerate(together):
        assert status == 200
        if k % 2 == 0:
            assert sse_payloads(body)[-1] == b"[DONE]"
        else:
            assert json.loads(body)["choices"]
