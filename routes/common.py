"""Shared HTTP plumbing: body decoding, protocol-shaped errors, auth, request ids, cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from hub.backends.http import UpstreamError
from hub.dispatch import AllTargetsFailed
from hub.errors import GatewayError, PayloadTooLarge
from hub.events import Options
from hub.ids import new_id
from hub.keys import ApiKey
from hub.logctx import RequestContextFilter, chain_id_var, request_id_var  # noqa: F401 (re-exported)
from hub.router import UnknownTarget
from hub.runtime import Runtime
from hub.search.metered import SearchBill

from .body import decode_body

T = TypeVar("T")
_decode = msgspec.json.decode
_encode = msgspec.json.encode


def runtime(request: Request) -> Runtime:
    rt = request.app.state.gateway.runtime
    assert rt is not None
    return rt


def new_request_id() -> str:
    return new_id("req")


async def read_json(request: Request, max_bytes: int) -> dict:
    """The body as a JSON object, or a 400/413 that says what is wrong."""
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > max_bytes:
        raise PayloadTooLarge(f"request body is {length} bytes; the limit is {max_bytes}", code="request_too_large")
    chunks = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise PayloadTooLarge(f"request body exceeds the limit of {max_bytes} bytes", code="request_too_large")
        chunks.append(chunk)
    return decode_body(b"".join(chunks))


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
    auth = request.headers.get("authorization", "")
    return request.headers.get("x-api-key") or auth.removeprefix("Bearer ").strip()


TRACE_SCOPE_KEY = "searchhub.trace"  # the request's Trace, put into the ASGI scope by the middleware


def options(request: Request, body: dict) -> Options:
    trace = request.scope.get(TRACE_SCOPE_KEY)
    if trace is not None:
        trace.stream = body.get("stream") is True
        trace.model = body.get("model") if isinstance(body.get("model"), str) else None
    key, bill = caller(request)
    return Options(
        force_search=search_override(body, request.headers),
        chain_id=request.headers.get("x-searchhub-chain") or None,
        client_key=client_key(request),
        trace=trace,
        key=key,
        bill=bill,
        client_agent=request.headers.get("user-agent", ""),
    )


def caller(request: Request) -> tuple[ApiKey | None, SearchBill]:
    """The API key the request presented (None on a gateway without keys) and its search bill,
    both set by GatewayMiddleware (routes/app.py)."""
    state = request.scope.get("state") or {}
    bill = state.get("search_bill")
    return state.get("api_key"), bill if bill is not None else SearchBill()


# ---------------------------------------------------------------- errors


def expected_error(e: Exception) -> bool:
    """A failure the gateway answers on purpose (logged as a warning, not with a traceback)."""
    return isinstance(e, GatewayError | AllTargetsFailed | UpstreamError | UnknownTarget)


def as_gateway_error(exc: Exception) -> GatewayError:
    """Map anything the pipeline raises to a client-safe GatewayError."""
    if isinstance(exc, GatewayError):
        return exc
    if isinstance(exc, UnknownTarget):
        return GatewayError(f"unknown pinned model '{exc}'", status=404, type="invalid_request_error",
                            code="model_not_found", param="model")
    if isinstance(exc, AllTargetsFailed):
        status = exc.status
        return GatewayError(
            f"all upstream targets of route '{exc.route}' failed: "
            + "; ".join(f"{a.target}: {a.reason}" for a in exc.attempts),
            status=status,
            type="server_error",
            code="upstream_unavailable",
            headers={"retry-after": "5"} if status == 503 else {},
            detail={"attempts": [a.as_dict() for a in exc.attempts]},
        )
    if isinstance(exc, UpstreamError):
        if exc.kind is not None:  # about the request, whatever status the backend chose
            what = "the prompt does not fit the model's context" if exc.kind == "context_overflow" \
                else "the backend rejected the request"
            return GatewayError(f"{what} (HTTP {exc.status}): {exc.message}" if exc.message else what,
                                status=400, type="invalid_request_error",
                                code="context_length_exceeded" if exc.kind == "context_overflow" else "upstream_rejected")
        return GatewayError(exc.reason, status=exc.status or 502, type="server_error", code="upstream_error")
    return GatewayError("internal error", status=500, type="server_error")


def upstream_client_error(exc: UpstreamError) -> Response | None:
    """A 4xx the backend gave for the client's request is the client's: return it as it is."""
    if exc.status and 400 <= exc.status < 500 and not exc.retryable and exc.body:
        return Response(exc.body, status_code=exc.status, media_type="application/json")
    return None


def openai_error(exc: Exception) -> Response:
    if isinstance(exc, UpstreamError) and (resp := upstream_client_error(exc)) is not None:
        return resp
    err = as_gateway_error(exc)
    payload: dict = {"error": {"message": err.message, "type": err.type if err.type != "not_found_error"
                               else "invalid_request_error", "param": err.param, "code": err.code}}
    if err.detail:
        payload["error"].update(err.detail)
    headers = dict(err.headers)
    if err.status < 500 and err.status not in (408, 409, 429):
        headers["x-should-retry"] = "false"
    return JSONResponse(payload, status_code=err.status, headers=headers)


def openai_stream_error(exc: Exception) -> bytes:
    err = as_gateway_error(exc)
    kind = err.type if err.status < 500 else "server_error"
    return b"data: " + _encode({"error": {"message": err.message, "type": kind, "param": None,
                                          "code": err.code}}) + b"\n\n"


async def cancel_on_disconnect(request: Request, work: Awaitable[T]) -> T:
    """Run work in this task, cancelling it (and so the upstream call) if the client goes away
    first. One watcher task per request, not two: the work itself runs in the handler's task."""
    me = asyncio.current_task()
    assert me is not None
    receive = request.receive

    async def watch() -> None:
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                me.cancel()
                return

    watcher = asyncio.ensure_future(watch())
    try:
        return await work
    finally:
        watcher.cancel()
