"""OpenAI Responses: POST /v1/responses, GET and DELETE /v1/responses/{id}.

Decode -> either pass the request through to a commercial OpenAI target untouched, or translate to
chat (after the stored history of `previous_response_id`), run the pipeline, and encode a Response
or its SSE events. With `store` (the default) the Response and the chat history that continues it
are kept in the state store under "resp:<id>" before the client sees the last event.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import httpx
import msgspec
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from hub.backends.http import open_sse, post_json
from hub.config import Target
from hub.errors import GatewayError, NotFound, Unavailable
from hub.protocols.responses import (
    ResponsesContext,
    ResponsesStream,
    from_chat,
    items_to_messages,
    new_id,
    sse,
    to_chat,
)
from hub.runtime import Runtime
from hub.store import StoreUnavailable

from .common import (
    as_gateway_error,
    cancel_on_disconnect,
    expected_error,
    openai_error,
    options,
    read_json,
    runtime,
)

log = logging.getLogger("searchhub.responses")
_encode = msgspec.json.encode
_decode = msgspec.json.decode
SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}
KEY_PREFIX = "resp:"


class Stored(msgspec.Struct):
    """What `store` keeps: the Response for GET, the chat conversation for previous_response_id."""

    response: dict
    messages: list[dict]


def _json(body: dict, status: int = 200) -> Response:
    return Response(_encode(body), status_code=status, media_type="application/json")


# --- the state store -----------------------------------------------------------------------------


async def _load(rt: Runtime, response_id: str) -> Stored | None:
    try:
        raw = await rt.store.get(KEY_PREFIX + response_id)
    except StoreUnavailable:
        raise Unavailable("stored responses are unavailable right now", code="store_unavailable") from None
    if raw is None:
        return None
    try:
        return _decode(raw, type=Stored)
    except msgspec.DecodeError:
        log.warning("stored response %s is unreadable; treated as missing", response_id)
        return None


async def _save(rt: Runtime, response: dict, ctx: ResponsesContext) -> None:
    """Keep a finished response; a store failure costs the continuation, never the answer."""
    messages = [*ctx.history, *items_to_messages(response["output"], ctx)]
    try:
        await rt.store.set(KEY_PREFIX + response["id"], _encode(Stored(response, messages)),
                           rt.config.responses_ttl_s)
    except Exception as e:  # StoreUnavailable or a bug in a backend: log it and answer anyway
        log.warning("response %s was not stored: %s", response["id"], type(e).__name__)


async def _history(rt: Runtime, body: dict) -> list[dict] | None:
    previous = body.get("previous_response_id")
    if not isinstance(previous, str) or not previous:
        return None
    stored = await _load(rt, previous)
    if stored is None:
        raise GatewayError(f"Previous response with id '{previous}' not found.", status=404,
                           type="invalid_request_error", param="previous_response_id",
                           code="previous_response_not_found")
    return stored.messages


# --- commercial OpenAI targets: untouched ----------------------------------------------------------


def _thinking(body: dict) -> bool:
    reasoning = body.get("reasoning")
    effort = reasoning.get("effort") if isinstance(reasoning, dict) else None
    return isinstance(effort, str) and effort != "none"


def _native(rt: Runtime, body: dict) -> tuple[str, tuple[Target, ...]] | None:
    """(route, targets) when the model resolves to a commercial OpenAI provider, which speaks Responses
    (and runs its own web_search) itself."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return None
    config = rt.config
    provider_id, sep, rest = model.partition(".")
    if sep and rest and provider_id in config.providers and model not in config.router.routes:
        target = config.target(model)
        return ("pinned", (target,)) if target is not None and target.provider.type == "openai" else None
    route = rt.router.route_for(model, thinking=_thinking(body))
    first = next((t for pool in config.router.routes.get(route, ()) for t in pool.targets), None)
    if first is None or first.provider.type != "openai":
        return None
    return route, tuple(t for t in rt.router.candidates(route) if t.provider.type == "openai")


