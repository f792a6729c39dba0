"""A provider's own event stream, relayed untouched (hub/routing/passthrough.py), counts as answered
at its first content and as complete at its terminal event.

Until the first content nothing has reached the client, so a stream that closes, breaks, sends an
`error` (Anthropic's `overloaded_error` after a 200, Responses `response.failed`) or a body without
events (a `200 text/html` page) is a failed attempt the dispatcher fails over from. After it, a
stream that ends without its terminal event (`message_stop`; `response.completed`, `.incomplete`,
`.failed` or `error`) raises, and the endpoint ends it with its error event.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass

import msgspec

from ..upstream.http import UpstreamError
from .watch import HEAD_LIMIT

# per provider type: (content events, failure events, terminal events)
_EVENTS: dict[str, tuple[frozenset[str], frozenset[str], frozenset[bytes]]] = {
    "anthropic": (frozenset({"content_block_start", "content_block_delta", "message_delta"}),
                  frozenset({"error"}), frozenset({b"message_stop", b"error"})),
    "openai": (frozenset({"response.output_item.added", "response.output_text.delta", "response.completed",
                          "response.incomplete"}),
               frozenset({"error", "response.failed"}),
               frozenset({b"response.completed", b"response.incomplete", b"response.failed", b"error"})),
}
_decode = msgspec.json.decode


@dataclass(slots=True)
class Opened:
    """A stream whose first content arrived: the bytes read so far, and the rest of the stream."""

    head: list[bytes]
    rest: AsyncIterator[bytes]
    provider_type: str


def _event_type(line: bytes) -> str | None:
    if line.startswith(b"event:"):
        return line[6:].strip().decode(errors="replace")
    if line.startswith(b"data:"):
        try:
            data = _decode(line[5:])
        except msgspec.DecodeError:
            return None
        kind = data.get("type") if isinstance(data, dict) else None
        return kind if isinstance(kind, str) else None
    return None


async def first_content(chunks: AsyncIterator[bytes], provider_type: str) -> Opened:
    """Read until the first content event; anything else first is a retryable UpstreamError (and
    the upstream response is closed)."""
    content, failed, _ = _EVENTS[provider_type]
    head: list[bytes] = []
    buf = b""
    size = 0
    try:
        async for chunk in chunks:
            head.append(chunk)
            size += len(chunk)
            if size > HEAD_LIMIT:
                raise UpstreamError("upstream sent over 1 MiB before any content", status=502)
            *lines, buf = (buf + chunk).split(b"\n")
            for line in lines:
                kind = _event_type(line.rstrip(b"\r"))
                if kind in failed:
                    raise UpstreamError(f"upstream sent '{kind}' before any content", status=502)
                if kind in content:
                    return Opened(head, chunks, provider_type)
        raise UpstreamError("upstream stream ended before any content", status=502)
    except UpstreamError as e:
        await chunks.aclose()
        raise UpstreamError(e.reason, status=e.status or 502) from None
    except BaseException:
        await chunks.aclose()
        raise


class _LastEvent:
    """The name of the last complete `event:` line of a byte stream, read by read."""

    def __init__(self) -> None:
        self.name: bytes | None = None
        self._carry = b""  # an `event:` line cut by the end of a read, or the read's last bytes

    def feed(self, chunk: bytes) -> None:
        scan = self._carry + chunk
        i = scan.rfind(b"\nevent:")
        j = scan.find(b"\n", i + 1) if i >= 0 else -1
        if i >= 0 and j < 0:
            self._carry = scan[i:i + 256]
            return
        if i >= 0:
            self.name = scan[i + 7:j].strip()
        self._carry = scan[-6:]  # a "\nevent:" cut by the end of this read


async def watched(opened: Opened) -> AsyncIterator[bytes]:
    """The stream's bytes, the first ones again; raises when its last event is not a terminal one.
    Only `event:` lines are read (both providers send them); a stream without any is not judged."""
    last = _LastEvent()
    async with aclosing(opened.rest) as rest:
        for chunk in opened.head:
            last.feed(chunk)
            yield chunk
        async for chunk in rest:
            last.feed(chunk)
            yield chunk
    if last.name is not None and last.name not in _EVENTS[opened.provider_type][2]:
        raise UpstreamError("the upstream stream ended without finishing", status=502, retryable=False)
