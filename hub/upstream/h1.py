"""A lean HTTP/1.1 client for plain-HTTP upstreams: the model servers and search services on
`http://` URLs without a proxy (llama.cpp, vLLM, Ollama, LM Studio, SearXNG next to the gateway).

aiohttp's client spends ~100 us of CPU per request on objects this path does not need (a request
and a response object with their header multidicts, a payload object, a timer per read, tracing and
middleware hooks); this one writes the request head and body in one write and parses the answer
with httptools (llhttp, the parser uvicorn serves with), at about a third of the cost
(bench/README.md, "History"). It is reached only through `UpstreamClient.request_direct`
(hub/upstream/transport.py), which sends everything else (TLS, proxies, other methods) over aiohttp,
and its failures are exceptions that hub/upstream/http.py (`_transport_error`) and transport.py
(`mapped_error`) map like aiohttp's.

What it keeps of a production client:
  * keep-alive pooling per origin, at most `max_connections` open in all; an idle connection is
    closed `keepalive_s` after its last answer (4 s, transport.py's KEEPALIVE_S) whether or not
    anything else is sent: one timer per client, due when the oldest idle connection runs out
    (`H1Client._sweep`), so a burst's connections close 4 s after it and none stays open for good;
  * a request that meets a reused connection the server closed before the answer began goes once
    more on a new connection (transport.py, `_retry_stale`: the same rule);
  * `connect_s` bounds opening a connection, `read_s` every wait for bytes (httpx's and aiohttp's
    `sock_read` meaning), not paused reading;
  * flow control for a consumer that takes the body piece by piece (`iter_any`): reading pauses
    while its unread bytes exceed `HIGH_WATER` and resumes when it takes them. `read()` wants the
    whole body, so reading never pauses for it; and any wait for bytes resumes a paused connection
    first, so a paused connection is always one whose consumer is not reading (its read clock
    stops: that is backpressure, not a stall) and every wait for bytes runs on the read clock. A
    connection goes back to the pool reading;
  * bodies framed by Content-Length, chunked, or the connection's end; gzip/deflate decoded (it
    asks for `identity`); a malformed answer, a header value with CR/LF, an answer cut short each
    raise, and the connection is never reused after anything unexpected.
"""

from __future__ import annotations

import asyncio
import zlib
from collections import deque

import httptools
from multidict import CIMultiDict
from yarl import URL

HIGH_WATER = 256 * 1024  # unread bytes of an answer read piece by piece before reading pauses
MAX_HEAD = 64 * 1024  # an answer's header lines, in all (aiohttp allows 8 KB per line)


class ConnectFailed(ConnectionError):
    """No connection could be opened (refused, unreachable, the name does not resolve)."""


class ConnectTimedOut(TimeoutError):
    """Opening the connection took longer than the connect timeout."""


class ReadTimedOut(TimeoutError):
    """No bytes arrived for the read timeout while an answer was awaited."""


class Disconnected(ConnectionError):
    """The connection ended before the answer did. `answered`: part of the answer had arrived."""

    def __init__(self, message: str, *, answered: bool) -> None:
        super().__init__(message)
        self.answered = answered


class BadResponse(ConnectionError):
    """The server's bytes are not an HTTP/1.1 answer (or one this client refuses)."""


