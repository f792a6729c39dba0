"""Shared HTTP plumbing: body decoding, the caller's options, request ids, cancellation, SSE writing.
The protocols' error shapes are hub/protocols/ (errors.py and each folder's)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TypeVar

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from hub.config.keys import ApiKey
from hub.core.errors import ClientGone, PayloadTooLarge
from hub.core.ids import new_id
from hub.observability.logctx import RequestContextFilter, chain_id_var, request_id_var  # noqa: F401 (re-exported)
from hub.runtime import Runtime
from hub.search.metered import SearchBill
from hub.tools.events import Options

from .body import decode_body

T = TypeVar("T")


def runtime(request: Request) -> Runtime:
    rt = request.app.gateway.runtime
    assert rt is not None
    return rt


def new_request_id() -> str:
    return new_id("req")


HEADERS_SCOPE_KEY = "searchhub.headers"


def headers_of(scope: Scope) -> dict[str, str]:
    """The request's headers as one dict, built once per request: lower-case names (ASGI's), the
    first of a repeated header (as Starlette's `Headers.get`). Starlette's `Headers` looks every
    name up by scanning the list; a model call reads about eight."""
    d = scope.get(HEADERS_SCOPE_KEY)
    if d is None:
        d = scope[HEADERS_SCOPE_KEY] = {k.decode("latin-1"): v.decode("latin-1") for k, v in reversed(scope["headers"])}
    return d


async def read_json(request: Request, max_bytes: int) -> dict:
    """The body as a JSON object, or a 400/413 that says what is wrong. Read from the ASGI channel
    itself (Starlette's `Request.stream()` adds a generator and a copy per request)."""
    length = headers_of(request.scope).get("content-length")
    if length and length.isdigit() and int(length) > max_bytes:
        raise PayloadTooLarge(f"request body is {length} bytes; the limit is {max_bytes}", code="request_too_large")
    chunks = []
    size = 0
    receive = request.receive
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client hung up before sending all of it
            raise ClientGone()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > max_bytes:
            raise PayloadTooLarge(f"request body exceeds the limit of {max_bytes} bytes", code="request_too_large")
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return decode_body(chunks[0] if len(chunks) == 1 else b"".join(chunks))


def search_override(body: dict, headers) -> bool | None:
    """`"web_search": true|false` in the body or `x-searchhub-web-search: on|off` forces or disables search."""
    v = body.get("web_search")
    if isinstance(v, bool):
        return v
    h = headers.get("x-searchhub-web-search")
    if h:
        h = h.strip().lower()
        if h in ("on", "true", "1", "yes"):
            return True
        if h in ("off", "false", "0", "no"):
            return False
    return None


def client_key(request: Request) -> str:
    """Who is calling, for chain identity: the presented key (hashed later, never logged)."""
    h = headers_of(request.scope)
    return h.get("x-api-key") or h.get("authorization", "").removeprefix("Bearer ").strip()


TRACE_SCOPE_KEY = "searchhub.trace"  # the request's Trace, put into the ASGI scope by the middleware


def options(request: Request, body: dict) -> Options:
    trace = request.scope.get(TRACE_SCOPE_KEY)
    if trace is not None:
        trace.stream = body.get("stream") is True
        trace.model = body.get("model") if isinstance(body.get("model"), str) else None
    key, bill = caller(request)
    h = headers_of(request.scope)
    return Options(
        force_search=search_override(body, h),
        chain_id=h.get("x-searchhub-chain") or None,
        client_key=client_key(request),
        trace=trace,
        key=key,
        bill=bill,
        client_agent=h.get("user-agent", ""),
    )


def caller(request: Request) -> tuple[ApiKey | None, SearchBill]:
    """The API key the request presented (None on a gateway without keys) and its search bill,
    both set by GatewayMiddleware (routes/app.py)."""
    state = request.scope.get("state") or {}
    bill = state.get("search_bill")
    return state.get("api_key"), bill if bill is not None else SearchBill()



WATCH_AFTER_S = 0.05


async def until_disconnect(receive: Receive, work: Awaitable[T]) -> T:
    """Run work in this task; if the client goes away first, cancel it (and so the upstream call or
    stream) and raise ClientGone. The watcher task joins only once the work has run WATCH_AFTER_S:
    work done sooner (a cache, a fast backend, a short stream) costs no task, and a client that
    hangs up on a long generation stops it at most that much later."""
    me = asyncio.current_task()
    assert me is not None
    gone = False
    watcher: list[asyncio.Task] = []

    async def watch() -> None:
        nonlocal gone
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                gone = True
                me.cancel()
                return

    timer = me.get_loop().call_later(WATCH_AFTER_S, lambda: watcher.append(asyncio.ensure_future(watch())))
    try:
        return await work
    except asyncio.CancelledError:
        if gone and me.uncancel() == 0:  # our own cancellation, nobody else's
            raise ClientGone() from None
        raise
    finally:
        timer.cancel()
        if watcher:
            watcher[0].cancel()


STREAM_SCOPE_KEY = "searchhub.stream"  # the request's EventStream once it runs (routes/app.py, Drain)


class EventStream(Response):
    """A `text/event-stream` answer, each item of `chunks` written as it comes. A client that goes
    away stops it, which closes `chunks` (and with them the upstream stream). Starlette's
    StreamingResponse does the same with a task group and two tasks per stream; this runs in the
    request's task, with a watcher only for streams that last (until_disconnect). `interrupt` ends
    it early with its protocol's error event (the graceful shutdown, routes/app.py `Drain`)."""

    media_type = "text/event-stream"

    def __init__(self, chunks: AsyncIterator[bytes], headers: Mapping[str, str] | None = None,
                 status_code: int = 200, *, interrupted: Callable[[str], bytes] | None = None) -> None:
        self.chunks = chunks
        self.status_code = status_code
        self.background = None
        self.init_headers(headers)
        # The protocol's error event for a stream cut short from outside (`interrupt`), made from
        # what its encoder has sent; None: the body just ends.
        self.interrupted = interrupted
        self._task: asyncio.Task | None = None  # the request's task while the stream runs
        self._interrupt: str | None = None

    def interrupt(self, message: str) -> None:
        """End the stream with its protocol's error event saying `message` (the graceful shutdown,
        routes/app.py `Drain`), instead of the connection being dropped: the request's task is
        cancelled, so the producer unwinds as for a client that hung up (the upstream stream is
        closed, its concurrency slot released), and `interrupted(message)` is the last write."""
        task = self._task
        if task is not None and self._interrupt is None:
            self._interrupt = message
            task.cancel()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def start() -> None:  # the status line and headers, once, before the first body
            nonlocal started
            if not started:
                started = True
                await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})

        task = self._task = asyncio.current_task()
        scope[STREAM_SCOPE_KEY] = self  # where the graceful shutdown finds the open streams
        cut = False
        try:
            ended = await until_disconnect(receive, self._pump(send, start))
        except ClientGone:
            return
        except asyncio.CancelledError:
            # Only interrupt()'s cancellation ends the stream with its error event; with another
            # one as well (the server cancelling the task at the end of the grace) it stays cancelled.
            if self._interrupt is None or task is None or task.uncancel() > 0:
                raise
            cut = True
        finally:
            self._task = None  # nothing to interrupt from here on
            aclose = getattr(self.chunks, "aclose", None)
            if aclose is not None:
                await aclose()
        if cut:  # the producer has unwound: the protocol's error event ends the body
            assert self._interrupt is not None
            tail = self.interrupted(self._interrupt) if self.interrupted is not None else b""
            await start()
            await send({"type": "http.response.body", "body": tail, "more_body": False})
            return
        if not ended:
            await start()
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _pump(self, send: Send, start: Callable[[], Awaitable[None]]) -> bool:
        """Write the chunks, those that are ready together in one write; True when the last write
        already ended the body. A stream whose upstream read brought several chunks (the tool loop's
        and the protocol translators' events) goes out in one write instead of one per event, with
        no added wait: what is pending goes out as soon as the next chunk is not ready.

        The headers go out when the producer first has to wait, after two turns of the event loop:
        work it has just started (a search round's requests, also those of the tasks a parallel
        round starts) is sent first, and the write to the client, which wakes the client, comes
        after it (µs later, not a model call later)."""
        pending: list[bytes] = []
        waited = False  # the producer had to wait once already (the headers are out)

        async def write(more: bool) -> None:  # what is pending, as one write (headers first)
            await start()
            message = {"type": "http.response.body", "body": b"".join(pending), "more_body": more}
            pending.clear()
            await send(message)

        size = 0
        anext = self.chunks.__anext__
        while True:
            step = anext()
            try:
                waiting = step.send(None)  # run the producer until it yields a chunk or must wait
            except StopIteration as done:
                chunk = done.value
            except StopAsyncIteration:
                break
            except BaseException:
                if pending:
                    await write(True)
                raise
            else:
                if pending or not waited:  # the next chunk is not ready: what is, goes out now
                    size = 0
                    try:
                        if not waited:
                            waited = True
                            # What the producer just scheduled runs first, and the tasks that
                            # starts (a parallel round's searches, hub/turn/loop.py): two loop turns.
                            await asyncio.sleep(0)
                            await asyncio.sleep(0)
                            await start()
                        if pending:
                            await write(True)
                    except BaseException as e:
                        await _Resumed(step, waiting, e)  # the producer unwinds from where it waits
                        raise
                try:
                    chunk = await _Resumed(step, waiting)
                except StopAsyncIteration:
                    break
            pending.append(chunk)
            size += len(chunk)
            if size >= COALESCE_BYTES:
                size = 0
                await write(True)
        if pending:  # the last write ends the body too
            await write(False)
            return True
        return False


COALESCE_BYTES = 64 * 1024  # ready chunks joined into one write, up to this much


class _Resumed:
    """The rest of a producer step that had to wait: awaiting it hands what the step waits on (a
    future, as `await` would) to the running task until the step finishes, and passes whatever the
    task throws in (a cancellation) on to the step. With `throw`, the step first gets that
    exception where it waits, and its outcome is dropped (the caller re-raises)."""

    __slots__ = ("step", "waiting", "throw")

    def __init__(self, step, waiting, throw: BaseException | None = None) -> None:
        self.step, self.waiting, self.throw = step, waiting, throw

    def __await__(self):
        step, dropping = self.step, self.throw is not None
        waiting = self.waiting
        advance = (step.throw, self.throw) if dropping else None
        while True:
            if advance is not None:  # resume the step: what the task sent, or what it threw in
                fn, arg = advance
                try:
                    waiting = fn(arg)
                except StopIteration as done:
                    return None if dropping else done.value
                except BaseException:
                    if dropping:  # the step ended (its own exception or the one thrown in)
                        return None
                    raise
            try:
                sent = yield waiting
            except GeneratorExit:
                step.close()
                raise
            except BaseException as e:
                advance = (step.throw, e)
            else:
                advance = (step.send, sent)
