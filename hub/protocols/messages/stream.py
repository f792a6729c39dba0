"""Pipeline stream items -> Anthropic's SSE event sequence (docs/claude-code.md).

Blocks open in order 0, 1, 2 ... and each closes before the next opens. Tool input travels only as
`input_json_delta` (Claude Code ignores input in content_block_start). Client tool-call arguments
are buffered until the call is complete and repaired into one JSON object, because the SDKs parse
every fragment and fail on the broken JSON local models emit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import msgspec

from ...tools.base import ToolCall
from ...tools.events import Keepalive, ToolFinished, ToolStarted
from .blocks import (
    THINKING_SIGNATURE,
    HitIndex,
    message_id,
    server_tool_use_block,
    server_tool_use_id,
    stop_reason,
    tool_result_block,
    tool_use_id,
    url_citation,
    usage,
    usage_counts,
)
from .request import MessagesContext
from .response import tool_input

_encode = msgspec.json.encode
PING = b'event: ping\ndata: {"type":"ping"}\n\n'


def sse(event: str, data: dict) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + _encode(data) + b"\n\n"


def error_event(error_type: str, message: str) -> bytes:
    return sse("error", {"type": "error", "error": {"type": error_type, "message": message}})


@dataclass(slots=True)
class _Call:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)


class MessagesStream:
    """Encodes one response. Call start(), feed() for every pipeline item, then finish() — or
    fail() when the pipeline broke after start()."""

    def __init__(self, ctx: MessagesContext, *, input_tokens: int = 0, id: str | None = None) -> None:
        self.ctx = ctx
        self.id = id or message_id()
        self._input_tokens = input_tokens
        self._index = -1
        self._open: str | None = None  # type of the open block
        self._calls: dict[int, _Call] = {}
        self._last_call: int | None = None
        self._started_searches: set[str] = set()
        self._tool_calls: list[ToolCall] = []
        self._hits = HitIndex()
        self._text: list[str] = []  # the answer so far: a citation into a document looks up the claim it backs
        self._finish: object = None
        self._usage: object = None
        self._done = False
        self._had_tool_use = False
        self._started = False

    # --- framing --------------------------------------------------------------------------------

    def start(self) -> bytes:
        """`message_start`, once: `feed`, `finish` and `fail` begin with it when it has not gone
        out yet, so a caller may make it lazily, with the first item's events (endpoints.py)."""
        if self._started:
            return b""
        self._started = True
        message = {
            "id": self.id, "type": "message", "role": "assistant", "model": self.ctx.model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": self._input_tokens, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 1, "service_tier": "standard"},
        }
        return sse("message_start", {"type": "message_start", "message": message})

    def finish(self) -> bytes:
        if self._done:
            return b""
        self._done = True
        out = self.start() + self._close() + self._flush_calls()
        final = usage(self._usage, server_tools=usage_counts(self._tool_calls) if self.ctx.server_tools else None)
        if not isinstance(self._usage, dict):
            final["input_tokens"] = self._input_tokens
        final.pop("service_tier", None)
        reason = stop_reason(self._finish, has_tool_use=self._had_tool_use)
        out += sse("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": reason, "stop_sequence": None}, "usage": final})
        return out + sse("message_stop", {"type": "message_stop"})

    def fail(self, error_type: str, message: str) -> bytes:
        """The stream broke after it started: Anthropic's `error` event (no message_stop follows)."""
        self._done = True
        return self.start() + error_event(error_type, message)

    def interrupted(self, error_type: str, message: str) -> bytes:
        """The stream was cut short from outside (the gateway shutting down): `fail`'s `error`
        event, or nothing when the stream has ended already."""
        return b"" if self._done else self.fail(error_type, message)

    # --- items ----------------------------------------------------------------------------------

    def feed(self, item: object) -> bytes:
        return self.start() + self._item(item)

    def _item(self, item: object) -> bytes:
        if isinstance(item, dict):
            return self._chunk(item)
        if isinstance(item, list):  # one upstream read's chunks
            return b"".join([self._chunk(chunk) for chunk in item if isinstance(chunk, dict)])
        if isinstance(item, ToolStarted):
            return self._tool_started(item.call)
        if isinstance(item, ToolFinished):
            return self._tool_finished(item.call)
        if isinstance(item, Keepalive):
            return PING
        return b""

    def _chunk(self, chunk: dict) -> bytes:
        if chunk.get("usage") is not None:
            self._usage = chunk["usage"]
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return b""
        choice = choices[0]
        delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
        out = b""
        reasoning = delta.get("reasoning_content")
        if self.ctx.show_thinking and isinstance(reasoning, str) and reasoning:
            out += self._open_block("thinking", {"type": "thinking", "thinking": "", "signature": ""})
            out += self._delta({"type": "thinking_delta", "thinking": reasoning})
        text = delta.get("content")
        if isinstance(text, str) and text:
            self._text.append(text)
            out += self._open_block("text", {"type": "text", "text": ""})
            out += self._delta({"type": "text_delta", "text": text})
        if isinstance(delta.get("tool_calls"), list):
            self._buffer_calls(delta["tool_calls"])
        annotations = delta.get("annotations")
        if isinstance(annotations, list) and annotations and self.ctx.server_tools:
            out += self._citations(annotations)
        if choice.get("finish_reason"):
            self._finish = choice["finish_reason"]
            out += self._close() + self._flush_calls()
        return out

    def _tool_started(self, call: ToolCall) -> bytes:
        if not self.ctx.server_tools:
            return b""
        block_id = server_tool_use_id(call.id)
        if block_id in self._started_searches:
            return b""
        self._started_searches.add(block_id)
        out = self._close()
        out += self._start(server_tool_use_block(call, shown=False))
        out += self._delta({"type": "input_json_delta", "partial_json": ""})
        shown = json.dumps(call.shown_input(), ensure_ascii=False)
        return out + self._delta({"type": "input_json_delta", "partial_json": shown}) + self._close()

    def _tool_finished(self, call: ToolCall) -> bytes:
        self._hits.add(call)
        if not self.ctx.server_tools:
            return b""
        out = self._tool_started(call)  # a finish without a start still shows the call
        self._tool_calls.append(call)
        out += self._close() + self._start(tool_result_block(call))
        return out + self._close()

    def _citations(self, annotations: list) -> bytes:
        """Chat reports citations after the text, so they go to the text block still open (its spans
        are lost); Anthropic puts citations on a text block, so without one they get their own."""
        parsed = [p for a in annotations if (p := url_citation(a)) is not None]
        if not parsed:
            return b""
        text = "".join(self._text) if self._hits.has_documents else ""
        citations = [c for url, title, start, end in parsed
                     if (c := self._hits.citation(url, title, text[start:end] if start is not None and end is not None
                                                  else "")) is not None]
        if not citations:
            return b""
        out = b""
        if self._open != "text":
            out += self._open_block("text", {"type": "text", "text": "", "citations": []})
        for citation in citations:
            out += self._delta({"type": "citations_delta", "citation": citation})
        return out

    # --- tool calls -----------------------------------------------------------------------------

    def _buffer_calls(self, fragments: list) -> None:
        for frag in fragments:
            if not isinstance(frag, dict):
                continue
            function = frag.get("function") if isinstance(frag.get("function"), dict) else {}
            index = frag.get("index")
            if not isinstance(index, int) or isinstance(index, bool):
                index = self._last_call if self._last_call is not None else 0
            call = self._calls.setdefault(index, _Call())
            self._last_call = index
            if call.id is None and isinstance(frag.get("id"), str) and frag["id"]:
                call.id = frag["id"]
            if call.name is None and isinstance(function.get("name"), str) and function["name"]:
                call.name = function["name"]
            if isinstance(function.get("arguments"), str):
                call.arguments.append(function["arguments"])

    def _flush_calls(self) -> bytes:
        out = b""
        for index in sorted(self._calls):
            call = self._calls[index]
            if not call.name:
                continue
            block_id = tool_use_id(call.id)
            arguments = tool_input("".join(call.arguments), name=call.name, call_id=block_id)
            out += self._start({"type": "tool_use", "id": block_id, "name": call.name, "input": {}})
            out += self._delta({"type": "input_json_delta", "partial_json": ""})
            out += self._delta({"type": "input_json_delta", "partial_json": json.dumps(arguments, ensure_ascii=False)})
            out += self._close()
            self._had_tool_use = True
        self._calls.clear()
        self._last_call = None
        return out

    # --- blocks ---------------------------------------------------------------------------------

    def _open_block(self, kind: str, block: dict) -> bytes:
        if self._open == kind:
            return b""
        return self._close() + self._start(block)

    def _start(self, block: dict) -> bytes:
        self._index += 1
        self._open = block["type"]
        return sse("content_block_start", {"type": "content_block_start", "index": self._index,
                                           "content_block": block})

    def _delta(self, delta: dict) -> bytes:
        return sse("content_block_delta", {"type": "content_block_delta", "index": self._index, "delta": delta})

    def _close(self) -> bytes:
        if self._open is None:
            return b""
        out = b""
        if self._open == "thinking":
            out += self._delta({"type": "signature_delta", "signature": THINKING_SIGNATURE})
        self._open = None
        return out + sse("content_block_stop", {"type": "content_block_stop", "index": self._index})