class Response:
    """One answer, read as it arrives: `status`, `headers`, `read()`, `content.iter_any()`,
    `release()` -- the members of aiohttp's ClientResponse that the gateway uses."""

    __slots__ = ("status", "_raw_headers", "_headers", "_chunks", "_size", "_done", "_whole", "_error", "_waiter",
                 "_conn")

    def __init__(self, conn: _Conn) -> None:
        self.status = 0
        self._raw_headers: list[tuple[bytes, bytes]] = []
        self._headers: CIMultiDict[str] | None = None
        self._chunks: list[bytes] = []
        self._size = 0
        self._done = False
        self._whole = False  # read() is reading the whole body: no flow control
        self._error: BaseException | None = None
        self._waiter: asyncio.Future | None = None
        self._conn: _Conn | None = conn  # until the answer is complete

    @property
    def headers(self) -> CIMultiDict[str]:
        """Case-insensitive, as aiohttp's (built on first use: most answers never read them)."""
        h = self._headers
        if h is None:
            h = self._headers = CIMultiDict((k.decode("latin-1"), v.decode("latin-1")) for k, v in self._raw_headers)
        return h

    @property
    def content(self) -> Response:
        return self

    def _wake(self) -> None:
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def _wait(self) -> None:
        """Until bytes, the end or an error arrive. Whoever waits for bytes gets them read, on the
        read clock: a paused connection resumes first."""
        conn = self._conn
        if conn is not None and conn.paused:
            conn.resume()
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _take(self) -> bytes:
        chunks = self._chunks
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self._size = 0
        conn = self._conn
        if conn is not None and conn.paused:
            conn.resume()
        return data

    async def read(self) -> bytes:
        """The whole body. Reading does not pause for it (`HIGH_WATER` is for `iter_any`'s
        consumers); one paused before it was called resumes at its first wait."""
        self._whole = True
        while not self._done:
            if self._error is not None:
                raise self._error
            await self._wait()
        if self._error is not None:
            raise self._error
        return self._take() if self._chunks else b""

    def iter_any(self) -> _Reads:
        """The body as it arrives: everything received since the last step, at each step."""
        return _Reads(self)

    def release(self) -> None:
        """Done with the answer: a connection still carrying part of it is closed, not reused."""
        conn = self._conn
        if conn is not None and not self._done:
            self._conn = None
            conn.discard()


class _Reads:
    """`Response.iter_any`: an iterator object, not an async generator, so one dropped before its
    end (a stream that ended at `[DONE]`) leaves nothing for the event loop to finalize."""

    __slots__ = ("resp",)

    def __init__(self, resp: Response) -> None:
        self.resp = resp

    def __aiter__(self) -> _Reads:
        return self

    async def __anext__(self) -> bytes:
        resp = self.resp
        while True:
            if resp._chunks:
                return resp._take()
            if resp._error is not None:
                raise resp._error
            if resp._done:
                raise StopAsyncIteration
            await resp._wait()