async def _passthrough(rt: Runtime, body: dict, route: str, targets: tuple[Target, ...]) -> Response:
    stream = body.get("stream") is True

    async def call(target: Target):
        provider = target.provider
        headers = {"content-type": "application/json", "accept": "text/event-stream" if stream else "application/json"}
        if provider.api_key:
            headers["authorization"] = f"Bearer {provider.api_key}"
        headers.update(provider.headers)
        out = {**body, "model": target.model}
        url = provider.base_url + "/responses"
        if stream:
            return await open_sse(rt.client, provider, url, out, headers)
        return await post_json(rt.client, provider, url, out, headers)

    result, target = await rt.dispatcher.run(route, targets, call, hold=stream)
    if not stream:
        return _json(result)
    return StreamingResponse(_relay(result, rt, target), media_type="text/event-stream", headers=SSE_HEADERS)


async def _relay(resp: httpx.Response, rt: Runtime, target: Target) -> AsyncIterator[bytes]:
    try:
        async for chunk in resp.aiter_raw():
            yield chunk
    except httpx.HTTPError as e:
        log.warning("openai passthrough stream broke: %s", type(e).__name__)
        yield sse({"type": "error", "sequence_number": 0, "code": "server_error",
                   "message": "the upstream stream broke", "param": None})
    finally:
        rt.dispatcher.gate.leave(target.provider)
        await resp.aclose()


# --- endpoints ---------------------------------------------------------------------------------------


def _describe(exc: BaseException) -> tuple[str, str]:
    """(error.code, message) for `response.failed` when a stream breaks after it started."""
    if isinstance(exc, Exception) and expected_error(exc):
        log.warning("responses stream broke: %s", exc)
    else:
        log.error("responses stream failed", exc_info=exc)
    err = as_gateway_error(exc) if isinstance(exc, Exception) else as_gateway_error(RuntimeError())
    return ("rate_limit_exceeded" if err.status == 429 else "server_error"), err.message


async def _events(rt: Runtime, ctx: ResponsesContext, items: AsyncIterator) -> AsyncIterator[bytes]:
    encoder = ResponsesStream(ctx)

    async def before_end(response: dict) -> None:
        if ctx.store and response["status"] != "failed":
            await _save(rt, response, ctx)

    async for data in encoder.encode(items, before_end=before_end, describe_error=_describe):
        yield data


async def create_response(request: Request) -> Response:
    try:
        rt = runtime(request)
        body = await read_json(request, rt.config.server.max_body_bytes)
        native = _native(rt, body)
        if native is not None:
            return await _passthrough(rt, body, *native)
        chat, ctx = to_chat(body, history=await _history(rt, body))
        opts = options(request, body, stream=ctx.stream, endpoint="responses")
        opts.hosted = ctx.hosted
        if opts.force_search is None and ctx.force_search:
            opts.force_search = True
        if ctx.stream:
            items = await rt.pipeline.stream(chat, opts)
            return StreamingResponse(_events(rt, ctx, items), media_type="text/event-stream", headers=SSE_HEADERS)
        outcome = await cancel_on_disconnect(request, rt.pipeline.complete(chat, opts))
        response = from_chat(outcome, ctx, response_id=new_id("resp"))
        if ctx.store:
            await _save(rt, response, ctx)
        return _json(response)
    except Exception as e:  # every failure answers in OpenAI's error shape
        if not expected_error(e):
            log.exception("responses request failed")
        return openai_error(e)


async def get_response(request: Request) -> Response:
    try:
        response_id = request.path_params["response_id"]
        stored = await _load(runtime(request), response_id)
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
        if await _load(rt, response_id) is None:
            raise NotFound(f"No response found with id '{response_id}'.", param="response_id")
        try:
            await rt.store.delete(KEY_PREFIX + response_id)
        except StoreUnavailable:
            raise Unavailable("stored responses are unavailable right now", code="store_unavailable") from None
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
