"""Anthropic content blocks and messages -> chat messages (docs/claude-code.md).

Consecutive user turns merge (chat templates expect alternation); tool results become `tool`
messages right after the assistant's calls; a replayed hosted search becomes the tool round the
model would have made. The blocks come decoded and checked (hub/protocols/messages/wire.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from ...tools.kinds import web_search
from .wire import (
    Base64Source,
    Block,
    Document,
    Image,
    Message,
    MidConvSystem,
    SearchResult,
    ServerToolResult,
    ServerToolUse,
    Text,
    ToolReference,
    ToolResult,
    ToolUse,
)

# Anthropic server tool name -> (the chat function name the model calls, the tool's replay)
Replays = Mapping[str, tuple[str, Callable[[dict, object], tuple[dict, str]]]]
DEFAULT_REPLAYS: Replays = {web_search.HOSTED.anthropic_name: (web_search.WEB_SEARCH, web_search.replay)}
BILLING_HEADER = "x-anthropic-billing-header:"


def blocks_of(content: str | list[Block]) -> list[Block]:
    """Content as a list of blocks: a string is one text block."""
    return [Text(content)] if isinstance(content, str) else content


def joined_text(content: str | list[Block]) -> str:
    """The text blocks joined (system prompts, mid-conversation system messages)."""
    texts = [b.text for b in blocks_of(content) if type(b) is Text]
    # the billing header changes per request; it would defeat the backend's prefix cache
    return "\n\n".join(t for t in texts if t and not t.startswith(BILLING_HEADER))


def _reminder(text: str) -> str:
    return f"<system-reminder>\n{text}\n</system-reminder>"


def loaded_tools(messages: list[Message]) -> set[str]:
    """Deferred tools that Claude Code's ToolSearch has loaded (tool_reference blocks, 4.5)."""
    loaded: set[str] = set()

    def scan(blocks: str | list[Block] | None) -> None:
        for block in blocks if isinstance(blocks, list) else ():
            if type(block) is ToolReference:
                loaded.add(block.tool_name)
            elif type(block) is ToolResult:
                scan(block.content)

    for message in messages:
        scan(message.content)
    return loaded


class _History:
    """Builds chat messages, merging consecutive user (and assistant) turns as chat templates expect."""

    def __init__(self, replays: Replays = DEFAULT_REPLAYS, origins: dict | None = None) -> None:
        self.replays = replays
        self.origins = origins  # tool call id -> (a server tool's?, its name), when asked for
        self.messages: list[dict] = []
        self.system: list[str] = []
        self.pending: list[str] = []  # mid-conversation system text, waiting for the next user turn
        self.open_calls: set[str] = set()  # tool_use ids of the last assistant turn
        self.started = False

    def add_system(self, text: str) -> None:
        if not text:
            return
        if not self.started:
            self.system.append(text)
        else:
            self.pending.append(_reminder(text))

    def user(self, parts: list[dict]) -> None:
        if self.pending:
            parts = [{"type": "text", "text": t} for t in self.pending] + parts
            self.pending = []
        if not parts:
            return
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == "user":
            last["content"].extend(parts)
        else:
            self.messages.append({"role": "user", "content": parts})

    def flush(self) -> None:
        if self.pending:
            self.user([])

    def assistant(self, text: str, tool_calls: list[dict]) -> None:
        self.flush()
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == "assistant" and not last.get("tool_calls"):
            last["content"] = "\n\n".join(t for t in (last["content"] or "", text) if t) or None
        else:
            last = {"role": "assistant", "content": text or None}
            self.messages.append(last)
        if tool_calls:
            last["tool_calls"] = tool_calls
        self.open_calls = {call["id"] for call in tool_calls}

    def tool(self, call_id: str, text: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})

    def result(self) -> list[dict]:
        self.flush()
        out = [{"role": "system", "content": "\n\n".join(self.system)}] if self.system else []
        for message in self.messages:
            if message["role"] == "user":
                parts = message["content"]
                if all(part["type"] == "text" for part in parts):
                    message["content"] = "\n\n".join(part["text"] for part in parts)
            out.append(message)
        return out


def _image(block: Image) -> dict:
    source = block.source
    url = f"data:{source.media_type};base64,{source.data}" if type(source) is Base64Source else source.url
    return {"type": "image_url", "image_url": {"url": url}}


def _document(block: Document) -> dict:
    source, title = block.source, block.title
    kind = source.type
    if kind == "base64":
        file = {"file_data": f"data:{source.media_type};base64,{source.data}", "filename": title or "document.pdf"}
        return {"type": "file", "file": file}
    if kind == "text":
        text = source.data
    elif kind == "content":
        text = joined_text(source.content)
    elif kind == "url":
        text = f"Document: {source.url}"
    else:
        text = ""
    return {"type": "text", "text": f"{title}\n\n{text}" if title else text}


