"""The Starlette application: wires endpoints, middleware and the gateway lifecycle."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import time
from collections.abc import AsyncIterator

import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hub import config as cfgmod
from hub import metrics
from hub.backends.proxy import mask_proxy
from hub.keys import ANONYMOUS, ApiKey, match_key, presented_key
from hub.logformat import DirectLog, access_fields
from hub.reachability import Reachability
from hub.runtime import Gateway
from hub.search.metered import SearchBill
from hub.trace import Trace, client_family, ms

from . import admin, chat, messages, responses, search
from .admin import is_admin_path
from .common import TRACE_SCOPE_KEY, headers_of, new_request_id, request_id_var, runtime
from .mcp import McpEndpoint

log = logging.getLogger("searchhub.http")
access_log = DirectLog("searchhub.http")  # one line per request: the cheap path (hub/logformat.py)
GC_YOUNG = 10_000  # collect the young generation after this many new containers; see create_app
_OPEN_PATHS = frozenset({"/health", "/metrics"})


def _is_anthropic_path(path: str) -> bool:
    return path.startswith("/anthropic/") or path.startswith("/v1/messages")


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
        bill = SearchBill()

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = message["status"]
                extra = [rid_header]
                if bill.searches or bill.denied:  # searches that ran before the answer started
                    extra.append((COST_HEADER, _money(bill.cost).encode()))
                if bill.denied and path == "/mcp":  # the tool error says it too; this is for HTTP tooling
                    extra.append((b"retry-after", str(bill.denied.retry_after).encode()))
                message["headers"] = [*message.get("headers", []), *extra]
            elif trace is not None and trace.ttft_ms is None and message.get("body"):
                trace.ttft_ms = ms(time.perf_counter() - started)
                if status_box[0] >= 400:
                    trace.error = error_message(message["body"])
            await send(message)

        model_call = scope["method"] == "POST" and (path.startswith("/v1/") or path.startswith("/anthropic/"))
        gateway: Gateway = scope["app"].state.gateway
        shared = gateway.runtime.shared if gateway.runtime else None
        key: ApiKey | None = None
        try:
            keys = gateway.runtime.config.server.api_keys if gateway.runtime else ()
            if keys and path not in _OPEN_PATHS and not is_admin_path(path):
                key = match_key(presented_key(headers), keys)
                if key is None:
                    await _unauthorized(path, send_with_id)
                    return
            state = scope.setdefault("state", {})
            state["api_key"] = key
            state["search_bill"] = bill
            if model_call and shared is not None:
                trace = _start_trace(shared, scope, rid, path, key)
            await self.app(scope, receive, send_with_id)
        finally:
            if path.startswith("/v1/") or path.startswith("/anthropic/") or path == "/mcp":
                endpoint = path.rsplit("/", 1)[-1] if not path.startswith("/v1/responses/") else "responses/{id}"
                metrics.child(metrics.REQUESTS, endpoint, str(status_box[0])).inc()
                elapsed = time.perf_counter() - started
                metrics.child(metrics.REQUEST_LATENCY, endpoint).observe(elapsed)
                if access_log.logger.isEnabledFor(logging.INFO):
                    key_name = key.name if key else ANONYMOUS
                    access_log.info(f"{scope['method']} {path} {status_box[0]} {elapsed * 1000:.1f} ms "
                                    f"key={key_name} searches={bill.searches} "
                                    f"search_cost={_money(bill.cost) if bill.cost else '0'}",
                                    access_fields(scope["method"], path, status_box[0], elapsed, key_name,
                                                  bill.searches, bill.cost, trace))
            if trace is not None and shared is not None:
                trace.status = status_box[0]
                trace.total_ms = ms(time.perf_counter() - started)
                trace.search_cost = bill.cost if bill.searches else trace.search_cost
                if shared.traces.enabled:
                    shared.traces.finish(trace)
                shared.telemetry.export(trace)
            request_id_var.reset(token)


_FAMILY_OF: dict[tuple[str | None, str | None], str] = {}


def _start_trace(shared, scope: Scope, rid: str, path: str, key: ApiKey | None) -> Trace | None:
    """The request's trace (also when only telemetry wants it), and the per-client metrics."""
    headers = headers_of(scope)
    ua, originator = headers.get("user-agent"), headers.get("originator")
    family = _FAMILY_OF.get((ua, originator))
    if family is None:  # a client sends the same user agent on every call: classify it once
        family = client_family(ua, originator)
        if len(_FAMILY_OF) < 1024:
            _FAMILY_OF[(ua, originator)] = family
    metrics.child(metrics.CLIENT_REQUESTS, family).inc()
    shared.activity.request()
    if not (shared.traces.enabled or shared.telemetry.enabled):
        return None
    endpoint = path.rsplit("/", 1)[-1]
    trace = Trace(rid, time.time(), "chat" if endpoint == "completions" else endpoint, client=family,
                  key=key.name if key else None)
    scope[TRACE_SCOPE_KEY] = trace
    return trace


