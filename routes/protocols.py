"""Every protocol's endpoints over HTTP (hub/protocols/registry.py finds them): read the body, hand
the handler its Call, watch the client, write the Answer or the Stream, and answer any failure in
the protocol's own error shape. Nothing here knows one protocol from another."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hub.core.errors import GatewayError
from hub.protocols.chat.errors import openai_error
from hub.protocols.errors import expected_error
from hub.protocols.registry import PROTOCOLS, shaping
from hub.protocols.serving import Answer, Call, Endpoint, ProtocolKind, Stream
from hub.streams.relay import DONE

from .common import EventStream, caller, headers_of, options, read_json, runtime, until_disconnect

_encode = msgspec.json.encode


def respond(answer: Answer | Stream) -> Response:
    """An Answer or a Stream as the HTTP response that writes it."""
    if isinstance(answer, Answer):
        body = answer.body if isinstance(answer.body, bytes) else _encode(answer.body)
        return Response(body, status_code=answer.status, media_type="application/json",
                        headers=dict(answer.headers) if answer.headers else None)
    headers = dict(answer.headers) if answer.headers else None
    if answer.relay:
        return RelayStream(answer.chunks, headers=headers, interrupted=answer.interrupted, broken=answer.broken)
    return EventStream(answer.chunks, headers=headers, interrupted=answer.interrupted)


def error_response(path: str, exc: Exception, kinds: tuple[ProtocolKind, ...] = PROTOCOLS) -> Response:
    """A failure the gateway answers before any handler (a 401, 404, 405, 500, the graceful
    shutdown's 503), in the shape of the protocol that owns `path`."""
    return shaped(shaping(path, kinds), exc, None, logging.getLogger("searchhub.http"))


class RelayStream(EventStream):
    """A plain relay's frames written as they come (the chat encoder's rules for framed bytes,
    without a generator in between: one layer less on every chunk)."""

    def __init__(self, chunks, headers=None, *, interrupted=None,
                 broken: Callable[[Exception], bytes] | None = None) -> None:
        super().__init__(chunks, headers, interrupted=interrupted)
        self.broken = broken

    async def _pump(self, send, start) -> bool:
        await start()  # the relay's first frames are ready: no reason to wait
        try:
            async for frames in self.chunks:
                if frames.endswith(DONE):  # the last write: it ends the body too
                    await send({"type": "http.response.body", "body": frames, "more_body": False})
                    return True
                await send({"type": "http.response.body", "body": frames, "more_body": True})
        except Exception as e:
            if self.broken is None:
                raise
            await send({"type": "http.response.body", "body": self.broken(e), "more_body": True})
            return False
        await send({"type": "http.response.body", "body": DONE, "more_body": False})
        return True


class _Reader:
    """What a Call reads from its Starlette request (hub/protocols/serving.py `RequestReader`)."""

    path_params = staticmethod(lambda request: request.path_params)
    query = staticmethod(lambda request: request.scope.get("query_string", b"").decode("latin-1"))
    headers = staticmethod(lambda request: headers_of(request.scope))
    options = staticmethod(options)
    caller = staticmethod(caller)


READER = _Reader()


def endpoint(kind: ProtocolKind, ep: Endpoint) -> Callable[[Request], Awaitable[Response]]:
    log = logging.getLogger(f"searchhub.{kind.name}")
    handle, watched, reads = ep.handle, ep.watched, ep.body

    async def serve(request: Request) -> Response:
        call: Call | None = None
        try:
            rt = runtime(request)
            body = await read_json(request, rt.config.server.max_body_bytes) if reads else None
            call = Call(body, request, READER)
            # Watched from here on: a client that leaves before the answer (or a stream's first
            # content) cancels the work, which closes the upstream request and frees its slot.
            answer = await (until_disconnect(request.receive, handle(rt, call)) if watched else handle(rt, call))
            return respond(answer)
        except Exception as e:  # every failure answers in the protocol's error shape
            if not expected_error(e):
                log.exception("%s failed", ep.what)
            return shaped(kind, e, call, log)

    serve.__name__ = serve.__qualname__ = f"{kind.name}_{ep.what.replace(' ', '_')}"
    return serve


def shaped(kind: ProtocolKind, exc: Exception, call: Call | None, log: logging.Logger) -> Response:
    """`exc` in the protocol's error shape; if its `error` fails too (a plug-in's bug), a plain 500 in
    OpenAI's shape rather than an unanswered request."""
    try:
        return respond(kind.error(exc, call))
    except Exception:
        log.exception("the %s protocol's error answer failed", kind.name)
        return respond(openai_error(GatewayError("internal error", status=500, type="server_error")))


def protocol_routes(kinds: tuple[ProtocolKind, ...] = PROTOCOLS) -> list[Route]:
    return [Route(path, endpoint(kind, ep), methods=[ep.method])
            for kind in kinds for ep in kind.endpoints for path in ep.paths]


def direct_paths(kinds: tuple[ProtocolKind, ...] = PROTOCOLS) -> frozenset[str]:
    """The POST paths every model call takes (routes/app.py serves them without Starlette's stack)."""
    return frozenset(path for kind in kinds for ep in kind.endpoints if ep.direct and ep.method == "POST"
                     for path in ep.paths)
