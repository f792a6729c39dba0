"""Codex CLI's standalone web search, `POST /v1/alpha/search` (and `/alpha/search`, for a base URL
without /v1), and the answer to Codex's WebSocket attempt on `GET /v1/responses`. HTTP only: the
protocol is hub/protocols/codex/.

The search answer is always `200 {"output": "<text>"}`, also for a body that cannot be read, a
failed engine or a spent budget: Codex hands the model `output` verbatim and shows the user's
web_search item as completed whatever the status, so a failure is only ever seen if the text says
it. The one exception is authentication: a missing or wrong key is the gateway's usual 401 (from
the middleware, routes/app.py), which Codex hands to the model as "http 401 …" text, so the user
learns the key is wrong instead of getting silently empty searches.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket

from hub.core.errors import GatewayError
from hub.protocols.codex import Parts, answer

from .common import (
    ClientGone,
    caller,
    cancel_on_disconnect,
    headers_of,
    openai_error,
    read_json,
    request_id_var,
    runtime,
)

log = logging.getLogger("searchhub.codex")
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


async def alpha_search(request: Request) -> Response:
    rt = runtime(request)
    try:
        body = await read_json(request, rt.config.server.max_body_bytes)
    except ClientGone as e:
        return openai_error(e)
    except GatewayError as e:  # not JSON, not an object, too large: said in the output, as every failure is
        return JSONResponse({"output": f"searchhub could not read this web.run call: {e.message}."})
    key, bill = caller(request)
    parts = Parts(rt.metered(key, bill), rt.direct_fetch, rt.store, rt.config.responses_ttl_s, rt.reader,
                  rt.config.web_search.limits.read_pages)
    try:
        output = await cancel_on_disconnect(request, answer(body, parts))
    except ClientGone as e:
        return openai_error(e)
    except Exception:
        log.exception("codex web search call failed")
        output = (f"searchhub failed on this web.run call (an internal error, logged with request id "
                  f"{request_id_var.get()}); the search may work if tried again.")
    return JSONResponse({"output": output})


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
    Route("/v1/alpha/search", alpha_search, methods=["POST"]),
    Route("/alpha/search", alpha_search, methods=["POST"]),
    Route("/v1/responses", responses_get, methods=["GET"]),
    WebSocketRoute("/v1/responses", responses_websocket),
]