def error_message(body: bytes) -> str:
    """The message of an error response (OpenAI or Anthropic shape), for the trace."""
    try:
        data = msgspec.json.decode(body[:65536])
    except msgspec.DecodeError:
        return "error"
    err = data.get("error") if isinstance(data, dict) else None
    msg = err.get("message") if isinstance(err, dict) else None
    return msg[:300] if isinstance(msg, str) and msg else "error"


COST_HEADER = b"x-searchhub-search-cost"


def _money(cost: float) -> str:
    """A cost without float noise: 0.005, 0, 1.25."""
    return f"{cost:.6f}".rstrip("0").rstrip(".") or "0"


async def _unauthorized(path: str, send: Send) -> None:
    if _is_anthropic_path(path):
        body = {"type": "error", "error": {"type": "authentication_error", "message": "invalid or missing API key"}}
    else:
        body = {"error": {"message": "invalid or missing API key (send 'Authorization: Bearer <key>' or 'x-api-key')",
                          "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}
    payload = msgspec.json.encode(body)
    await send({"type": "http.response.start", "status": 401, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
        (b"www-authenticate", b"Bearer")]})
    await send({"type": "http.response.body", "body": payload})


async def health(request: Request) -> Response:
    """200 whether or not the upstreams can be reached (`status` says it): a load balancer must not
    take every replica out at once because the model servers behind them are down."""
    gw: Gateway = request.app.state.gateway
    rt = runtime(request)
    cfg = rt.config
    probes: Reachability | None = getattr(request.app.state, "reachability", None)
    if probes is None:  # one per process, made on the first /health (a test may put its own first)
        probes = request.app.state.reachability = Reachability()
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
    request.app.state.gateway.observe_state()
    return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")


async def models(request: Request) -> Response:
    rt = runtime(request)
    if request.headers.get("anthropic-version"):
        return JSONResponse(messages.anthropic_models(rt))
    now = int(request.app.state.gateway.loaded_at)
    data = [{"id": name, "object": "model", "created": now, "owned_by": "searchhub"} for name in rt.router.models()]
    return JSONResponse({"object": "list", "data": data})


def _error_body(path: str, status: int, etype: str, message: str) -> dict:
    if _is_anthropic_path(path):
        return {"type": "error", "error": {"type": etype, "message": message}}
    return {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error",
                      "param": None, "code": None}}


async def _http_error(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 404)
    if status == 405:
        msg = f"method {request.method} not allowed on {request.url.path}"
    else:
        msg = f"no such endpoint: {request.method} {request.url.path}"
    etype = "not_found_error" if status == 404 else "invalid_request_error"
    return JSONResponse(_error_body(request.url.path, status, etype, msg), status_code=status)


async def _internal_error(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error")
    return JSONResponse(_error_body(request.url.path, 500, "api_error", "internal error"), status_code=500)


class GatewayApp(Starlette):
    """Starlette, with the model endpoints (POST on a fixed path) dispatched straight to their
    handler inside GatewayMiddleware: no ServerErrorMiddleware, ExceptionMiddleware, route
    matching or endpoint wrapper on the path every model call takes (together ~15 % of a relayed
    request's CPU; bench/README.md, "History"). Every other request takes Starlette's stack."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.direct: dict[str, GatewayMiddleware] = {
            r.path: GatewayMiddleware(_endpoint_app(r.endpoint))
            for r in self.routes
            if isinstance(r, Route) and r.methods and "POST" in r.methods and r.path in _DIRECT_PATHS}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            direct = self.direct.get(scope["path"])
            if direct is not None:
                scope["app"] = self
                await direct(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


_DIRECT_PATHS = frozenset({"/v1/chat/completions", "/v1/responses", "/v1/messages", "/anthropic/v1/messages"})


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


def create_app(config_path: str, config: cfgmod.Config | None = None) -> GatewayApp:
    gateway = Gateway(config_path, config)
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
        try:
            async with mcp.running():
                yield
        finally:
            await gateway.stop()
            metrics.process_exit()

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        *chat.routes,
        *admin.routes,
        *responses.routes,
        *messages.routes,
        *search.routes,
        Route("/mcp", mcp),
    ]
    app = GatewayApp(routes=routes, lifespan=lifespan, exception_handlers={
        404: _http_error, 405: _http_error, Exception: _internal_error})
    app.state.gateway = gateway
    app.add_middleware(GatewayMiddleware)
    return app
