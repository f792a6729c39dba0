"""Pipeline stream items -> the Responses API SSE event sequence (docs/responses.md).

What clients rely on: `response.created` first, `sequence_number` strictly increasing from 0, every
item opened with `output_item.added` and delivered with `output_item.done` (Codex reads items only
from there), `output_index` = the item's position in `response.output`, and exactly one terminal
event, `response.completed` (or `response.failed`), carrying the full Response.

Item lifetimes: a reasoning item ends when anything else starts; the message item and function
calls stay open together until reasoning or a search starts, or the stream ends, so the citations
that follow the text can still be attached to its message. Each search shows as its own
web_search_call item, between the text of the rounds around it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ...tools.base import ToolCall
from ...tools.events import Keepalive, ToolFinished, ToolStarted
from .output import (
    annotation,
    call_item,
    call_item_id,
    message_item,
    new_id,
    reasoning_item,
    response_object,
    status_for,
    usage_from_chat,
    web_search_item,
)
from .request import ResponsesContext

log = logging.getLogger("searchhub.responses")
_encode = msgspec.json.Encoder().encode
KEEPALIVE = b": keepalive\n\n"
_EMPTY_TEXT_PART = {"type": "output_text", "text": "", "annotations": []}


def sse(event: dict) -> bytes:
    """One event in the wire format: `event: <type>` and `data: <json>` lines, then a blank line."""
    return b"event: " + event["type"].encode() + b"\ndata: " + _encode(event) + b"\n\n"


@dataclass(slots=True)
class _Message:
    index: int
    id: str
    start: int  # offset of its first character in all the text of the turn (chat citations count so)
    parts: list[str] = field(default_factory=list)
    length: int = 0
    annotations: list[dict] = field(default_factory=list)


@dataclass(slots=True)
class _Reasoning:
    index: int
    id: str
    parts: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Call:
    index: int
    id: str
    call_id: str
    chat_name: str
    custom: bool
    parts: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Search:
    index: int
    id: str
    call: ToolCall


def _default_error(exc: BaseException) -> tuple[str, str]:
    return "server_error", "the model stream failed"


class ResponsesStream:
    """Encodes one response. Feed it pipeline items; it returns the events each one produces."""

    def __init__(self, ctx: ResponsesContext, *, response_id: str | None = None,
                 created_at: int | None = None) -> None:
        self.ctx = ctx
        self.response_id = response_id or new_id("resp")
        self.created_at = created_at if created_at is not None else int(time.time())
        self.output: list[dict] = []  # each item's latest state, by output_index
        self.response: dict | None = None  # the final Response, once the terminal event is made
        self._seq = 0
        self._started = False
        self._reasoning: _Reasoning | None = None
        self._message: _Message | None = None
        self._calls: dict[int, _Call] = {}  # open calls by the chat tool-call index
        self._searches: dict[str, _Search] = {}  # open server tool calls by ToolCall.id
        self._text_total = 0
        self._finish_reason: str | None = None
        self._usage: Any = None
        self._unsent: list[dict] | None = None  # the final events, while `before_end` runs before they go out

    # --- driving ---------------------------------------------------------------------------------

    async def encode(
        self, items: AsyncGenerator[Any, None], *,
        before_end: Callable[[dict], Awaitable[None]] | None = None,
        describe_error: Callable[[BaseException], tuple[str, str]] = _default_error,
    ) -> AsyncIterator[bytes]:
        """The SSE byte stream for pipeline items. `before_end(response)` runs before the terminal event
        is sent (to store it first); `describe_error(exc)` gives (code, message) for a broken stream."""
        try:
            try:
                # response.created goes out with the first item's events (`feed` starts the
                # response), so a search round's requests leave before it is made
                async for item in items:
                    if isinstance(item, Keepalive):
                        yield b"".join([sse(event) for event in self.start()]) + KEEPALIVE
                        continue
                    events = self.feed(item)
                    if events:  # an item's events in one write
                        yield b"".join([sse(event) for event in events])
            except Exception as exc:  # the stream broke after it started: say so in-band
                code, message = describe_error(exc)
                final = self.fail(message, code)
            else:
                final = self.finish()
            if before_end is not None and self.response is not None:
                self._unsent = final
                await before_end(self.response)
                self._unsent = None
            for event in final:
                yield sse(event)
        finally:
            await items.aclose()

    def start(self) -> list[dict]:
        if self._started:
            return []
        self._started = True
        snapshot = response_object(self.ctx, self.response_id, self.created_at, status="in_progress", output=[])
        return [self._event("response.created", response=snapshot),
                self._event("response.in_progress", response=snapshot)]

    def feed(self, item: Any) -> list[dict]:
        events = self.start()
        if isinstance(item, dict):
            events += self._chunk(item)
        elif isinstance(item, list):  # one upstream read's chunks
            for chunk in item:
                if isinstance(chunk, dict):
                    events += self._chunk(chunk)
        elif isinstance(item, ToolStarted):
            events += self._search_started(item.call)
        elif isinstance(item, ToolFinished):
            events += self._search_finished(item.call)
        return events

    def finish(self) -> list[dict]:
        """Close what is open and make `response.completed`."""
        events = self.start()
        status, reason = status_for(self._finish_reason)
        events += self._close_open("incomplete" if status == "incomplete" else "completed")
        events += self._close_searches()
        if not self.output:  # an empty answer is still a message
            events += self._open_message()
            events += self._close_message("incomplete" if status == "incomplete" else "completed")
        self.response = response_object(
            self.ctx, self.response_id, self.created_at, status=status, output=list(self.output),
            usage=usage_from_chat(self._usage), incomplete_reason=reason,
        )
        events.append(self._event("response.completed", response=self.response))
        return events

    def fail(self, message: str, code: str = "server_error") -> list[dict]:
        """Close what is open as incomplete and make `response.failed`."""
        events = self.start()
        events += self._close_open("incomplete")
        events += self._close_searches()
        events.append(self._failed(message, code))
        return events

    def interrupted(self, message: str, code: str = "server_error") -> bytes:
        """The SSE bytes that end a stream cut short from outside (the gateway shutting down, while
        `encode` waits for its items): `fail`'s events, or nothing when the terminal event went out.
        Cut while `before_end` stored a finished response, the response ends failed instead of
        completed (it may not have been stored), after the item events `finish` made."""
        unsent, self._unsent = self._unsent, None
        if unsent is not None:
            events = unsent
            if unsent[-1]["type"] != "response.failed":  # response.failed takes response.completed's place
                self._seq = unsent[-1]["sequence_number"]
                events = [*unsent[:-1], self._failed(message, code)]
        elif self.response is None:
            events = self.fail(message, code)
        else:
            return b""
        return b"".join([sse(event) for event in events])

    def _failed(self, message: str, code: str) -> dict:
        """`response.failed`, carrying the Response as it stands."""
        self.response = response_object(
            self.ctx, self.response_id, self.created_at, status="failed", output=list(self.output),
            usage=usage_from_chat(self._usage) if self._usage is not None else None,
            error={"code": code, "message": message},
        )
        return self._event("response.failed", response=self.response)

    # --- plumbing --------------------------------------------------------------------------------

    def _event(self, kind: str, **fields: Any) -> dict:
        event = {"type": kind, "sequence_number": self._seq, **fields}
        self._seq += 1
        return event

    def _add(self, item: dict) -> dict:
        index = len(self.output)
        self.output.append(item)
        return self._event("response.output_item.added", output_index=index, item=item)

    def _done(self, index: int, item: dict) -> dict:
        self.output[index] = item
        return self._event("response.output_item.done", output_index=index, item=item)

    def _close_open(self, status: str) -> list[dict]:
        """Finish the open reasoning, message and call items, in output order."""
        closers: list[tuple[int, Callable[[], list[dict]]]] = []
        if self._reasoning is not None:
            closers.append((self._reasoning.index, self._close_reasoning))
        if self._message is not None:
            closers.append((self._message.index, lambda: self._close_message(status)))
        for call in self._calls.values():
            closers.append((call.index, lambda call=call: self._close_call(call, status)))
        self._calls = {}
        events: list[dict] = []
        for _, close in sorted(closers, key=lambda c: c[0]):
            events += close()
        return events

    # --- chat chunks -----------------------------------------------------------------------------

    def _chunk(self, chunk: dict) -> list[dict]:
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = usage
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            return []
        events: list[dict] = []
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                events += self._reasoning_delta(reasoning)
            for key in ("content", "refusal"):  # a refusal reads as text
                text = delta.get(key)
                if isinstance(text, str) and text:
                    events += self._text_delta(text)
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                events += self._call_fragments(calls)
            annotations = delta.get("annotations")
            if isinstance(annotations, list):
                events += self._annotations(annotations)
            finish = choice.get("finish_reason")
            if isinstance(finish, str) and finish:
                self._finish_reason = finish
        return events

    def _reasoning_delta(self, text: str) -> list[dict]:
        events: list[dict] = []
        r = self._reasoning
        if r is None:
            events += self._close_open("completed")
            r = self._reasoning = _Reasoning(len(self.output), new_id("rs"))
            events.append(self._add(reasoning_item(r.id, None)))
            events.append(self._event("response.reasoning_summary_part.added", item_id=r.id, output_index=r.index,
                                      summary_index=0, part={"type": "summary_text", "text": ""}))
        r.parts.append(text)
        events.append(self._event("response.reasoning_summary_text.delta", item_id=r.id, output_index=r.index,
                                  summary_index=0, delta=text))
        return events

    def _close_reasoning(self) -> list[dict]:
        r = self._reasoning
        assert r is not None
        self._reasoning = None
        text = "".join(r.parts)
        return [
            self._event("response.reasoning_summary_text.done", item_id=r.id, output_index=r.index,
                        summary_index=0, text=text),
            self._event("response.reasoning_summary_part.done", item_id=r.id, output_index=r.index,
                        summary_index=0, part={"type": "summary_text", "text": text}),
            self._done(r.index, reasoning_item(r.id, text)),
        ]

    def _open_message(self) -> list[dict]:
        m = self._message = _Message(len(self.output), new_id("msg"), self._text_total)
        return [
            self._add(message_item(m.id, None, [], status="in_progress")),
            self._event("response.content_part.added", item_id=m.id, output_index=m.index, content_index=0,
                        part=_EMPTY_TEXT_PART),
        ]

    def _text_delta(self, text: str) -> list[dict]:
        events = self._close_reasoning() if self._reasoning is not None else []
        if self._message is None:
            # a message does not start with blank lines (the pipeline separates rounds with "\n\n");
            # they still count for the chat citation offsets
            stripped = text.lstrip("\n")
            self._text_total += len(text) - len(stripped)
            if not stripped:
                return events
            text = stripped
            events += self._open_message()
        m = self._message
        assert m is not None
        m.parts.append(text)
        m.length += len(text)
        self._text_total += len(text)
        events.append(self._event("response.output_text.delta", item_id=m.id, output_index=m.index,
                                  content_index=0, delta=text, logprobs=[]))
        return events

    def _annotations(self, annotations: list) -> list[dict]:
        m = self._message
        if m is None:
            log.debug("responses stream: citations arrived with no open message; dropped")
            return []
        events = []
        for raw in annotations:
            ann = annotation(raw, shift=m.start, limit=m.length)
            if ann is None:
                continue
            events.append(self._event("response.output_text.annotation.added", item_id=m.id, output_index=m.index,
                                      content_index=0, annotation_index=len(m.annotations), annotation=ann))
            m.annotations.append(ann)
        return events

    def _close_message(self, status: str) -> list[dict]:
        m = self._message
        assert m is not None
        self._message = None
        text = "".join(m.parts)
        part = {"type": "output_text", "text": text, "annotations": m.annotations}
        return [
            self._event("response.output_text.done", item_id=m.id, output_index=m.index, content_index=0,
                        text=text, logprobs=[]),
            self._event("response.content_part.done", item_id=m.id, output_index=m.index, content_index=0,
                        part=part),
            self._done(m.index, message_item(m.id, text, m.annotations, status=status)),
        ]

    def _call_fragments(self, fragments: list) -> list[dict]:
        events: list[dict] = []
        for frag in fragments:
            if not isinstance(frag, dict):
                continue
            index = frag.get("index") if isinstance(frag.get("index"), int) else 0
            function = frag.get("function") if isinstance(frag.get("function"), dict) else {}
            call = self._calls.get(index)
            if call is None:
                if self._reasoning is not None:
                    events += self._close_reasoning()
                name = function.get("name") if isinstance(function.get("name"), str) else ""
                call_id = frag.get("id") if isinstance(frag.get("id"), str) and frag.get("id") else new_id("call")
                call = _Call(len(self.output), call_item_id(self.ctx, name), call_id, name,
                             self.ctx.client_tool(name).kind == "custom")
                self._calls[index] = call
                events.append(self._add(call_item(self.ctx, call.id, call_id, name, None, status="in_progress")))
            arguments = function.get("arguments")
            if isinstance(arguments, str) and arguments:
                call.parts.append(arguments)
                if not call.custom:  # a custom tool's input is known only once its JSON is whole
                    events.append(self._event("response.function_call_arguments.delta", item_id=call.id,
                                              output_index=call.index, delta=arguments))
        return events

    def _close_call(self, call: _Call, status: str) -> list[dict]:
        item = call_item(self.ctx, call.id, call.call_id, call.chat_name, "".join(call.parts),
                         status="completed" if status == "completed" else "incomplete")
        events = []
        if call.custom:
            if item["input"]:
                events.append(self._event("response.custom_tool_call_input.delta", item_id=call.id,
                                          output_index=call.index, delta=item["input"]))
            events.append(self._event("response.custom_tool_call_input.done", item_id=call.id,
                                      output_index=call.index, input=item["input"]))
        else:
            events.append(self._event("response.function_call_arguments.done", item_id=call.id,
                                      output_index=call.index, name=item["name"], arguments=item["arguments"]))
        events.append(self._done(call.index, item))
        return events

    # --- searches --------------------------------------------------------------------------------

    def _search_started(self, call: ToolCall) -> list[dict]:
        if not self.ctx.hosted or call.id in self._searches:
            return []  # searches the client did not ask for stay invisible
        events = self._close_open("completed")
        s = self._searches[call.id] = _Search(len(self.output), new_id("ws"), call)
        events.append(self._add(web_search_item(s.id, call, done=False)))
        events.append(self._event("response.web_search_call.in_progress", item_id=s.id, output_index=s.index))
        events.append(self._event("response.web_search_call.searching", item_id=s.id, output_index=s.index))
        return events

    def _search_finished(self, call: ToolCall) -> list[dict]:
        if not self.ctx.hosted:
            return []
        events = self._search_started(call) if call.id not in self._searches else []
        s = self._searches.pop(call.id)
        events.append(self._event("response.web_search_call.completed", item_id=s.id, output_index=s.index))
        events.append(self._done(s.index, web_search_item(s.id, call, results=self.ctx.results)))
        return events

    def _close_searches(self) -> list[dict]:
        events: list[dict] = []
        for s in sorted(self._searches.values(), key=lambda s: s.index):
            events.append(self._event("response.web_search_call.completed", item_id=s.id, output_index=s.index))
            events.append(self._done(s.index, web_search_item(s.id, s.call, results=self.ctx.results)))
        self._searches = {}
        return events
