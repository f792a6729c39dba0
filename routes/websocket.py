"""WebSocket: the gateway serves HTTP only. Codex CLI tries a WebSocket on `GET /v1/responses` first;
it is refused with a 426, which makes Codex fall back to HTTP at once (docs/responses.md).
"""

from __future__ import annotations

import logging
from contextvars import ContextVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from .common import headers_of

_DENIED: ContextVar[bool] = ContextVar("searchhub_websocket_denied", default=False)
UVICORN_FALSE_ALARM = "ASGI callable returned without completing handshake."


class _DeniedHandshake(logging.Filter):
    """uvicorn's websockets-sansio protocol logs an ERROR after every WebSocket Denial Response,
    although the denial went out whole (Kludex/uvicorn PR #3138, open when this was written): that
    one record is dropped, and only for a denial of ours (the flag is set in the task that logs it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_DENIED.get() and record.getMessage() == UVICORN_FALSE_ALARM)


logging.getLogger("uvicorn.error").addFilter(_DeniedHandshake())

NO_WEBSOCKET = {"error": {
    "message": "searchhub serves the Responses API over HTTP only (POST /v1/responses, streamed with SSE); "
               "WebSocket is not supported",
    "type": "invalid_request_error", "param": None, "code": "websocket_not_supported"}}


def _is_upgrade(request: Request) -> bool:
    h = headers_of(request.scope)
    return "websocket" in h.get("upgrade", "").lower()


async def responses_get(request: Request) -> Response:
    """GET /v1/responses: a WebSocket upgrade (on a server without a WebSocket library the upgrade
    arrives as a plain GET) is answered 426, which makes Codex fall back to HTTP at once; any other
    GET keeps the 405 the path gave before."""
    if _is_upgrade(request):
        return JSONResponse(NO_WEBSOCKET, status_code=426)
    return JSONResponse({"error": {"message": f"method GET not allowed on {request.url.path}",
                                   "type": "invalid_request_error", "param": None, "code": None}}, status_code=405)


async def responses_websocket(websocket: WebSocket) -> None:
    """Codex's WebSocket attempt on /v1/responses: refused with an HTTP 426 (the ASGI WebSocket
    Denial Response; uvicorn supports it), where a bare close would be a 403 that Codex retries
    about seven times over ~7 s before it falls back to HTTP."""
    _DENIED.set(True)
    try:
        await websocket.send_denial_response(JSONResponse(NO_WEBSOCKET, status_code=426))
    except RuntimeError:  # a server without the extension: the plain refusal (403) is all there is
        await websocket.close()


routes = [
    Route("/v1/responses", responses_get, methods=["GET"]),
    WebSocketRoute("/v1/responses", responses_websocket),
]
