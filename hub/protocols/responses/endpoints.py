"""OpenAI Responses: POST /v1/responses, GET and DELETE /v1/responses/{id}.

Decode -> either pass the request through to a commercial OpenAI target untouched, or translate to
chat (after the stored history of `previous_response_id`, with `item_reference` input items replaced
by the stored items they name), run the turn, and encode a Response or its SSE events. With
`store` (the default) the Response, the chat history that continues it and its output items by id
are kept in the state store (stored.py) before the client sees the last event.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator

from hub.core.errors import NotFound
from hub.routing import passthrough
from hub.routing.router import Resolution

from ..chat.errors import openai_error
from ..errors import stream_broke, traced_failure
from ..serving import SSE_HEADERS, Answer, Call, Endpoint, ProtocolKind, Runtime, Stream
from . import stored as stored_responses
from .output import from_chat, new_id
from .request import ResponsesContext, translate, wants_thinking
from .stream import ResponsesStream, sse
from .wire import decode_request

log = logging.getLogger("searchhub.responses")


# --- commercial OpenAI targets: untouched ----------------------------------------------------------


async def _passthrough(rt: Runtime, body: dict, resolution: Resolution) -> Answer | Stream:
    """A commercial OpenAI target: the request goes through untouched (hub/routing/passthrough.py)."""
    stream = body.get("stream") is True
    fwd = passthrough.Forward("/responses", stream, broken=_broken)
    result = await passthrough.forward(rt.client, rt.dispatcher, resolution, body, fwd)
    if isinstance(result, dict):
        return Answer(result)
    # A stream the graceful shutdown cuts short ends like a broken one; the blank line first ends
    # an event the provider's bytes left open (they go out a whole line at a time, passthrough._ended).
    return Stream(result, lambda message: b"\n" + _broken(message), SSE_HEADERS)


def _broken(message: str) -> bytes:
    """The `error` event a pass-through stream that breaks after it started ends with."""
    traced_failure(message)
    return sse({"type": "error", "sequence_number": 0, "code": "server_error", "message": message, "param": None})


# --- endpoints ---------------------------------------------------------------------------------------


def _describe(exc: BaseException) -> tuple[str, str]:
    """(error.code, message) for `response.failed` when a stream breaks after it started."""
    err = stream_broke(exc, log, "responses stream")
    return ("rate_limit_exceeded" if err.status == 429 else "server_error"), err.message


async def _events(rt: Runtime, ctx: ResponsesContext, items: AsyncGenerator,
                  encoder: ResponsesStream) -> AsyncIterator[bytes]:
    async def before_end(response: dict) -> None:
        if ctx.store and response["status"] != "failed":
            await stored_responses.save(rt.store, rt.config.responses_ttl_s, response, ctx)

    async for data in encoder.encode(items, before_end=before_end, describe_error=_describe):
        yield data


async def create(rt: Runtime, call: Call) -> Answer | Stream:
    body = call.json
    model = body.get("model")
    native = rt.router.serving(model, "openai", thinking=wants_thinking(body)) if isinstance(model, str) and model else None
    if native is not None:
        return await _passthrough(rt, body, native)
    decoded = decode_request(body)  # a malformed request is a 400 before the store is asked
    history = await stored_responses.history(rt.store, decoded.fields.previous_response_id)
    decoded = await stored_responses.resolve_references(rt.store, decoded, rt.config.responses_ttl_s)
    chat, ctx = translate(decoded, history=history)
    opts = call.options()
    opts.hosted = ctx.hosted
    if opts.force_search is None and ctx.force_search:
        opts.force_search = True
        opts.force_call = True
    if ctx.stream:
        # cut short by the graceful shutdown, it ends with `response.failed`
        encoder = ResponsesStream(ctx)
        return Stream(_events(rt, ctx, await rt.pipeline.stream(chat, opts), encoder), encoder.interrupted,
                      SSE_HEADERS)
    outcome = await rt.pipeline.complete(chat, opts)
    response = from_chat(outcome, ctx, response_id=new_id("resp"))
    if ctx.store:
        await stored_responses.save(rt.store, rt.config.responses_ttl_s, response, ctx)
    return Answer(response)


async def _stored(rt: Runtime, response_id: str) -> stored_responses.Stored:
    stored = await stored_responses.load(rt.store, response_id)
    if stored is None:
        raise NotFound(f"No response found with id '{response_id}'.", param="response_id")
    return stored


async def retrieve(rt: Runtime, call: Call) -> Answer:
    return Answer((await _stored(rt, call.path_params["response_id"])).response)


async def delete(rt: Runtime, call: Call) -> Answer:
    response_id = call.path_params["response_id"]
    await stored_responses.delete(rt.store, response_id, await _stored(rt, response_id))
    return Answer({"id": response_id, "object": "response", "deleted": True})


PROTOCOL = ProtocolKind(
    name="responses",
    endpoints=(
        Endpoint("POST", ("/v1/responses",), create, "responses request", direct=True),
        Endpoint("GET", ("/v1/responses/{response_id}",), retrieve, "retrieving a response", body=False,
                 watched=False),
        Endpoint("DELETE", ("/v1/responses/{response_id}",), delete, "deleting a response", body=False,
                 watched=False),
    ),
    error=openai_error,
)
