"""Commercial pass-through: a request already in a provider's own protocol (Anthropic Messages for an
`anthropic` provider, OpenAI Responses for an `openai` one) goes to it untouched but for the model
name, so the provider runs its own server tools; the answer comes back untouched but for the model
name too (the client's, as every answer of the gateway says it). Failover and the concurrency gate
are the dispatcher's, as for chat; a stream keeps its gate slot until it ends and gives it back
through the dispatcher."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

import httpx

from ..backends.normalize import ModelName
from ..config.settings import Target
from ..streams import native as native_stream
from ..streams.watch import by_deadline
from ..upstream.http import UpstreamError, open_sse, post_json
from ..upstream.transport import Streamed
from .dispatch import Dispatcher
from .router import Resolution

log = logging.getLogger("searchhub.passthrough")
ANTHROPIC_VERSION = "2023-06-01"


@dataclass(frozen=True, slots=True)
class Forward:
    """One pass-through request: the protocol's path (below the provider's base URL, without /v1
    for Anthropic), its query string and the client headers the provider needs to see."""

    path: str
    stream: bool = False
    query: str = ""
    client_headers: Mapping[str, str] = field(default_factory=dict)
    broken: Callable[[str], bytes] | None = None  # the protocol's in-band error event for a broken stream


def anthropic_url(target: Target, fwd: Forward) -> str:
    base = target.provider.base_url
    if base.endswith("/v1"):
        base = base[:-3]
    return base + fwd.path + (f"?{fwd.query}" if fwd.query else "")


def anthropic_headers(target: Target, fwd: Forward) -> dict[str, str]:
    provider = target.provider
    headers = {"content-type": "application/json",
               "anthropic-version": fwd.client_headers.get("anthropic-version") or ANTHROPIC_VERSION,
               "accept": "text/event-stream" if fwd.stream else "application/json"}
    if beta := fwd.client_headers.get("anthropic-beta"):
        headers["anthropic-beta"] = beta
    if provider.api_key:
        headers["x-api-key"] = provider.api_key
    headers.update(provider.headers)
    return headers


def openai_url(target: Target, fwd: Forward) -> str:
    return target.provider.base_url + fwd.path + (f"?{fwd.query}" if fwd.query else "")


def openai_headers(target: Target, fwd: Forward) -> dict[str, str]:
    provider = target.provider
    headers = {"content-type": "application/json", "accept": "text/event-stream" if fwd.stream else "application/json"}
    if provider.api_key:
        headers["authorization"] = f"Bearer {provider.api_key}"
    headers.update(provider.headers)
    return headers


_PROTOCOLS = {"anthropic": (anthropic_url, anthropic_headers), "openai": (openai_url, openai_headers)}


async def forward(client: httpx.AsyncClient, dispatcher: Dispatcher, resolution: Resolution, body: dict,
                  fwd: Forward) -> dict | AsyncIterator[bytes]:
    """The provider's JSON answer, or its raw SSE bytes; a committed stream that breaks ends with
    `fwd.broken`'s event (or raises UpstreamError without one)."""
    url_for, headers_for = _PROTOCOLS[resolution.candidates[0].provider.type]

    async def call(target: Target):
        out = {**body, "model": target.model}
        url, headers = url_for(target, fwd), headers_for(target, fwd)
        if fwd.stream:  # committed only at the first content (hub/streams/native.py), within its deadline
            async def opening(_deadline) -> native_stream.Opened:
                resp = await open_sse(client, target.provider, url, out, headers)
                return await native_stream.first_content(_raw(resp), target.provider.type)

            return await by_deadline(target.provider, opening)
        return await post_json(client, target.provider, url, out, headers)

    result, target = await dispatcher.run(resolution.route, resolution.candidates, call, hold=fwd.stream)
    model = body.get("model")
    if not fwd.stream:
        if isinstance(model, str) and "model" in result:  # (count_tokens answers have none)
            result["model"] = model
        return result
    rename = ModelName(model) if isinstance(model, str) else None
    return dispatcher.held(_ended(native_stream.watched(result), fwd.broken, rename), target)


async def _ended(chunks: AsyncIterator[bytes], broken: Callable[[str], bytes] | None,
                 rename: ModelName | None = None) -> AsyncIterator[bytes]:
    """The stream with its model named as the client named it (Anthropic's `message_start`, the
    Responses `response.*` events), rewritten a whole line at a time: a read's unfinished last line
    waits for the next read (an SSE client can do nothing with it before its end anyway). A
    committed stream that breaks ends with the protocol's error event (`Forward.broken`)."""
    rest = b""  # the unfinished last line of the reads so far
    try:
        async for chunk in chunks:
            if rename is None:
                yield chunk
                continue
            data = rest + chunk if rest else chunk
            end = data.rfind(b"\n") + 1
            rest = data[end:]
            if end:
                yield rename(data[:end])
        if rest and rename is not None:  # (rest is only ever kept with rename)
            yield rename(rest)
    except UpstreamError as e:
        if broken is None:
            raise
        yield rest + broken(e.reason)
    finally:
        await chunks.aclose()


async def _raw(resp: Streamed) -> AsyncIterator[bytes]:
    try:
        async for chunk in resp.aiter_raw():
            yield chunk
    except httpx.HTTPError as e:
        log.warning("pass-through stream broke: %s", type(e).__name__)
        raise UpstreamError("the upstream stream broke", status=502, retryable=False) from None
    finally:
        await resp.aclose()
