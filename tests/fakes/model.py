"""A scripted OpenAI-compatible chat backend on the real wire (SSE like vLLM, optional Ollama quirks).

Script entries (consumed one per request; a callable is called with the request body):
  {"content": "text"}                                   plain answer
  {"tool_calls": [{"name", "arguments", "id"?}], "content"?}   tool calls; arguments str or dict
  {"status": 500, "body"?: {...}}                       HTTP error
  {"delay": 0.5, ...}                                   wait before answering (before headers)
  {"chunk_delay": 0.05, ...}                            wait between stream chunks
  {"cut_after": 2, ...}                                 stream: drop the connection after N chunks
  {"finish_reason": "stop", ...}                        override (quirk: 'stop' with tool calls)
  {"ollama": True, ...}                                 whole tool calls per chunk, role on every chunk
  {"args_as_object": True, ...}, {"no_ids": True, ...}  quirks
  {"reasoning": "..."}                                  reasoning text (vLLM 'reasoning_content')
  {"raw_message": {...}} / {"raw_deltas": [{...}, ...]}  a message / stream deltas exactly as given (broken models)
  {"no_usage": True, ...}                               no usage at all (llama.cpp-family streams)
With an empty script the model answers {"content": "ok"}. `served_model` is the name its answers
give (llama.cpp's server gives its GGUF file's path); None: the request's `model`.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
import time
from collections.abc import Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .server import ServerThread

Reply = dict | Callable[[dict], dict]


class FakeModel:
    def __init__(self, name: str = "fake") -> None:
        self.name = name
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self._script: list[Reply] = []
        self._lock = threading.Lock()
        self.default: Reply = {"content": "ok"}
        self.cancelled = 0
        self.served_model: str | None = None
        self.server = ServerThread(Starlette(routes=[
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
        ]))

    @property
    def url(self) -> str:
        return self.server.url + "/v1"

    def start(self) -> FakeModel:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def script(self, *replies: Reply) -> FakeModel:
        with self._lock:
            self._script = list(replies)
            self.requests.clear()
            self.headers.clear()
        return self

    def reset(self) -> None:
        self.script()
        self.default = {"content": "ok"}
        self.cancelled = 0
        self.served_model = None

    def _next(self, body: dict) -> dict:
        with self._lock:
            self.requests.append(copy.deepcopy(body))
            reply = self._script.pop(0) if self._script else self.default
        return reply(body) if callable(reply) else reply

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "m", "object": "model", "created": 0,
                                                         "owned_by": "fake"}]})

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        self.headers.append(dict(request.headers))
        reply = self._next(body)
        if reply.get("delay"):
            deadline = time.monotonic() + reply["delay"]
            while time.monotonic() < deadline:
                await asyncio.sleep(0.02)
                if await request.is_disconnected():
                    self.cancelled += 1  # the gateway hung up on us
                    return Response(status_code=499)
        if "status" in reply:
            return JSONResponse(reply.get("body", {"error": {"message": "boom", "type": "server_error",
                                                              "param": None, "code": None}}),
                                status_code=reply["status"])
        calls = [self._call(i, c, reply) for i, c in enumerate(reply.get("tool_calls", []))]
        finish = reply.get("finish_reason") or ("tool_calls" if calls else "stop")
        usage = None if reply.get("no_usage") else {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not body.get("stream") and "raw_message" in reply:
            return JSONResponse({"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                                 "model": self.served_model or body.get("model"), "usage": usage,
                                 "choices": [{"index": 0, "message": reply["raw_message"], "finish_reason": finish}]})
        if not body.get("stream"):
            msg: dict = {"role": "assistant", "content": reply.get("content")}
            if calls:
                msg["tool_calls"] = calls
            if reply.get("reasoning"):
                msg["reasoning_content"] = reply["reasoning"]
            return JSONResponse({
                "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                "model": self.served_model or body.get("model"),
                "choices": [{"index": 0, "message": msg, "finish_reason": finish, "logprobs": None}],
                **({"usage": usage} if usage else {}),
            })
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return StreamingResponse(self._sse(body, reply, calls, finish, usage if include_usage else None),
                                 media_type="text/event-stream")

    def _call(self, i: int, c: dict, reply: dict) -> dict:
        args = c.get("arguments", "{}")
        if not isinstance(args, str) and not reply.get("args_as_object"):
            args = json.dumps(args)
        call = {"type": "function", "function": {"name": c["name"], "arguments": args}}
        if not reply.get("no_ids"):
            call["id"] = c.get("id") or f"call_{self.name}_{len(self.requests)}_{i}"
        return call

    async def _sse(self, body: dict, reply: dict, calls: list[dict], finish: str, usage: dict | None):
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": self.served_model or body.get("model")}
        ollama = reply.get("ollama")
        chunks: list[dict] = [{"role": "assistant", "content": ""}]
        if "raw_deltas" in reply:
            chunks += reply["raw_deltas"]
        if reply.get("reasoning"):
            chunks.append({"reasoning_content": reply["reasoning"]})
        text = reply.get("content") or ""
        words = text.split(" ")
        for i, w in enumerate(words):
            if w or i == 0 and text:
                chunks.append({"content": w + (" " if i < len(words) - 1 else "")})
        for i, call in enumerate(calls):
            if ollama:
                chunks.append({"tool_calls": [{**call, "index": i}]})
                continue
            args = call["function"]["arguments"]
            first = {"index": i, "type": "function", "function": {"name": call["function"]["name"], "arguments": ""}}
            if "id" in call:
                first["id"] = call["id"]
            chunks.append({"tool_calls": [first]})
            if isinstance(args, str):
                for k in range(0, len(args), 7):
                    chunks.append({"tool_calls": [{"index": i, "function": {"arguments": args[k:k + 7]}}]})
            else:
                chunks.append({"tool_calls": [{"index": i, "function": {"arguments": args}}]})
        cut = reply.get("cut_after")
        try:
            for n, delta in enumerate(chunks):
                if cut is not None and n >= cut:
                    raise ConnectionAbortedError  # drop the connection mid-stream
                if ollama and "role" not in delta:
                    delta = {"role": "assistant", **delta}
                yield _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
                if reply.get("chunk_delay"):
                    await asyncio.sleep(reply["chunk_delay"])
            yield _sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
            if usage:
                yield _sse({**base, "choices": [], "usage": usage})
            yield b"data: [DONE]\n\n"
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


def _sse(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"