def _search_result_text(block: SearchResult) -> str:
    lines = [v for v in (block.title, block.source) if v]
    if block.content is not None:
        lines.append(joined_text(block.content))
    return "\n".join(lines)


def _tool_result(block: ToolResult) -> tuple[str, list[dict]]:
    """A tool_result's content as text for the chat tool message, plus images (which chat tool
    messages cannot carry) for a following user message."""
    texts: list[str] = []
    images: list[dict] = []
    for part in blocks_of(block.content) if block.content is not None else ():
        match part:
            case Text():
                texts.append(part.text)
            case ToolReference():
                texts.append(f"Tool loaded: {part.tool_name}")
            case Image():
                images.append(_image(part))
                texts.append("[image attached below]")
            case SearchResult():
                texts.append(_search_result_text(part))
            case Document():
                doc = _document(part)
                texts.append(doc["text"] if doc["type"] == "text" else "[document]")
    text = "\n".join(texts)
    if block.is_error is True:
        text = f"Error: {text}" if text else "Error"
    return text, images


def _user(history: _History, blocks: list[Block]) -> None:
    parts: list[dict] = []
    images: list[dict] = []
    for block in blocks:
        match block:
            case Text():
                parts.append({"type": "text", "text": block.text})
            case Image():
                parts.append(_image(block))
            case Document():
                parts.append(_document(block))
            case SearchResult():
                parts.append({"type": "text", "text": _search_result_text(block)})
            case ToolReference():
                parts.append({"type": "text", "text": f"Tool loaded: {block.tool_name}"})
            case MidConvSystem():
                text = joined_text(block.content)
                if text:
                    parts.append({"type": "text", "text": _reminder(text)})
            case ToolResult():
                call_id = block.tool_use_id
                text, more_images = _tool_result(block)
                images.extend(more_images)
                if call_id in history.open_calls:
                    history.tool(call_id, text)  # results go first, right after the assistant's calls
                    history.open_calls.discard(call_id)
                else:  # no matching call: chat backends reject a dangling tool message
                    parts.append({"type": "text", "text": f"Result of tool call {call_id}:\n{text}"})
            # thinking, redacted_thinking, container_upload, ...: nothing a chat backend can use
    history.open_calls = set()
    history.user(parts + images)


def _assistant(history: _History, blocks: list[Block]) -> None:
    groups: list[str] = []  # runs of adjacent text blocks; a run is one text
    run: list[str] | None = None
    calls: list[dict] = []
    server_calls: dict[str, tuple[str, dict]] = {}  # server_tool_use id -> (tool, its input)
    for block in blocks:
        if type(block) is Text:
            if run is None:
                run = []
                groups.append("")
            run.append(block.text)
            groups[-1] = "".join(run)
            continue
        run = None
        if type(block) is ToolUse:
            arguments = json.dumps(block.input, ensure_ascii=False)
            calls.append({"id": block.id, "type": "function", "function": {"name": block.name,
                                                                           "arguments": arguments}})
            if history.origins is not None:
                history.origins[block.id] = (False, block.name)
        elif type(block) is ServerToolUse and block.name in history.replays:
            server_calls[block.id] = (block.name, block.input)
        elif type(block) is ServerToolResult and block.tool_use_id in server_calls:
            # A replayed hosted tool call becomes the tool round the model would have made.
            call_id = block.tool_use_id
            name, shown = server_calls.pop(call_id)
            chat_name, replay = history.replays[name]
            arguments, result = replay(shown, block.content)
            text = "\n\n".join(g for g in groups if g)
            server_call = {"id": call_id, "type": "function", "function": {
                "name": chat_name, "arguments": json.dumps(arguments, ensure_ascii=False)}}
            history.assistant(text, [server_call])
            history.tool(call_id, result)
            if history.origins is not None:
                history.origins[call_id] = (True, name)
            groups = []
        # thinking / redacted_thinking: opaque to other backends, dropped
    text = "\n\n".join(g for g in groups if g)
    if text or calls:
        history.assistant(text, calls)


def chat_messages(system: str | list[Block] | None, messages: list[Message], replays: Replays = DEFAULT_REPLAYS, *,
                  origins: dict | None = None) -> list[dict]:
    """The chat messages for a request's `system` and `messages`; `replays` turn replayed server tool
    blocks back into tool rounds; `origins`, when given, is filled with each tool call's id ->
    (whether a server tool made it, the tool's name)."""
    history = _History(replays, origins)
    if system is not None:
        history.add_system(joined_text(system))
    for message in messages:
        if message.role == "user":
            history.started = True
            _user(history, blocks_of(message.content))
        elif message.role == "assistant":
            history.started = True
            _assistant(history, blocks_of(message.content))
        else:
            history.add_system(joined_text(message.content))
    return history.result()
