"""Relaying a backend's stream when searchhub adds nothing to it: normalized, never buffered."""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec

from .backends.normalize import StreamNormalizer
from .backends.openai_compat import decode_chunk
from .settings import Target

_encode = msgspec.json.encode
DONE = b"data: [DONE]\n\n"


def plain(data: bytes) -> bool:
    """A chunk the normalizer would leave as it is: text or usage only, no role, tools, reasoning
    or finish. Checked on the bytes, so most of a stream is relayed without decoding."""
    return (b'"finish_reason":null' in data or b'"finish_reason": null' in data) and not (
        b'"tool_calls"' in data or b'"role"' in data or b'"reasoning' in data or b'"error"' in data)


async def relay_sse(it: AsyncIterator[list[bytes]], target: Target) -> AsyncIterator[bytes]:
    """Chat-to-chat relay: each network read of the upstream becomes one write to the client. The
    upstream's `[DONE]` goes out framed, in the write of the chunks that came with it (the encoder
    then stops); a stream that ends without one gets it from the encoder."""
    normalizer = StreamNormalizer()
    first = True
    try:  # try/finally rather than contextlib.aclosing: this runs once per stream on the hot path
        async for batch in it:
            out = []
            for data in batch:
                if data == b"[DONE]":  # the end goes out in the same write as the last chunks
                    out.append(DONE)
                    yield b"".join(out)
                    return  # nothing after [DONE] is relayed
                if not data:
                    continue
                if not first and plain(data):
                    out.append(b"data: " + data + b"\n\n")
                    continue
                chunk = decode_chunk(data, target.provider)
                if chunk is None:
                    continue
                first = False
                fixed = normalizer.feed(chunk)
                if fixed is not None:
                    out.append(b"data: " + _encode(fixed) + b"\n\n")
            if out:
                yield b"".join(out)
    finally:
        await it.aclose()


async def relay_chunks(it: AsyncIterator[dict]) -> AsyncIterator[dict]:
    normalizer = StreamNormalizer()
    try:
        async for raw in it:
            chunk = normalizer.feed(raw)
            if chunk is not None:
                yield chunk
    finally:
        await it.aclose()
