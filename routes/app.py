"""The Starlette application: wires endpoints, middleware and the gateway lifecycle."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable
from types import FrameType

import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.server import Server as UvicornServer

from hub import config as cfgmod
from hub.access.keys import match_key, presented_key
from hub.config.keys import ANONYMOUS, ApiKey
from hub.config.proxy import mask_proxy
from hub.core.errors import GatewayError
from hub.observability import metrics
from hub.observability.logformat import money
from hub.observability.requests import LEDGER
from hub.observability.trace import Trace, client_family, current_trace, ms
from hub.protocols.errors import SHUTTING_DOWN, shutting_down
from hub.protocols.registry import PROTOCOLS
from hub.protocols.serving import ProtocolKind
from hub.runtime import Gateway, Shared
from hub.search.metered import SearchBill
from hub.upstream.reachability import Reachability

from . import admin, websocket
from .admin import is_admin_path
from .common import (
    STREAM_SCOPE_KEY,
    TRACE_SCOPE_KEY,
    headers_of,
    new_request_id,
    request_id_var,
    runtime,
)
from .mcp import McpEndpoint
from .protocols import direct_paths, error_response, protocol_routes

log = logging.getLogger("searchhub.http")
GC_YOUNG = 10_000  # collect the young generation after this many new containers; see create_app
_OPEN_PATHS = frozenset({"/health", "/metrics"})


def api_prefixes(kinds: tuple[ProtocolKind, ...]) -> tuple[str, ...]:
    """The gateway's API paths: /v1/ and the first segment of every path a protocol serves
    ("/anthropic/", "/alpha/", "/api/"). A POST to one is a model or search call (traced, drained),
    and each request to one (and to /mcp) is counted on /metrics and in the access log."""
    firsts = {"/" + path.split("/")[1] + "/" for kind in kinds for ep in kind.endpoints for path in ep.paths}
    return tuple(sorted(firsts | {"/v1/"}))


def _endpoint_name(path: str) -> str:
    """A declared path's endpoint name: its last part, Codex's standalone search as alpha/search (its
    own, beside /v1/search), Ollama's web API as api/web_search and api/web_fetch."""
    if path.startswith("/api/"):
        return path[1:]
    return "alpha/search" if "/alpha/" in path else path.rsplit("/", 1)[-1]


class EndpointNames:
    """The endpoint a request is counted on /metrics, logged and traced under: the name of the
    endpoint a protocol declares for its path (`_endpoint_name`; a path parameter's as
    "<name>/{id}", e.g. responses/{id}), the app's own (models, mcp), and "other" for every path
    nobody declared, so a scanner's made-up paths add no series to /metrics."""

    OTHER = "other"

    def __init__(self, kinds: tuple[ProtocolKind, ...]) -> None:
        self.exact: dict[str, str] = {"/v1/models": "models", "/mcp": "mcp"}
        self.templated: list[tuple[str, str]] = []  # (the path up to its parameter, name)
        for path in (path for kind in kinds for ep in kind.endpoints for path in ep.paths):
            if "{" in path:
                prefix = path[: path.index("{")]
                self.templated.append((prefix, _endpoint_name(prefix.rstrip("/")) + "/{id}"))
            else:
                self.exact[path] = _endpoint_name(path)

    def __call__(self, path: str) -> str:
        name = self.exact.get(path)
        if name is not None:
            return name
        for prefix, name in self.templated:  # one segment after the prefix, as Starlette matches it
            if path.startswith(prefix) and len(path) > len(prefix) and "/" not in path[len(prefix):]:
                return name
        return self.OTHER