class _Conn(asyncio.Protocol):
    """One connection: at most one request in flight; its parser and read clock."""

    def __init__(self, pool: H1Client, key: tuple[str, int]) -> None:
        self.pool = pool
        self.key = key
        self.loop = pool.loop
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.resp: Response | None = None
        self.head: asyncio.Future | None = None  # resolves when the answer's head is in
        self.closed = False
        self.paused = False
        self.served = False  # a request completed on it: a failure before the head may be a stale close
        self.received = False  # bytes of the current answer arrived
        self.idle_since = 0.0
        self.read_s: float | None = None
        self.last_read = 0.0
        self.timer: asyncio.TimerHandle | None = None
        self.timer_due = 0.0
        self.eof_body = False  # the answer's body ends with the connection
        self.stray = False  # bytes came that no request asked for
        self.head_bytes = 0
        self.decoder = None

    # -------------------------------------------------------------- requests

    def send(self, data: bytes, body: bytes | None, read_s: float | None) -> asyncio.Future:
        self.resp = Response(self)
        self.head = self.loop.create_future()
        self.received = False
        self.head_bytes = 0
        self.eof_body = True
        self.decoder = None
        self.read_s = read_s
        self.last_read = self.loop.time()
        if read_s is not None:  # the connection's read clock stays armed across requests
            due = self.last_read + read_s
            if self.timer is not None and self.timer_due > due:
                self.timer.cancel()
                self.timer = None
            if self.timer is None:
                self.timer, self.timer_due = self.loop.call_at(due, self._check_read), due
        t = self.transport
        if t is None or t.is_closing():
            raise Disconnected("the upstream closed the connection before answering", answered=False)
        if body is None:
            t.write(data)
        elif len(body) <= 16384:
            t.write(data + body)
        else:
            t.writelines((data, body))
        return self.head

    def _check_read(self) -> None:
        """The read clock: one timer per connection, left armed between requests and re-armed only
        when it comes due (data that arrives just moves `last_read`); an idle connection lets it go."""
        self.timer = None
        read_s = self.read_s
        if self.resp is None or self.closed or read_s is None:
            return
        now = self.loop.time()
        # paused: its consumer is not reading (a wait for bytes resumes it first), the clock stops
        due = now + read_s if self.paused else self.last_read + read_s
        if now < due:
            self.timer, self.timer_due = self.loop.call_at(due, self._check_read), due
            return
        self._fail(ReadTimedOut(f"no data from the upstream for {read_s:g} s"))
        self.discard()

    def _complete(self) -> None:
        """The answer is whole: what the decoder still holds is its end. (The read clock stays armed
        for the connection's next request; see `_check_read`.)"""
        resp = self.resp
        self.resp = None
        if resp is not None:
            if self.decoder is not None:
                tail = self.decoder.flush()
                if tail:
                    resp._chunks.append(tail)
            resp._done = True
            resp._conn = None
            resp._wake()

    def _finish(self) -> None:
        """The answer is complete: the connection goes back to the pool (when it may be reused),
        reading (its last read may have paused it, and its answer no longer resumes it)."""
        self._complete()
        self.served = True
        if self.closed or not self.parser.should_keep_alive() or self.eof_body:
            self.discard()
        else:
            if self.paused:
                self.resume()
            self.pool._idle(self)

    def _fail(self, exc: BaseException) -> None:
        head, resp = self.head, self.resp
        self.resp = None
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if head is not None and not head.done():
            head.set_exception(exc)
        elif resp is not None:
            resp._error = exc
            resp._conn = None
            resp._wake()

    def discard(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if not self.closed:
            self.closed = True
            if self.transport is not None:
                self.transport.close()
            self.pool._gone(self)

    def pause(self) -> None:
        if not self.paused and self.transport is not None and not self.closed:
            self.paused = True
            self.transport.pause_reading()

    def resume(self) -> None:
        if self.paused and self.transport is not None and not self.closed:
            self.paused = False
            self.last_read = self.loop.time()
            self.transport.resume_reading()

    # -------------------------------------------------------------- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.resp is None:  # bytes nobody asked for: the connection cannot be trusted
            self.discard()
            return
        self.received = True
        self.last_read = self.loop.time()
        try:
            self.parser.feed_data(data)
        except Exception as e:  # the parser's errors and ours from its callbacks
            self._fail(e if isinstance(e, BadResponse) else BadResponse(
                f"the upstream sent a malformed HTTP answer ({type(e).__name__})"))
            self.discard()
            return
        if self.stray:  # more after the answer, in the same read: it went back to the pool, take it out
            self.discard()

    def eof_received(self) -> bool:
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        was_closed = self.closed
        self.closed = True
        self.pool._gone(self)
        resp = self.resp
        if resp is not None:
            head = self.head
            if head is not None and head.done() and self.eof_body and exc is None:
                self._complete()  # a body that ends with the connection
                return
            if not was_closed:
                answered = self.received
                self._fail(Disconnected("the upstream closed the connection"
                                        + (" mid-answer" if answered else " before answering"), answered=answered))

    # -------------------------------------------------------------- httptools callbacks

    def on_message_begin(self) -> None:
        if self.resp is None:
            self.stray = True

    def on_header(self, name: bytes, value: bytes) -> None:
        resp = self.resp
        if resp is None:
            return
        resp._raw_headers.append((name, value))
        self.head_bytes += len(name) + len(value)
        if self.head_bytes > MAX_HEAD:
            raise BadResponse(f"the upstream's answer has more than {MAX_HEAD} bytes of headers")
        n = name.lower()
        if n == b"content-length" or (n == b"transfer-encoding" and value.lower().find(b"chunked") >= 0):
            self.eof_body = False
        elif n == b"content-encoding":
            enc = value.strip().lower()
            if enc in (b"gzip", b"x-gzip", b"deflate"):
                self.decoder = zlib.decompressobj(47)  # gzip or zlib, by its header
            elif enc not in (b"identity", b""):
                raise BadResponse(f"the upstream's content-encoding {enc.decode('latin-1')!r} is not supported")

    def on_headers_complete(self) -> None:
        resp = self.resp
        if resp is None:
            return
        status = self.parser.get_status_code()
        if 100 <= status < 200:  # an interim answer (100 Continue): the real one follows
            resp._raw_headers.clear()
            return
        resp.status = status
        head = self.head
        if head is not None and not head.done():
            head.set_result(resp)

    def on_body(self, body: bytes) -> None:
        resp = self.resp
        if resp is None:
            return
        if self.decoder is not None:
            try:
                body = self.decoder.decompress(body)
            except zlib.error:
                raise BadResponse("the upstream's compressed body is corrupt") from None
            if not body:
                return
        resp._chunks.append(body)
        resp._size += len(body)
        if resp._size > HIGH_WATER and not resp._whole:
            self.pause()
        resp._wake()

    def on_message_complete(self) -> None:
        resp = self.resp
        if resp is None or resp.status == 0:  # the end of an interim answer
            return
        self.eof_body = False
        self._finish()


def _line_safe(s: str) -> bool:
    return "\r" not in s and "\n" not in s


class Target:
    """A URL prepared for requests: its origin and the head's first lines."""

    __slots__ = ("key", "path_qs", "host_header")

    def __init__(self, url: URL) -> None:
        host = url.raw_host or ""
        port = url.port or 80
        self.key = (host, port)
        self.path_qs = url.raw_path_qs or "/"
        self.host_header = url.host_port_subcomponent if url.explicit_port and port != 80 else (
            f"[{host}]" if ":" in host else host)
        if not (_line_safe(self.path_qs) and " " not in self.path_qs and _line_safe(self.host_header)):
            raise ValueError("URL not usable in an HTTP request line")

    @staticmethod
    def of(url: URL) -> Target | None:
        """The target for a plain-HTTP URL; None for anything this client does not serve."""
        if url.scheme != "http" or not url.raw_host or url.raw_user or url.raw_password:
            return None
        try:
            return Target(url)
        except ValueError:
            return None


class H1Client:
    """The pool and the request call. One per event loop (its connections belong to that loop)."""

    def __init__(self, *, max_connections: int = 1000, keepalive_s: float = 4.0) -> None:
        self.max_connections = max_connections
        self.keepalive_s = keepalive_s  # the gateway passes transport.py's KEEPALIVE_S
        self.loop = asyncio.get_running_loop()
        # per origin, oldest first: a connection is appended when it goes idle and reused from the end
        self._idle_conns: dict[tuple[str, int], list[_Conn]] = {}
        self._open: set[_Conn] = set()
        self._waiters: deque[asyncio.Future] = deque()
        self._closing = False
        self._sweeper: asyncio.TimerHandle | None = None  # armed while a connection may be idle

    # -------------------------------------------------------------- pool

    def _idle(self, conn: _Conn) -> None:
        if self._closing:
            conn.discard()
            return
        conn.idle_since = now = self.loop.time()
        conns = self._idle_conns.get(conn.key)
        if conns is None:
            conns = self._idle_conns[conn.key] = []
        conns.append(conn)
        if self._sweeper is None:  # an armed sweep is due no later than this connection's end
            self._sweeper = self.loop.call_at(now + self.keepalive_s, self._sweep)
        self._wake_one()

    def _sweep(self) -> None:
        """The idle clock: one timer per client, due when the oldest idle connection idles out. It
        closes every connection idle for `keepalive_s` and re-arms for the oldest one left; with
        none left it stays off until a connection goes idle again (`_idle` arms it). Taking a
        connection from the pool leaves it armed: it then wakes early, finds nothing to close and
        re-arms. No traffic needed, so a burst's connections close `keepalive_s` after it."""
        self._sweeper = None
        if self._closing:
            return
        now = self.loop.time()
        deadline = now - self.keepalive_s + 0.001  # a timer may fire up to a clock tick (1 ms on uvloop) early
        due: float | None = None
        for key, conns in list(self._idle_conns.items()):
            n = 0
            for conn in conns:  # oldest first: the idled-out ones are a prefix
                if conn.idle_since > deadline:
                    break
                n += 1
            if n:
                expired = conns[:n]
                del conns[:n]
                for conn in expired:
                    conn.discard()
            if conns:
                first = conns[0].idle_since
                if due is None or first < due:
                    due = first
            elif self._idle_conns.get(key) is conns:
                del self._idle_conns[key]
        if due is not None and self._sweeper is None and not self._closing:
            self._sweeper = self.loop.call_at(due + self.keepalive_s, self._sweep)

    def _gone(self, conn: _Conn) -> None:
        if conn in self._open:
            self._open.discard(conn)
            conns = self._idle_conns.get(conn.key)
            if conns and conn in conns:
                conns.remove(conn)
            self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            w = self._waiters.popleft()
            if not w.done():
                w.set_result(None)
                return

    def _reuse(self, key: tuple[str, int]) -> _Conn | None:
        conns = self._idle_conns.get(key)
        now = self.loop.time()
        while conns:
            conn = conns.pop()
            if conn.closed or conn.transport is None or conn.transport.is_closing():
                continue
            if conn.idle_since + self.keepalive_s < now:  # the freshest idled out: so did the rest
                conn.discard()
                while conns:
                    conns.pop().discard()
                return None
            return conn
        return None

    async def _connect(self, key: tuple[str, int], connect_s: float | None) -> _Conn:
        while len(self._open) >= self.max_connections:
            idle = next((c for conns in self._idle_conns.values() for c in conns), None)
            if idle is not None:  # make room: an idle connection to another origin
                idle.discard()
                continue
            w = self.loop.create_future()
            self._waiters.append(w)
            await w
            conn = self._reuse(key)
            if conn is not None:
                return conn
        conn = _Conn(self, key)
        self._open.add(conn)
        try:
            async with asyncio.timeout(connect_s):
                await self.loop.create_connection(lambda: conn, key[0], key[1])
        except BaseException as e:
            conn.discard()  # out of the pool's count, whatever stopped it
            if isinstance(e, TimeoutError):
                raise ConnectTimedOut(f"no connection to the upstream within {connect_s:g} s") from None
            if isinstance(e, OSError):
                raise ConnectFailed(f"cannot connect to the upstream ({e.strerror or type(e).__name__})") from None
            raise
        return conn

    # -------------------------------------------------------------- requests

    async def request(self, method: str, target: Target, data: bytes | None, headers: dict[str, str],
                      connect_s: float | None, read_s: float | None) -> Response:
        """Send one request; the answer once its head is in (the body follows through the
        Response). Raises the exceptions above."""
        if self._closing:
            raise ConnectFailed("the upstream client is closed")
        lines = [f"{method} {target.path_qs} HTTP/1.1\r\nhost: {target.host_header}\r\n"]
        for k, v in headers.items():
            if not (_line_safe(k) and _line_safe(v)):
                raise ValueError(f"header {k!r} has a line break")
            lines.append(f"{k}: {v}\r\n")
        if "accept-encoding" not in headers:
            lines.append("accept-encoding: identity\r\n")
        if data is not None or method == "POST":
            lines.append(f"content-length: {len(data) if data is not None else 0}\r\n")
        lines.append("\r\n")
        head = "".join(lines).encode("latin-1")
        fresh = False
        while True:
            conn = None if fresh else self._reuse(target.key)
            if conn is None:
                conn = await self._connect(target.key, connect_s)
            reused = conn.served
            try:
                return await conn.send(head, data, read_s)
            except Disconnected as e:
                # A reused connection that the server closed before answering: once more, on a new
                # one (transport.py, `_retry_stale`). A new connection's failure is the answer.
                if fresh or not reused or e.answered:
                    raise
                fresh = True
            except BaseException:
                conn.discard()  # cancelled or failed mid-request: its state is unknown
                raise

    async def aclose(self) -> None:
        self._closing = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for conn in list(self._open):
            conn.discard()
        self._idle_conns.clear()
        for w in self._waiters:
            if not w.done():
                w.set_exception(ConnectFailed("the upstream client is closed"))
        self._waiters.clear()
