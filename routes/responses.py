"""OpenAI Responses: POST /v1/responses, GET and DELETE /v1/responses/{id}.

Decode -> either pass the request through to a commercial OpenAI target untouched, or translate to
chat (after the stored history of `previous_response_id`, with `item_reference` input items replaced
by the stored items they name), run the pipeline, and encode a Response or its SSE events. With
`store` (the default) the Response, the chat history that continues it and its output items by id
are kept in the state store (hub/protocols/responses/stored.py) before the client sees the last event.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hub.core.errors import NotFound
from hub.protocols.responses import (
    ResponsesContext,
    ResponsesStream,
    decode_request,
    from_chat,
    new_id,
    sse,
    translate,
)
from hub.protocols.responses import stored as stored_responses
from hub.protocols.responses.request import wants_thinking
from hub.routing import passthrough
from hub.routing.router import Resolution
from hub.runtime import Runtime

from .common import (
    EventStream,
    cancel_on_disconnect,
    expected_error,
    openai_error,
    options,
    read_json,
    runtime,
    stream_broke,
    traced_failure,
)

log = logging.getLogger("searchhub.responses")
_encode = msgspec.json.encode
_decode = msgspec.json.decode
SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def _json(body: dict, status: int = 200) -> Response:
    return Response(_encode(body), status_code=status, media_type="application/json")


# --- commercial OpenAI targets: untouched ----------------------------------------------------------




async def _passthrough(rt: Runtime, body: dict, resolution: Resolution) -> Response:
    """A commercial OpenAI target: the request goes through untouched (hub/routing/passthrough.py)."""
    stream = body.get("stream") is True
    fwd = passthrough.Forward("/responses", stream, broken=_broken)
    result = await passthrough.forward(rt.client, rt.dispatcher, resolution, body, fwd)
    if isinstance(result, dict):
        return _json(result)
    # A stream the graceful shutdown cuts short ends like a broken one; the blank line first ends
    # an event the provider's bytes left open (they go out a whole line at a time, passthrough._ended).
    return EventStream(result, headers=SSE_HEADERS, interrupted=lambda message: b"\n" + _broken(message))


def _broken(message: str) -> bytes:
    """The `error` event a pass-through stream that breaks after it started ends with."""
    traced_failure(message)
    return sse({"type": "error", "sequence_number": 0, "code": "server_error", "message": message, "param": None})


# --- endpoints ---------------------------------------------------------------------------------------


def _describe(exc: BaseException) -> tuple[str, str]:
    """(error.code, message) for `response.failed` when a stream breaks after it started."""
    err = stream_broke(exc, log, "responses stream")
    return ("rate_limit_exceeded" if err.status == 429 else "server_error"), err.message


def _stream(rt: Runtime, ctx: ResponsesContext, items: AsyncGenerator) -> EventStream:
    """The Responses SSE answer; cut short by the graceful shutdown, it ends with `response.failed`."""
    encoder = ResponsesStream(ctx)
    return EventStream(_events(rt, ctx, items, encoder), headers=SSE_HEADERS,
                       interrupted=encoder.interrupted)


async def _events(rt: Runtime, ctx: ResponsesContext, items: AsyncGenerator,
                  encoder: ResponsesStream) -> AsyncIterator[bytes]:
    async def before_end(response: dict) -> None:
        if ctx.store and response["status"] != "failed":
            await stored_responses.save(rt.store, rt.config.responses_ttl_s, response, ctx)

    async for data in encoder.encode(items, before_end=before_end, describe_error=_describe):
        yield data


async def create_response(request: Request) -> Response:
    try:
        rt = runtime(request)
        body = await read_json(request, rt.config.server.max_body_bytes)
        # Watched from here on: a client that leaves before the answer (or a stream's first content)
        # cancels the work, which closes the upstream request and frees its concurrency slot.
        return await cancel_on_disconnect(request, _create(request, rt, body))
    except Exception as e:  # every failure answers in OpenAI's error shape
        if not expected_error(e):
            log.exception("responses request failed")
        return openai_error(e)


async def _create(request: Request, rt: Runtime, body: dict) -> Response:
    model = body.get("model")
    native = rt.router.serving(model, "openai", thinking=wants_thinking(body)) if isinstance(model, str) and model else None
    if native is not None:
        return await _passthrough(rt, body, native)
    decoded = decode_request(body)  # a malformed request is a 400 before the store is asked
    history = await stored_responses.history(rt.store, decoded.fields.previous_response_id)
    decoded = await stored_responses.resolve_references(rt.store, decoded, rt.config.responses_ttl_s)
    chat, ctx = translate(decoded, history=history)
    opts = options(request, body)
    opts.hosted = ctx.hosted
    if opts.force_search is None and ctx.force_search:
        opts.force_search = True
        opts.force_call = True
    if ctx.stream:
        items = await rt.pipeline.stream(chat, opts)
        return _stream(rt, ctx, items)
    outcome = await rt.pipeline.complete(chat, opts)
    response = from_chat(outcome, ctx, response_id=new_id("resp"))
    if ctx.store:
        await stored_responses.save(rt.store, rt.config.responses_ttl_s, response, ctx)
    return _json(response)


async def get_response(request: Request) -> Response:
    try:
        response_id = request.path_params["response_id"]
        stored = await stored_responses.load(runtime(request).store, response_id)
        if stored is None:
            raise NotFound(f"No response found with id '{response_id}'.", param="response_id")
        return _json(stored.response)
    except Exception as e:
        if not expected_error(e):
            log.exception("retrieving a response failed")
        return openai_error(e)


async def delete_response(request: Request) -> Response:
    try:
        rt = runtime(request)
        response_id = request.path_params["response_id"]
        stored = await stored_responses.load(rt.store, response_id)
        if stored is None:
            raise NotFound(f"No response found with id '{response_id}'.", param="response_id")
        await stored_responses.delete(rt.store, response_id, stored)
        return _json({"id": response_id, "object": "response", "deleted": True})
    except Exception as e:
        if not expected_error(e):
            log.exception("deleting a response failed")
        return openai_error(e)


routes = [
    Route("/v1/responses", create_response, methods=["POST"]),
    Route("/v1/responses/{response_id}", get_response, methods=["GET"]),
    Route("/v1/responses/{response_id}", delete_response, methods=["DELETE"]),
]
