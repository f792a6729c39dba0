"""Relaying a backend's stream when searchhub adds nothing to it: normalized, never buffered."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable

import msgspec

from ..backends import usage as usages
from ..backends.normalize import StreamNormalizer
from ..backends.openai_compat import decode_chunk
from ..config.settings import Target
from .watch import Watched, finished, unfinished

_encode = msgspec.json.encode
DONE = b"data: [DONE]\n\n"


class Frames:
    """A plain relay's answer for a client that takes chat SSE: the framed bytes of each upstream
    read (`[DONE]` included when it ends), which the encoder writes as they are."""

    __slots__ = ("it",)

    def __init__(self, it: AsyncIterator[bytes]) -> None:
        self.it = it


# Searched with regexes, not `in`: `bytes in bytes` first tries the right side as an integer and
# formats (then drops) a TypeError each time, which cost more than the search itself.
_FINISH_NULL = re.compile(rb'"finish_reason": ?null')
_NOT_PLAIN = re.compile(rb'"(?:tool_calls"|role"|reasoning|error"|function_call")')
_USAGE = re.compile(rb'"usage": ?\{')


def plain(data: bytes) -> bool:
    """A chunk the normalizer would leave as it is: text or usage only, no role, tools, reasoning
    or finish. Checked on the bytes, so most of a stream is relayed without decoding."""
    return _FINISH_NULL.search(data) is not None and _NOT_PLAIN.search(data) is None


def _has_usage(data: bytes) -> bool:
    return _USAGE.search(data) is not None


async def relay_sse(stream: Watched, target: Target, *, prompt: Callable[[], int] = lambda: 0,
                    want_usage: bool = False) -> AsyncIterator[bytes]:
    """Chat-to-chat relay: each network read of the upstream becomes one write to the client. The
    upstream's `[DONE]` goes out framed, in the write of the chunks that came with it (the encoder
    then stops); a stream that ends without one gets it from the encoder. When the client asked for
    usage and the backend sent none, an estimate comes before the end (hub/backends/usage.py).

    Reads the opened stream itself, with the watch's rules (hub/streams/watch.py: ends at `[DONE]`;
    ending without it and without a finish reason in its last two reads that carried a payload
    raises; `watched_reads` judges the same, tests/test_stream_watch.py), rather than through
    another generator: one less on every chunk of the most common stream."""
    normalizer = StreamNormalizer()
    provider = target.provider
    first, base, chunks, seen_usage, done, carried = True, {}, 0, False, False, False

    def estimated() -> list[bytes]:
        if not want_usage or seen_usage or not chunks or not provider.quirks.estimate_usage:
            return []
        usage = usages.estimate(provider.id, prompt(), max(chunks - 2, 1))
        return [b"data: " + _encode({**base, "object": "chat.completion.chunk", "choices": [],
                                     "usage": usage}) + b"\n\n"]

    def frames(batch: list[bytes]) -> bytes:
        """The read's chunks framed for the client; `carried` says whether it held any chunk
        (a read of keep-alives or non-object payloads is no read for the finish rule)."""
        nonlocal first, base, chunks, seen_usage, done, carried
        carried = False
        out = []
        for data in batch:
            if data == b"[DONE]":  # the end goes out in the same write as the last chunks
                out.extend(estimated())
                out.append(DONE)
                done = True
                break  # nothing after [DONE] is relayed
            if not data:
                continue
            chunks += 1
            seen_usage = seen_usage or _has_usage(data)
            if not first and plain(data):
                carried = True
                out.append(b"data: " + data + b"\n\n")
                continue
            chunk = decode_chunk(data, provider)
            if chunk is None:
                continue
            carried = True
            if first:
                base = {k: chunk[k] for k in ("id", "created", "model") if k in chunk}
                first = False
            fixed = normalizer.feed(chunk)
            if fixed is not None:
                out.append(b"data: " + _encode(fixed) + b"\n\n")
        return b"".join(out)

    last: tuple[list[bytes], ...] = ((), ())
    try:  # try/finally rather than contextlib.aclosing: this runs once per stream on the hot path
        head = []  # the reads before the first content go out in one write
        for batch in stream.opened.head:
            head.append(frames(batch))
            if carried:
                last = (last[1], batch)
            if done:
                break
        if any(head):
            yield b"".join(head)
        if done:
            return
        async for batch in stream.opened.rest:
            out = frames(batch)
            if out:
                yield out
            if done:
                return
            if carried:
                last = (last[1], batch)
        if not finished(last, provider):
            raise unfinished()
        tail = estimated()
        if tail:
            yield b"".join(tail)
    finally:
        await stream.close()


async def relay_chunks(it: AsyncIterator[list[dict]], target: Target | None = None, *,
                       prompt: Callable[[], int] = lambda: 0) -> AsyncIterator[list[dict]]:
    """A relay for an encoder that translates (Messages, Responses): each read's chunks,
    normalized, as one list (hub/tools/events.py)."""
    normalizer = StreamNormalizer()
    chunks = 0
    seen_usage = False
    base: dict = {}
    try:
        async for read in it:
            chunks += len(read)
            out = []
            for raw in read:
                chunk = normalizer.feed(raw)
                if chunk is not None:
                    if not base:
                        base = {k: chunk[k] for k in ("id", "object", "created", "model") if k in chunk}
                    seen_usage = seen_usage or not usages.missing(chunk.get("usage"))
                    out.append(chunk)
            if out:
                yield out
        if target is not None and not seen_usage and target.provider.quirks.estimate_usage and chunks:
            yield [{**base, "choices": [], "usage": usages.estimate(target.provider.id, prompt(), max(chunks - 2, 1))}]
    finally:
        await it.aclose()
