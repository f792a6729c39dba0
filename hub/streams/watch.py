"""An upstream chat stream counts as answered at its first content and as complete at its finish.

Until the first content (text, reasoning, a tool call or a finish reason) nothing has reached the
client, so a stream that closes, breaks, sends an error chunk, sends a body without `data:` events
(a 200 HTML page) or no events at all is a failed attempt the dispatcher fails over from. After it,
a stream that ends without a finish reason and without `[DONE]` raises: the client gets an error
event, not a truncated answer presented as complete.

Every attempt's first content has a deadline (`firstTokenTimeoutMs`, `by_deadline`): keep-alive
comments reset the idle read timeout but bring no content, so a server that only pings would
otherwise hold the request, and its concurrency slot, for good.

Works on the `data:` payloads of each network read (hub/upstream/http.py `sse_batches`), so the
relay can forward them undecoded; only the payloads before the first content, and the last reads
of a stream that ended without `[DONE]`, are decoded here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from ..backends.openai_compat import decode_chunk
from ..config.settings import Provider
from ..upstream.http import UpstreamError

T = TypeVar("T")
DONE = b"[DONE]"
HEAD_LIMIT = 1 << 20  # bytes held before the first content, at most


ENDED = "upstream stream ended before any content"


@dataclass(slots=True)
class Opened:
    """A stream whose first content arrived: the reads so far, and the rest of the stream."""

    head: list[list[bytes]]
    rest: AsyncIterator[list[bytes]]
    provider: Provider


def has_content(chunk: dict) -> bool:
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        return False
    for choice in choices:
        if not isinstance(choice, dict):
            continue
        if choice.get("finish_reason"):
            return True
        delta = choice.get("delta")
        if isinstance(delta, dict) and any(delta.get(k) for k in ("content", "reasoning_content", "reasoning",
                                                                   "tool_calls", "refusal")):
            return True
    return False


async def first_content(batches: AsyncIterator[list[bytes]], provider: Provider) -> Opened:
    """Read until the first content; anything else first is a retryable UpstreamError (and the
    upstream response is closed)."""
    head: list[list[bytes]] = []
    size = 0
    try:
        async for batch in batches:
            head.append(batch)
            size += sum(len(d) for d in batch)
            if size > HEAD_LIMIT:
                raise UpstreamError("upstream sent over 1 MiB before any content", status=502)
            for data in batch:
                if data == DONE:
                    raise UpstreamError("upstream stream ended before any content", status=502)
                if not data:
                    continue
                try:
                    chunk = decode_chunk(data, provider)
                except UpstreamError as e:  # an error chunk or garbage before any content: try the next
                    if e.kind is not None:
                        raise  # about the request (a context overflow): the same on every target
                    raise UpstreamError(e.reason, status=e.status or 502) from None
                if chunk is not None and has_content(chunk):
                    return Opened(head, batches, provider)
        silent = provider.quirks.silent_end  # how the family's servers fail without a word, if they do
        raise UpstreamError(f"{ENDED} ({silent})" if silent and not head else ENDED, status=502)
    except BaseException:
        await batches.aclose()
        raise


async def by_deadline(provider: Provider, opening: Callable[[asyncio.Timeout | None], Awaitable[T]]) -> T:
    """One attempt up to its first content, `opening(deadline)`, within the provider's
    `firstTokenTimeoutMs` (from the request on: connect, the answer's head and the reads before the
    first content). A miss is a retryable 504 UpstreamError, failed over like a connect error; the
    cancellation that ends the attempt closes its upstream request (first_content closes the
    stream). `opening` may lift the deadline (`deadline.reschedule(None)`): a request asked whole
    has no first token before its end (hub/backends/openai_compat.py)."""
    limit = provider.first_token_timeout_s
    if limit is None:
        return await opening(None)
    deadline = asyncio.timeout(limit)
    try:
        async with deadline:
            return await opening(deadline)
    except TimeoutError:
        if not deadline.expired():  # a timeout of the attempt's own, not the deadline
            raise
        raise missed(provider) from None


def missed(provider: Provider) -> UpstreamError:
    limit = provider.first_token_timeout_s or 0
    return UpstreamError(f"upstream sent no content within {round(limit * 1000)} ms "
                         f"(providers.{provider.id}.firstTokenTimeoutMs)", status=504)


@dataclass(slots=True)
class Watched:
    """An opened stream for a reader that applies the watch's rules itself (hub/streams/relay.py
    `relay_sse`); `close` ends it and frees its concurrency slot."""

    opened: Opened
    release: Callable[[], None] | None = None

    async def close(self) -> None:
        try:
            await self.opened.rest.aclose()
        finally:
            if self.release is not None:
                self.release()


def finished(batches: tuple[list[bytes], ...], provider: Provider) -> bool:
    """Did these reads carry a finish reason? (Only asked of the last reads of a stream without [DONE].)"""
    for batch in batches:
        for data in batch:
            try:
                chunk = decode_chunk(data, provider) if data else None
            except UpstreamError:
                continue
            if chunk and _finishes(chunk):
                return True
    return False


async def watched_reads(opened: Opened, *, release: Callable[[], None] | None = None) -> AsyncIterator[list[dict]]:
    """The stream as decoded chunks, a list per network read (never an empty one: the reads
    before the first content come as one); ends at `[DONE]`; raises when it ended without it
    and without a finish in its last two reads that carried chunks (the relay, hub/streams/relay.py
    `relay_sse`, applies the same rule to the bytes it forwards; tests/test_stream_watch.py holds
    the two to the same verdict)."""
    provider = opened.provider
    stream = Watched(opened, release)
    try:
        head: list[dict] = []
        ended = False
        for batch in opened.head:
            chunks, ended = _decoded(batch, provider)
            head += chunks
            if ended:
                break
        if head:
            yield head
        if ended:
            return
        prev, cur = head, head  # the last two reads with chunks: a finish is looked for there only
        async for batch in opened.rest:
            chunks, ended = _decoded(batch, provider)
            if chunks:
                yield chunks
                prev, cur = cur, chunks
            if ended:
                return
        if not any(map(_finishes, prev)) and not any(map(_finishes, cur)):
            raise unfinished()
    finally:
        await stream.close()


def _decoded(batch: list[bytes], provider: Provider) -> tuple[list[dict], bool]:
    """A read's chunks, and whether it ended the stream (`[DONE]`; nothing after it counts)."""
    out = []
    for data in batch:
        if data == DONE:
            return out, True
        if data and (chunk := decode_chunk(data, provider)) is not None:
            out.append(chunk)
    return out, False


def _finishes(chunk: dict) -> bool:
    choices = chunk.get("choices")
    if isinstance(choices, list):
        for c in choices:
            if isinstance(c, dict) and c.get("finish_reason"):
                return True
    return False


def unfinished() -> UpstreamError:
    return UpstreamError("the upstream stream ended without finishing", status=502, retryable=False)
