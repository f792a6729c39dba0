"""Reading a response body under a byte cap and a deadline. The cap counts decoded bytes (a small
gzip body can inflate a thousandfold), and decompression itself never produces more than the cap."""

from __future__ import annotations

import asyncio
import zlib
from dataclasses import dataclass

import httpx


class BadEncoding(Exception):
    pass


@dataclass(slots=True)
class Body:
    data: bytes
    wire_bytes: int  # as read from the network, before decompression
    truncated: bool  # stopped at the byte cap or the deadline
    timed_out: bool


class _Inflate:
    def __init__(self, encoding: str) -> None:
        enc = encoding.strip().lower()
        if enc in ("", "identity"):
            self._z = None
        elif enc in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            self._z = zlib.decompressobj(32 + zlib.MAX_WBITS)  # zlib or gzip header, auto-detected
        else:
            raise BadEncoding(f"unsupported content encoding {enc[:20]!r}")

    def feed(self, chunk: bytes, limit: int) -> bytes:
        """At most limit bytes of decoded output for this chunk (the caller stops at the cap)."""
        if self._z is None:
            return chunk[:limit]
        try:
            return self._z.decompress(chunk, limit)
        except zlib.error:
            raise BadEncoding("the compressed body is corrupt") from None


async def read_capped(resp: httpx.Response, max_bytes: int, deadline: float) -> Body:
    """Read until the end, max_bytes of content, or the loop time deadline, whichever comes first."""
    inflate = _Inflate(resp.headers.get("content-encoding", ""))
    buf = bytearray()
    wire = 0
    truncated = timed_out = False
    try:
        async with asyncio.timeout_at(deadline):
            async for chunk in resp.aiter_raw():
                wire += len(chunk)
                buf += inflate.feed(chunk, max_bytes - len(buf) + 1)
                if len(buf) > max_bytes:
                    del buf[max_bytes:]
                    truncated = True
                    break
    except TimeoutError:
        truncated = timed_out = True
    return Body(bytes(buf), wire, truncated, timed_out)