class GatewayMiddleware:
    """Request id on every response and log line, gateway auth, request metrics. Plain ASGI: a
    BaseHTTPMiddleware would cost more per request than the rest of the relay."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = headers_of(scope)
        rid = headers.get("x-request-id", "")[:128] or new_request_id()
        token = request_id_var.set(rid)
        rid_header = (b"x-request-id", rid.encode("latin-1"))
        path = scope["path"]
        started = time.perf_counter()
        status_box = [0]
        trace: Trace | None = None
        family = ""  # a model call's client family (from its User-Agent)
        sink: Shared | None = None  # where a model call's own record goes, with its batch
        bill = SearchBill()

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = message["status"]
                extra = [rid_header]
                if bill.searches or bill.denied:  # searches that ran before the answer started
                    extra.append((COST_HEADER, money(bill.cost).encode()))
                if bill.denied and path == "/mcp":  # the tool error says it too; this is for HTTP tooling
                    extra.append((b"retry-after", str(bill.denied.retry_after).encode()))
                message["headers"] = [*message.get("headers", []), *extra]
            elif trace is not None and trace.ttft_ms is None and message.get("body"):
                trace.ttft_ms = ms(time.perf_counter() - started)
                if status_box[0] >= 400:
                    trace.error = error_message(message["body"])
            await send(message)

        app: GatewayApp = scope["app"]
        api = path.startswith(app.api_prefixes)
        model_call = api and scope["method"] == "POST"
        # what it is counted, logged and traced as (None: not an API request, not counted)
        endpoint = app.endpoint_names(path) if api or path == "/mcp" else None
        gateway: Gateway = app.gateway
        drain: Drain = app.drain
        shared = gateway.runtime.shared if gateway.runtime else None
        key: ApiKey | None = None
        entry: _InFlight | None = None
        trace_token = current_trace.set(None)
        try:
            keys = gateway.runtime.config.server.api_keys if gateway.runtime else ()
            if keys and path not in _OPEN_PATHS and not is_admin_path(path):
                key = match_key(presented_key(headers), keys)
                if key is None:
                    await _unauthorized(path, send_with_id, app.protocols)
                    return
            if path not in _OPEN_PATHS:
                if model_call and drain.draining:  # the process is going away: a retry goes elsewhere
                    await _shutting_down(path, app.protocols)(scope, receive, send_with_id)
                    return
                entry = drain.enter(scope, status_box, model_call)
            state = scope.setdefault("state", {})
            state["api_key"] = key
            state["search_bill"] = bill
            if model_call and shared is not None:
                family, sink = _family(headers), shared
                if shared.traces.enabled or shared.telemetry.enabled:
                    trace = Trace(rid, time.time(), "chat" if endpoint == "completions" else endpoint,
                                  client=family, key=key.name if key else None)
                    scope[TRACE_SCOPE_KEY] = trace
                    current_trace.set(trace)  # reset with trace_token, in the finally below
            try:
                await self.app(scope, receive, send_with_id)
            except asyncio.CancelledError:
                # Drain cut a model request that had not answered yet at the end of the grace (and
                # nobody else cancelled it): the 503 a retry takes elsewhere, not a dropped connection
                if entry is None or not entry.cut or status_box[0] or asyncio.current_task().uncancel():
                    raise
                await _shutting_down(path, app.protocols)(scope, receive, send_with_id)
        finally:
            current_trace.reset(trace_token)
            if entry is not None:
                drain.leave(entry)
            elapsed = time.perf_counter() - started
            if trace is not None:
                trace.status = status_box[0]
                trace.total_ms = ms(elapsed)
                trace.search_cost = bill.cost if bill.searches else trace.search_cost
            if endpoint is not None:  # a model call's trace is kept with its batch (Shared.finished)
                LEDGER.finished(endpoint, status_box[0], elapsed, scope["method"], path,
                                key.name if key else ANONYMOUS, bill.searches, bill.cost, trace, sink, family)
            request_id_var.reset(token)


_FAMILY_OF: dict[tuple[str | None, str | None], str] = {}


def _family(headers: dict[str, str]) -> str:
    """The client family of a model call (hub/observability/trace.py's client_family), for its trace and
    the per-client metrics. A client sends the same user agent on every call: classified once."""
    ua, originator = headers.get("user-agent"), headers.get("originator")
    family = _FAMILY_OF.get((ua, originator))
    if family is None:
        family = client_family(ua, originator)
        if len(_FAMILY_OF) < 1024:
            _FAMILY_OF[(ua, originator)] = family
    return family


def error_message(body: bytes) -> str:
    """The message of an error response (OpenAI, Anthropic or Ollama shape), for the trace."""
    try:
        data = msgspec.json.decode(body[:65536])
    except msgspec.DecodeError:
        return "error"
    err = data.get("error") if isinstance(data, dict) else None
    msg = err.get("message") if isinstance(err, dict) else err
    return msg[:300] if isinstance(msg, str) and msg else "error"


COST_HEADER = b"x-searchhub-search-cost"


UNAUTHORIZED = "invalid or missing API key (send 'Authorization: Bearer <key>' or 'x-api-key')"


async def _unauthorized(path: str, send: Send, kinds: tuple[ProtocolKind, ...]) -> None:
    """A 401 in the shape of the protocol that owns the path."""
    err = GatewayError(UNAUTHORIZED, status=401, type="invalid_request_error", code="invalid_api_key",
                       headers={"www-authenticate": "Bearer"})
    response = error_response(path, err, kinds)
    payload = response.body
    await send({"type": "http.response.start", "status": 401, "headers": response.raw_headers})
    await send({"type": "http.response.body", "body": payload})


async def health(request: Request) -> Response:
    """200 whether or not the upstreams can be reached (`status` says it): a load balancer must not
    take every replica out at once because the model servers behind them are down. 503 "draining"
    from the shutdown signal on (Drain), at once: this process is going away."""
    drain: Drain = request.app.drain
    if drain.draining:
        return JSONResponse(drain.report(), status_code=503)
    gw: Gateway = request.app.gateway
    rt = runtime(request)
    cfg = rt.config
    probes = request.app.reachability
    if probes is None:  # one per process, made on the first /health (a test may put its own first)
        probes = request.app.reachability = Reachability()
    reach = await probes.report(cfg, getattr(rt.client, "proxies", None))
    return JSONResponse({
        "status": reach["status"],  # "ok", or "degraded" when some route has no reachable target
        "reasons": reach["reasons"],
        "reachability": {"routes": reach["routes"], "cacheSeconds": probes.ttl_s,
                         "probeTimeoutSeconds": probes.timeout_s},
        "pid": os.getpid(),  # which process answered: with --workers N, each worker answers for itself
        "config": {
            "path": cfg.path,
            "hash": cfg.raw_hash,
            "loadedAt": gw.loaded_at,
            "lastReloadAttempt": gw.last_reload_attempt,
            "lastReloadError": gw.last_reload_error,
        },
        "routes": {name: [t.key for p in pools for t in p.targets] for name, pools in cfg.router.routes.items()},
        "providers": {pid: {"type": p.type, "selfHosted": p.self_hosted,
                            **({"proxy": mask_proxy(p.proxy)} if p.proxy else {}),
                            **reach["providers"][pid]}  # reachable, url (masked), reason, checkedAt
                      for pid, p in cfg.providers.items()},
        "cooldowns": rt.router.cooldowns.snapshot(),
        "inFlight": rt.shared.gate.snapshot(),
        "state": rt.store.health(),
    })


async def metrics_endpoint(request: Request) -> Response:
    LEDGER.flush()  # the requests of the last moments (hub/observability/requests.py)
    request.app.gateway.observe_state()
    return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")


async def models(request: Request) -> Response:
    rt = runtime(request)
    for kind in request.app.protocols:  # a protocol's own listing, for its clients (Anthropic's: anthropic-version)
        if kind.models is not None and kind.models.header in request.headers:
            return JSONResponse(kind.models.listing(rt))
    now = int(request.app.gateway.loaded_at)
    data = [{"id": name, "object": "model", "created": now, "owned_by": "searchhub"} for name in rt.router.models()]
    return JSONResponse({"object": "list", "data": data})


async def _http_error(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 404)
    if status == 405:
        msg = f"method {request.method} not allowed on {request.url.path}"
    else:
        msg = f"no such endpoint: {request.method} {request.url.path}"
    etype = "not_found_error" if status == 404 else "invalid_request_error"
    return error_response(request.url.path, GatewayError(msg, status=status, type=etype), request.app.protocols)


async def _internal_error(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error")
    return error_response(request.url.path, GatewayError("internal error", status=500, type="api_error"),
                          request.app.protocols)


class GatewayApp(Starlette):
    """Starlette, with the model endpoints (POST on a fixed path) dispatched straight to their
    handler inside GatewayMiddleware: no ServerErrorMiddleware, ExceptionMiddleware, route
    matching or endpoint wrapper on the path every model call takes (together ~15 % of a relayed
    request's CPU; bench/README.md, "History"). Every other request takes Starlette's stack."""

    def __init__(self, *, gateway: Gateway, drain: Drain, protocols: tuple[ProtocolKind, ...], **kwargs) -> None:
        super().__init__(**kwargs)
        # The parts every request reads, as plain attributes: Starlette's `app.state` answers each
        # read through __getattr__ after a failed lookup that builds an AttributeError first (~2,000
        # instructions a read, four reads a request in the middleware alone; bench/README.md).
        self.gateway = gateway
        self.drain = drain
        self.protocols = protocols
        self.api_prefixes = api_prefixes(protocols)
        self.endpoint_names = EndpointNames(protocols)
        self.reachability: Reachability | None = None  # made by the first /health (a test may put its own)
        direct = direct_paths(protocols)
        self.direct: dict[str, GatewayMiddleware] = {
            r.path: GatewayMiddleware(_endpoint_app(r.endpoint))
            for r in self.routes
            if isinstance(r, Route) and r.methods and "POST" in r.methods and r.path in direct}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            direct = self.direct.get(scope["path"])
            if direct is not None:
                scope["app"] = self
                await direct(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


DIRECT_PATHS = direct_paths()  # the protocols' model calls (hub/protocols/serving.py, Endpoint.direct)


def _endpoint_app(endpoint) -> ASGIApp:
    """A request handler as an ASGI app. The handlers answer their own errors in their protocol's
    shape; anything that still escapes answers like Starlette's error middleware would (a 500 in
    the protocol's shape, logged with its traceback)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive, send)
        try:
            response = await endpoint(request)
        except Exception as e:
            response = await _internal_error(request, e)
        await response(scope, receive, send)

    return app


def _shutting_down(path: str, kinds: tuple[ProtocolKind, ...]) -> Response:
    """A model request the graceful shutdown turns away or cuts short: 503 in the protocol's shape
    (529 overloaded_error on Anthropic's), with retry-after, and the connection closed after it so
    that a proxy's next request takes a new connection, to another replica."""
    response = error_response(path, shutting_down(), kinds)
    response.headers["x-should-retry"] = "true"
    response.headers["connection"] = "close"
    return response


CUT_MARGIN_S = 0.5  # requests still running this long before the grace ends are ended (at most half the grace)
_SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class _InFlight:
    """One request in flight, as Drain sees it."""

    __slots__ = ("task", "scope", "status", "model_call", "cut")

    def __init__(self, task: asyncio.Task | None, scope: Scope, status: list[int], model_call: bool) -> None:
        self.task, self.scope, self.status, self.model_call = task, scope, status, model_call
        self.cut = False  # Drain cancelled it before it answered


class Drain:
    """The graceful shutdown (docs/deployment.md, "Graceful shutdown"). Uvicorn's own, on SIGTERM,
    closes every connection it can at once and, when `timeout_graceful_shutdown` ends, cancels what
    still runs: a stream is then a dropped connection, which the SDKs report as a connection error.

    This stands in front of uvicorn's signal handlers (installed around the app's life, so the
    lifespan finds them). On the first SIGTERM or SIGINT the process drains: the listening socket
    closes (new connections are refused), /health answers 503 "draining" and new model requests a
    protocol-shaped 503 on the connections already open, and the requests in flight run on. When
    none is left, or `CUT_MARGIN_S` before `server.shutdownGraceMs` ends, each stream still open
    ends with its protocol's error event (EventStream.interrupt) and each model request that has
    not answered gets the 503; then uvicorn's shutdown runs with what is left of the grace. A second
    signal cuts at once."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.draining = False
        self.since: float | None = None  # when the signal came (epoch seconds)
        self.grace_s = 0.0
        self.requests: set[_InFlight] = set()  # every request but /health and /metrics
        self._server: UvicornServer | None = None
        self._handlers: dict[int, Callable[[int, FrameType | None], None]] = {}  # uvicorn's, by signal
        self._loop: asyncio.AbstractEventLoop | None = None
        self._changed: asyncio.Event | None = None  # set when the last request left
        self._hurry = False
        self._handed_over = False
        self._task: asyncio.Task | None = None

    # --- requests -------------------------------------------------------------------------------

    def enter(self, scope: Scope, status: list[int], model_call: bool) -> _InFlight:
        loop = self._loop  # asyncio.current_task() without a loop asks the OS for the pid first (Python 3.11)
        entry = _InFlight(asyncio.current_task(loop) if loop is not None else asyncio.current_task(), scope, status,
                          model_call)
        self.requests.add(entry)
        return entry

    def leave(self, entry: _InFlight) -> None:
        self.requests.discard(entry)
        if not self.requests and self._changed is not None:
            self._changed.set()

    def report(self) -> dict:
        return {"status": "draining",
                "reasons": ["the process is shutting down: new requests go to another replica"],
                "pid": os.getpid(),
                "draining": {"since": self.since, "graceMs": round(self.grace_s * 1000),
                             "requestsInFlight": len(self.requests)}}

    # --- signals --------------------------------------------------------------------------------

    def install(self) -> None:
        """Stand in front of uvicorn's handlers for SIGTERM and SIGINT (signals reach the main
        thread only; a server run some other way keeps its own behaviour)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in _SHUTDOWN_SIGNALS:
            handler = signal.getsignal(sig)
            server = getattr(handler, "__self__", None)
            if isinstance(server, UvicornServer) and callable(handler):
                self._server = server
                self._handlers[sig] = handler
                signal.signal(sig, self._signalled)
        if self._handlers:
            self._loop = asyncio.get_running_loop()

    def uninstall(self) -> None:
        for sig, handler in self._handlers.items():
            if signal.getsignal(sig) == self._signalled:
                signal.signal(sig, handler)

    def _signalled(self, sig: int, frame: FrameType | None) -> None:
        """The signal handler: runs in the main thread between two bytecodes, so it only sets flags
        and hands the work to the event loop."""
        assert self._loop is not None
        if not self.draining:
            self.draining = True  # /health and new model requests see it at once
            self.since = time.time()
            self._loop.call_soon_threadsafe(self._begin, sig)
        elif not self._handed_over:
            self._hurry = True
            self._loop.call_soon_threadsafe(self._wake)
        else:  # uvicorn's shutdown runs: its handler decides (a further SIGINT forces the exit)
            self._handlers[sig](sig, frame)

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()

    def _begin(self, sig: int) -> None:
        self._changed = asyncio.Event()
        self._task = asyncio.ensure_future(self._run(sig))

    async def _run(self, sig: int) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time()
        try:
            rt = self.gateway.runtime
            self.grace_s = rt.config.server.shutdown_grace_s if rt is not None else 0.0
            end += self.grace_s
            for server in getattr(self._server, "servers", ()):
                server.close()  # stop listening: new connections are refused, open ones are served
            log.info("%s: draining %d request(s) for at most %d ms; new connections are refused",
                     signal.Signals(sig).name, len(self.requests), round(self.grace_s * 1000))
            await self._settle(end - min(CUT_MARGIN_S, self.grace_s / 2))
            if self.requests:
                self._cut()
                await self._settle(end)
        finally:  # whatever happened above, uvicorn's shutdown runs
            # (it closes the connections, waits, cancels what is left and ends the lifespan) with
            # what is left of the grace
            assert self._server is not None
            self._server.config.timeout_graceful_shutdown = max(0.0, end - loop.time())  # type: ignore[assignment]
            self._handed_over = True
            self._handlers[sig](sig, None)

    async def _settle(self, until: float) -> None:
        """Until no request is in flight, a second signal, or the loop's time `until`."""
        assert self._changed is not None
        loop = asyncio.get_running_loop()
        while self.requests and not self._hurry and (left := until - loop.time()) > 0:
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)

    def _cut(self) -> None:
        """End what still runs: streams with their protocol's error event, model requests that have
        not answered with the 503 (the middleware answers it); the rest is uvicorn's to cut."""
        streams = waiting = 0
        for entry in list(self.requests):
            stream = entry.scope.get(STREAM_SCOPE_KEY)
            if stream is not None:
                stream.interrupt(SHUTTING_DOWN)
                streams += 1
            elif entry.model_call and not entry.status[0] and entry.task is not None:
                entry.cut = True
                entry.task.cancel()
                waiting += 1
        log.warning("the shutdown grace ends: %d stream(s) end with their protocol's error event, %d request(s) "
                    "get 503", streams, waiting)


