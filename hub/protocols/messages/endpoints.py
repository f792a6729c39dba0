"""Anthropic Messages: POST /v1/messages and /v1/messages/count_tokens (also under /anthropic/),
and the model listing Anthropic's clients ask GET /v1/models for.

Decode -> alias the model -> either pass the request through to a commercial Anthropic target
untouched, answer Claude Code's search-execution side call, or translate to chat and run the
turn -> encode as an Anthropic Message or SSE. Errors answer in Anthropic's shape.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator

from hub.core.errors import BadRequest, Unavailable
from hub.observability.logctx import request_id_var
from hub.routing import aliases, passthrough
from hub.routing.router import Resolution
from hub.tools.events import Options
from hub.tools.search_execution import SearchExecution
from hub.upstream.failures import context_overflow, error_message, scrub
from hub.upstream.http import UpstreamError

from ..errors import as_gateway_error, stream_broke, traced_failure
from ..serving import SSE_HEADERS, Answer, Call, Endpoint, Models, ProtocolKind, Runtime, Stream
from .claude_code import search_execution_query
from .request import MessagesContext, estimate_input_tokens, to_chat, wants_thinking
from .response import from_chat
from .stream import MessagesStream, error_event
from .wire import decode_request

log = logging.getLogger("searchhub.messages")
MODEL_CREATED_AT = "1970-01-01T00:00:00Z"  # the SDK's documented value for an unknown release date
_ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 402: "billing_error", 403: "permission_error",
    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 504: "timeout_error",
    529: "overloaded_error",
}
SHUTDOWN_ERROR = "overloaded_error"  # a stream the graceful shutdown cuts short (its 503 is a 529 here)


# --- errors -------------------------------------------------------------------------------------


def _error_answer(status: int, etype: str, message: str, headers: dict[str, str] | None = None) -> Answer:
    rid = request_id_var.get()
    out = {"request-id": rid, **(headers or {})}
    if status < 500 and status not in (408, 409, 429):
        out["x-should-retry"] = "false"
    return Answer({"type": "error", "error": {"type": etype, "message": message}, "request_id": rid}, status, out)


def error_type(status: int) -> str:
    return _ERROR_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")


def anthropic_error(exc: Exception, call: Call | None = None) -> Answer:
    """Any failure as Anthropic's error body; a backend's context overflow in the words Claude Code's
    auto-compaction recognises (docs/claude-code.md, "Errors"), with the prompt's size estimated
    from the request when the backend did not say it."""
    if isinstance(exc, UpstreamError) and exc.status and 400 <= exc.status < 500 and not exc.retryable:
        tokens = estimate_input_tokens(call.body) if call is not None and call.body is not None else 0
        return _error_answer(exc.status, error_type(exc.status), _backend_message(exc, tokens))
    err = as_gateway_error(exc)
    status = 529 if err.status == 503 else err.status
    return _error_answer(status, error_type(status), err.message, err.headers)


def _backend_message(exc: UpstreamError, input_tokens: int) -> str:
    """A backend's 4xx for the client's request, without echoing its raw body."""
    overflow = context_overflow(exc.status, exc.body)
    if overflow is not None and overflow[0] == "prompt":
        _, prompt, limit = overflow
        prompt = prompt or input_tokens
        return f"prompt is too long: {prompt} tokens > {limit or max(prompt - 1, 0)} maximum"
    message = scrub(error_message(exc.body)[0])
    if message:
        return f"the backend rejected the request (HTTP {exc.status}): {message[:300]}"
    return f"the backend rejected the request (HTTP {exc.status})"


# --- encoding -----------------------------------------------------------------------------------


def _json(message: dict) -> Answer:
    return Answer(message, headers={"request-id": request_id_var.get()})


def _sse(items: AsyncGenerator, ctx: MessagesContext, input_tokens: int) -> Stream:
    encoder = MessagesStream(ctx, input_tokens=input_tokens)
    return Stream(encode_stream(items, encoder), lambda message: encoder.interrupted(SHUTDOWN_ERROR, message),
                  {**SSE_HEADERS, "request-id": request_id_var.get()})


async def encode_stream(items: AsyncGenerator, encoder: MessagesStream) -> AsyncIterator[bytes]:
    """message_start goes out with the first item's events (the encoder starts itself): the
    producer has started the turn's work by then (a search round's requests leave before it)."""
    try:
        async for item in items:
            out = encoder.feed(item)
            if out:
                yield out
    except Exception as e:  # the stream broke after the 200: Anthropic's `error` event
        err = stream_broke(e, log)
        status = 529 if err.status == 503 else err.status
        yield encoder.fail(error_type(status), err.message)
        return
    finally:
        await items.aclose()
    yield encoder.finish()


# --- routing ------------------------------------------------------------------------------------


def _model(rt: Runtime, body: dict) -> str:
    """The client's model name after modelAliases."""
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise BadRequest("model: must be a non-empty string", param="model")
    return aliases.rewrite(model, rt.config.model_aliases, thinking=wants_thinking(body),
                           known=rt.router.known)


def _broken(message: str) -> bytes:
    """The `error` event a pass-through stream that breaks after it started ends with."""
    traced_failure(message)
    return error_event("api_error", message)


