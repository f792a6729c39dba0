"""OpenAI-compatible chat backends: vLLM, Ollama, llama.cpp, LM Studio, OpenAI, GLM, Gemini's
OpenAI endpoint. Requests go out in the internal (chat) form with the target's model name; answers
come back with the request's (the client's) model name, not the backend's own."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import msgspec

from ..config.settings import Provider, Target
from ..upstream.http import UpstreamError, open_sse, post_json, sse_batches, stream_error
from ..upstream.transport import UpstreamClient
from . import quirks
from .normalize import ModelName

# Fields only searchhub reads; a backend may reject them.
_GATEWAY_FIELDS = ("web_search", "enable_web_search", "web_search_options")
_decode = msgspec.json.decode


def chat_url(provider: Provider) -> str:
    base = provider.base_url
    if provider.type == "gemini" and not base.endswith("/openai"):
        return base + "/v1beta/openai/chat/completions"
    if provider.type == "anthropic" and not base.endswith("/v1"):
        return base + "/v1/chat/completions"  # Anthropic's OpenAI-compatible endpoint
    return base + "/chat/completions"


def headers(provider: Provider, *, stream: bool = False) -> dict[str, str]:
    h = {"content-type": "application/json", "accept": "text/event-stream" if stream else "application/json"}
    if provider.api_key:
        h["authorization"] = f"Bearer {provider.api_key}"
    h.update(provider.headers)
    return h


def outbound(body: dict, target: Target, *, stream: bool, server_tools: frozenset[str] = frozenset()) -> dict:
    """The request body a backend receives: the target's model name, no gateway-only fields, shaped
    for the backend's family (hub/backends/quirks.py)."""
    out = {k: v for k, v in body.items() if k not in _GATEWAY_FIELDS}
    out["model"] = target.model
    if not out.get("tools"):
        out.pop("tools", None)
        out.pop("tool_choice", None)
        out.pop("parallel_tool_calls", None)
    if stream:
        out["stream"] = True
    else:
        out.pop("stream", None)
        out.pop("stream_options", None)
    return quirks.outbound(out, target.provider.quirks, server_tools=server_tools)


async def complete(client: UpstreamClient, target: Target, body: dict, *, retries: int = 0,
                   server_tools: frozenset[str] = frozenset()) -> dict:
    p = target.provider
    data = await post_json(client, p, chat_url(p), outbound(body, target, stream=False, server_tools=server_tools),
                           headers(p), retries=retries)
    if "choices" not in data:
        raise UpstreamError("upstream answered without choices", status=502)
    _named(data, body)
    return data


def _named(data: dict, body: dict) -> None:
    """The answer names the model the request named (a route, `provider.model`): the backend's own
    name for itself is no business of the client's (llama.cpp's server says its GGUF file's path)."""
    model = body.get("model")
    if isinstance(model, str):
        data["model"] = model


def _renamer(body: dict) -> ModelName | None:
    """`_named` for a stream's bytes (hub/upstream/http.py `sse_batches`)."""
    model = body.get("model")
    return ModelName(model) if isinstance(model, str) else None


async def stream(
    client: UpstreamClient, target: Target, body: dict, *, retries: int = 0,
    server_tools: frozenset[str] = frozenset(), deadline: asyncio.Timeout | None = None,
) -> AsyncIterator[list[bytes]]:
    """Open the stream (errors before the first byte raise UpstreamError here, so the caller can
    fail over) and return an iterator of the `data:` payloads of each network read (for a relay that
    forwards most of them untouched; hub/streams/watch.py decodes the rest). A request with tools the
    family cannot stream is asked whole and replayed as chunks (hub/backends/quirks.py): its first
    content is the whole answer, so the attempt's first-content `deadline` (hub/streams/watch.py
    `by_deadline`) is lifted and `timeoutMs` bounds it, as any request asked whole."""
    p = target.provider
    out = outbound(body, target, stream=True, server_tools=server_tools)
    if not quirks.streams(out, p.quirks):
        if deadline is not None:
            deadline.reschedule(None)
        whole = {k: v for k, v in out.items() if k not in ("stream", "stream_options")}
        data = await post_json(client, p, chat_url(p), whole, headers(p), retries=retries)
        _named(data, body)
        return _replayed(quirks.as_chunks(data))
    resp = await open_sse(client, p, chat_url(p), out, headers(p, stream=True), retries=retries)
    return sse_batches(resp, _renamer(body))


async def _replayed(chunks: list[dict]) -> AsyncIterator[list[bytes]]:
    """An answer asked whole, as one read of a stream's payloads."""
    yield [msgspec.json.encode(c) for c in chunks]


def decode_chunk(data: bytes, provider: Provider) -> dict | None:
    """One stream payload as a chunk; None for keep-alives and non-objects; an error chunk raises."""
    try:
        chunk = _decode(data)
    except msgspec.DecodeError:
        raise UpstreamError("upstream sent an invalid stream chunk", status=502) from None
    if not isinstance(chunk, dict):
        return None
    if "error" in chunk or chunk.get("object") == "error":
        raise stream_error(data, provider)
    return chunk


