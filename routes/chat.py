"""POST /v1/chat/completions: decode, run the pipeline, encode (JSON or SSE)."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hub.protocols.chat.request import validate_chat
from hub.runtime import Runtime
from hub.streams.relay import DONE, Frames
from hub.tools.events import Keepalive, ToolStarted

from .common import (
    EventStream,
    cancel_on_disconnect,
    expected_error,
    openai_error,
    openai_stream_error,
    options,
    read_json,
    runtime,
    shutting_down,
    stream_broke,
)

log = logging.getLogger("searchhub.chat")
_encode = msgspec.json.encode
SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


async def chat_completions(request: Request) -> Response:
    try:
        rt = runtime(request)
        body = await read_json(request, rt.config.server.max_body_bytes)
        validate_chat(body)
        # Watched from here on: a client that leaves before the answer (or a stream's first content)
        # cancels the work, which closes the upstream request and frees its concurrency slot.
        return await cancel_on_disconnect(request, _answer(request, rt, body))
    except Exception as e:  # every failure answers in OpenAI's error shape
        if not expected_error(e):
            log.exception("chat completion failed")
        return openai_error(e)


async def _answer(request: Request, rt: Runtime, body: dict) -> Response:
    opts = options(request, body)
    opts.frames = True  # encode_stream takes pre-framed relay bytes
    if body.get("stream"):
        items = await rt.pipeline.stream(body, opts)
        if isinstance(items, Frames):  # a plain relay: its bytes go out as they are
            return RelayStream(items.it, headers=SSE_HEADERS, interrupted=interrupted)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return EventStream(encode_stream(items, include_usage), headers=SSE_HEADERS, interrupted=interrupted)
    outcome = await rt.pipeline.complete(body, opts)
    return Response(_encode(outcome.response), media_type="application/json")


class RelayStream(EventStream):
    """A plain relay's frames written as they come (encode_stream's rules for `bytes` items, without
    its generator in between: one layer less on every chunk)."""

    async def _pump(self, send, start) -> bool:
        await start()  # the relay's first frames are ready: no reason to wait
        try:
            async for frames in self.chunks:
                if frames.endswith(DONE):  # the last write: it ends the body too
                    await send({"type": "http.response.body", "body": frames, "more_body": False})
                    return True
                await send({"type": "http.response.body", "body": frames, "more_body": True})
        except Exception as e:
            await send({"type": "http.response.body", "body": _stream_failed(e), "more_body": True})
            return False
        await send({"type": "http.response.body", "body": DONE, "more_body": False})
        return True


def interrupted(message: str) -> bytes:
    """A stream cut short by the graceful shutdown (EventStream.interrupt): the error chunk a stream
    that breaks ends with (`_stream_failed`), and no [DONE]."""
    return openai_stream_error(shutting_down(message))


def _stream_failed(e: Exception) -> bytes:
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
        yield _stream_failed(e)
        return
    finally:
        await items.aclose()
    yield DONE


routes = [Route("/v1/chat/completions", chat_completions, methods=["POST"])]