async def _passthrough(call: Call, rt: Runtime, resolution: Resolution, path: str) -> Answer | Stream:
    """A commercial Anthropic target: the request goes through untouched (hub/routing/passthrough.py)."""
    body = call.json
    stream = body.get("stream") is True and path == "/v1/messages"
    fwd = passthrough.Forward(path, stream, call.query, call.headers, broken=_broken)
    try:
        result = await passthrough.forward(rt.client, rt.dispatcher, resolution, body, fwd)
    except UpstreamError as e:
        if e.status and 400 <= e.status < 500 and e.body:  # Anthropic's own error body: already the right shape
            return Answer(e.body, e.status, {"request-id": request_id_var.get()})
        raise
    if isinstance(result, dict):
        return _json(result)
    # A stream the graceful shutdown cuts short ends with the `error` event; the blank line first
    # ends an event the provider's bytes left open (a whole line at a time, passthrough._ended).
    return Stream(result, lambda message: b"\n" + error_event(SHUTDOWN_ERROR, message),
                  {**SSE_HEADERS, "request-id": request_id_var.get()})


async def _routed(call: Call, rt: Runtime, path: str) -> tuple[str, Answer | Stream | None]:
    """The model after modelAliases, and the answer when a commercial Anthropic target serves it."""
    body = call.json
    model = _model(rt, body)
    native = rt.router.serving(model, "anthropic", thinking=wants_thinking(body))
    return model, (await _passthrough(call, rt, native, path) if native is not None else None)


# --- endpoints ----------------------------------------------------------------------------------


async def create(rt: Runtime, call: Call) -> Answer | Stream:
    body = call.json
    model, answered = await _routed(call, rt, "/v1/messages")
    if answered is not None:
        return answered
    decoded = decode_request(body)
    chat, ctx = to_chat(decoded, rt.tools.replays)
    chat["model"] = model
    input_tokens = estimate_input_tokens(body)
    opts = call.options()
    opts.hosted = ctx.hosted
    if ctx.force_search and opts.force_search is None:
        opts.force_search = opts.force_call = True
    if ctx.withheld and not ctx.server_tools and opts.force_search is None:
        opts.force_search = False  # its server tools are for code execution only: the model searches not
    search = ctx.hosted.get("web_search")  # Claude Code's search side call offers only the hosted search
    query = search_execution_query(decoded) if search is not None else None
    if query is not None:
        if rt.tools.search is None:
            raise Unavailable("no web search is configured", code="search_unavailable")
        execution = SearchExecution(rt.tools.search, rt.config.web_search, rt.summarizer, query, search,
                                    model=model, opts=opts, input_tokens=input_tokens)
        if ctx.stream:
            return _sse(execution.stream(), ctx, input_tokens)
        return _json(from_chat(await execution.complete(), ctx))
    try:
        return await _answer(rt, chat, ctx, opts, input_tokens)
    except UpstreamError as e:
        overflow = context_overflow(e.status, e.body)
        if overflow is None or overflow[0] != "completion" or "max_tokens" not in chat:
            raise
        # Claude Code asks for 32k-128k output tokens; a local model's context rarely has room.
        # Without max_tokens the backend uses what is left of its context.
        log.info("backend context too small for max_tokens=%s; retrying without it", chat["max_tokens"])
        chat = {k: v for k, v in chat.items() if k != "max_tokens"}
        return await _answer(rt, chat, ctx, opts, input_tokens)


async def _answer(rt: Runtime, chat: dict, ctx: MessagesContext, opts: Options, input_tokens: int) -> Answer | Stream:
    if ctx.stream:
        return _sse(await rt.pipeline.stream(chat, opts), ctx, input_tokens)
    outcome = await rt.pipeline.complete(chat, opts)
    return _json(from_chat(outcome, ctx))


async def count_tokens(rt: Runtime, call: Call) -> Answer | Stream:
    body = call.json
    _, answered = await _routed(call, rt, "/v1/messages/count_tokens")
    if answered is not None:
        return answered
    decode_request(body)  # the same check as a real request
    return _json({"input_tokens": estimate_input_tokens(body)})


def anthropic_models(rt: Runtime) -> dict:
    """GET /v1/models for Anthropic clients: routes, pinned targets and exact alias names."""
    names = list(rt.router.models())
    exact = rt.config.model_aliases.get("exact") if isinstance(rt.config.model_aliases, dict) else None
    if isinstance(exact, dict):
        names += [n for n in exact if isinstance(n, str) and n not in names]
    data = [{"type": "model", "id": n, "display_name": n, "created_at": MODEL_CREATED_AT, "lifecycle": "active"}
            for n in names]
    return {"data": data, "has_more": False, "first_id": names[0] if names else None,
            "last_id": names[-1] if names else None}


async def list_models(rt: Runtime, call: Call) -> Answer:
    return _json(anthropic_models(rt))


PROTOCOL = ProtocolKind(
    name="messages",
    endpoints=(
        Endpoint("POST", ("/v1/messages", "/anthropic/v1/messages"), create, "messages request", direct=True),
        Endpoint("POST", ("/v1/messages/count_tokens", "/anthropic/v1/messages/count_tokens"), count_tokens,
                 "count_tokens", watched=False),
        Endpoint("GET", ("/anthropic/v1/models",), list_models, "listing models", body=False, watched=False),
    ),
    error=anthropic_error,
    prefixes=("/anthropic/", "/v1/messages"),
    models=Models("anthropic-version", anthropic_models),
)