def create_app(config_path: str, config: cfgmod.Config | None = None,
               protocols: tuple[ProtocolKind, ...] = PROTOCOLS) -> GatewayApp:
    """The gateway's ASGI app: every protocol of `protocols` (all of hub/protocols/ by default), the
    admin pages, MCP, health and metrics."""
    gateway = Gateway(config_path, config)
    drain = Drain(gateway)
    mcp = McpEndpoint(gateway)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await gateway.start()
        # Everything loaded so far lives as long as the process: keep it out of the collector's
        # full passes, which otherwise show up as 20-30 ms latency spikes (bench/README.md).
        gc.collect()
        gc.freeze()
        # A request makes and frees a few thousand containers: at the default 700 the young
        # generation is collected several times per request, and every tenth of those examines the
        # older objects too (traces, caches) -- 6-7 % of the CPU under load. 10,000 still collects
        # a request's cyclic garbage within a few requests (bench/README.md, "History").
        gc.set_threshold(GC_YOUNG, *gc.get_threshold()[1:])
        drain.install()
        try:
            async with mcp.running():
                yield
        finally:
            drain.uninstall()
            LEDGER.flush()  # the last requests' traces, before the trace store's last copy
            await gateway.stop()
            LEDGER.flush()
            metrics.process_exit()

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        *protocol_routes(protocols),
        *admin.routes,
        *websocket.routes,
        Route("/mcp", mcp),
    ]
    app = GatewayApp(routes=routes, lifespan=lifespan, gateway=gateway, drain=drain, protocols=protocols,
                     exception_handlers={404: _http_error, 405: _http_error, Exception: _internal_error})
    app.add_middleware(GatewayMiddleware)
    return app
