"""POST /v1/chat/completions: check the request, run the turn, encode (JSON or SSE)."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator

import msgspec

from hub.streams.relay import DONE, Frames
from hub.tools.events import Keepalive, ToolStarted

from ..errors import shutting_down, stream_broke
from ..serving import SSE_HEADERS, Answer, Call, Endpoint, ProtocolKind, Runtime, Stream
from .errors import openai_error, openai_stream_error
from .request import validate_chat

log = logging.getLogger("searchhub.chat")
_encode = msgspec.json.encode


async def completions(rt: Runtime, call: Call) -> Answer | Stream:
    body = call.json
    validate_chat(body)
    opts = call.options()
    opts.frames = True  # encode_stream takes pre-framed relay bytes
    if body.get("stream"):
        items = await rt.pipeline.stream(body, opts)
        if isinstance(items, Frames):  # a plain relay: its bytes go out as they are
            return Stream(items.it, interrupted, SSE_HEADERS, relay=True, broken=stream_failed)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return Stream(encode_stream(items, include_usage), interrupted, SSE_HEADERS)
    outcome = await rt.pipeline.complete(body, opts)
    return Answer(_encode(outcome.response))


def interrupted(message: str) -> bytes:
    """A stream cut short by the graceful shutdown: the error chunk a stream that breaks ends with
    (`stream_failed`), and no [DONE]."""
    return openai_stream_error(shutting_down(message))


def stream_failed(e: Exception) -> bytes:
    return openai_stream_error(stream_broke(e, log))


def _frame(chunk: dict, include_usage: bool) -> bytes:
    """One chunk as an SSE event; usage only when the client asked for it (nothing for a chunk
    that carried only usage)."""
    if not include_usage and "usage" in chunk:
        if not chunk.get("choices"):
            return b""
        chunk = {k: v for k, v in chunk.items() if k != "usage"}
    return b"data: " + _encode(chunk) + b"\n\n"


async def encode_stream(items: AsyncGenerator, include_usage: bool) -> AsyncIterator[bytes]:
    try:
        async for item in items:
            if isinstance(item, bytes):  # already framed by the relay, [DONE] included when it ends
                yield item
                if item.endswith(DONE):
                    return
            elif isinstance(item, list):  # one upstream read's chunks: one write
                frames = b"".join([_frame(chunk, include_usage) for chunk in item])
                if frames:
                    yield frames
            elif isinstance(item, dict):
                frame = _frame(item, include_usage)
                if frame:
                    yield frame
            elif isinstance(item, Keepalive):
                yield b": keepalive\n\n"
            elif isinstance(item, ToolStarted):  # chat has no event for it: a comment says work began
                yield b": " + item.call.HOSTED.anthropic_name.encode() + b" started\n\n"
    except Exception as e:
        yield stream_failed(e)
        return
    finally:
        await items.aclose()
    yield DONE


PROTOCOL = ProtocolKind(
    name="chat",
    endpoints=(Endpoint("POST", ("/v1/chat/completions",), completions, "chat completion", direct=True),),
    error=openai_error,
)
