"""Anthropic content blocks and messages -> chat messages (docs/claude-code.md).

Consecutive user turns merge (chat templates expect alternation); tool results become `tool`
messages right after the assistant's calls; a replayed hosted search becomes the tool round the
model would have made. Malformed values raise BadRequest naming their path.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from ...core.errors import BadRequest
from ...tools import web_search

# Anthropic server tool name -> (the chat function name the model calls, the tool's replay)
Replays = Mapping[str, tuple[str, Callable[[dict, object], tuple[dict, str]]]]
DEFAULT_REPLAYS: Replays = {web_search.HOSTED.anthropic_name: (web_search.WEB_SEARCH, web_search.replay)}
BILLING_HEADER = "x-anthropic-billing-header:"


def bad_request(path: str, problem: str) -> BadRequest:
    return BadRequest(f"{path}: {problem}", param=path)


def string(obj: dict, key: str, path: str, *, required: bool = False) -> str | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise bad_request(f"{path}.{key}" if path else key, "must be a string")
    return value


def content_blocks(content: object, path: str) -> list[dict]:
    """Content as a list of blocks: a string is one text block; each block is an object with a type."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise bad_request(path, "must be a string or a list of content blocks")
    for i, block in enumerate(content):
        if not isinstance(block, dict):
            raise bad_request(f"{path}[{i}]", "must be an object")
        if not isinstance(block.get("type"), str):
            raise bad_request(f"{path}[{i}].type", "must be a string")
    return content


def joined_text(blocks: list[dict], path: str) -> str:
    """The text blocks joined (system prompts, mid-conversation system messages)."""
    texts = []
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            text = string(block, "text", f"{path}[{i}]", required=True)
            if text.startswith(BILLING_HEADER):
                continue  # changes per request; would defeat the backend's prefix cache
            texts.append(text)
    return "\n\n".join(t for t in texts if t)


def _reminder(text: str) -> str:
    return f"<system-reminder>\n{text}\n</system-reminder>"


def loaded_tools(messages: list) -> set[str]:
    """Deferred tools that Claude Code's ToolSearch has loaded (tool_reference blocks, 4.5)."""
    loaded: set[str] = set()

    def scan(blocks: object) -> None:
        for block in blocks if isinstance(blocks, list) else ():
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_reference" and isinstance(block.get("tool_name"), str):
                loaded.add(block["tool_name"])
            elif block.get("type") == "tool_result":
                scan(block.get("content"))

    for message in messages:
        if isinstance(message, dict):
            scan(message.get("content"))
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


def _image(block: dict, path: str) -> dict:
    source = block.get("source")
    if not isinstance(source, dict):
        raise bad_request(f"{path}.source", "must be an object")
    kind = source.get("type")
    if kind == "base64":
        media = string(source, "media_type", f"{path}.source", required=True)
        data = string(source, "data", f"{path}.source", required=True)
        url = f"data:{media};base64,{data}"
    elif kind == "url":
        url = string(source, "url", f"{path}.source", required=True)
    else:
        raise bad_request(f"{path}.source.type", "must be base64 or url")
    return {"type": "image_url", "image_url": {"url": url}}


def _document(block: dict, path: str) -> dict:
    source = block.get("source")
    if not isinstance(source, dict):
        raise bad_request(f"{path}.source", "must be an object")
    title = block.get("title") if isinstance(block.get("title"), str) else None
    kind = source.get("type")
    if kind == "base64":
        media = string(source, "media_type", f"{path}.source", required=True)
        data = string(source, "data", f"{path}.source", required=True)
        file = {"file_data": f"data:{media};base64,{data}", "filename": title or "document.pdf"}
        return {"type": "file", "file": file}
    if kind == "text":
        text = string(source, "data", f"{path}.source", required=True)
    elif kind == "content":
        content = source.get("content")
        text = joined_text(content_blocks(content, f"{path}.source.content"), f"{path}.source.content")
    elif kind == "url":
        text = f"Document: {string(source, 'url', f'{path}.source', required=True)}"
    else:
        text = ""
    return {"type": "text", "text": f"{title}\n\n{text}" if title else text}


def _search_result_text(block: dict, path: str) -> str:
    lines = [v for k in ("title", "source") if isinstance(v := block.get(k), str) and v]
    content = block.get("content")
    if content is not None:
        lines.append(joined_text(content_blocks(content, f"{path}.content"), f"{path}.content"))
    return "\n".join(lines)


def _tool_result(block: dict, path: str) -> tuple[str, list[dict]]:
    """A tool_result's content as text for the chat tool message, plus images (which chat tool
    messages cannot carry) for a following user message."""
    content = block.get("content")
    texts: list[str] = []
    images: list[dict] = []
    if content is not None:
        for i, part in enumerate(content_blocks(content, f"{path}.content")):
            kind, where = part["type"], f"{path}.content[{i}]"
            if kind == "text":
                texts.append(string(part, "text", where, required=True))
            elif kind == "tool_reference":
                texts.append(f"Tool loaded: {string(part, 'tool_name', where, required=True)}")
            elif kind == "image":
                images.append(_image(part, where))
                texts.append("[image attached below]")
            elif kind == "search_result":
                texts.append(_search_result_text(part, where))
            elif kind == "document":
                doc = _document(part, where)
                texts.append(doc["text"] if doc["type"] == "text" else "[document]")
    text = "\n".join(texts)
    if block.get("is_error") is True:
        text = f"Error: {text}" if text else "Error"
    return text, images


def _user(history: _History, blocks: list[dict], path: str) -> None:
    parts: list[dict] = []
    images: list[dict] = []
    for i, block in enumerate(blocks):
        kind, where = block["type"], f"{path}[{i}]"
        if kind == "text":
            parts.append({"type": "text", "text": string(block, "text", where, required=True)})
        elif kind == "image":
            parts.append(_image(block, where))
        elif kind == "document":
            parts.append(_document(block, where))
        elif kind == "search_result":
            parts.append({"type": "text", "text": _search_result_text(block, where)})
        elif kind == "tool_reference":
            parts.append({"type": "text", "text": f"Tool loaded: {string(block, 'tool_name', where, required=True)}"})
        elif kind == "mid_conv_system":
            text = joined_text(content_blocks(block.get("content"), f"{where}.content"), f"{where}.content")
            if text:
                parts.append({"type": "text", "text": _reminder(text)})
        elif kind == "tool_result":
            call_id = string(block, "tool_use_id", where, required=True)
            text, more_images = _tool_result(block, where)
            images.extend(more_images)
            if call_id in history.open_calls:
                history.tool(call_id, text)  # results go first, right after the assistant's calls
                history.open_calls.discard(call_id)
            else:  # no matching call: chat backends reject a dangling tool message
                parts.append({"type": "text", "text": f"Result of tool call {call_id}:\n{text}"})
        # thinking, redacted_thinking, container_upload, ...: nothing a chat backend can use
    history.open_calls = set()
    history.user(parts + images)


def _assistant(history: _History, blocks: list[dict], path: str) -> None:
    groups: list[str] = []  # runs of adjacent text blocks; a run is one text
    run: list[str] | None = None
    calls: list[dict] = []
    server_calls: dict[str, tuple[str, dict]] = {}  # server_tool_use id -> (tool, its input)
    for i, block in enumerate(blocks):
        kind, where = block["type"], f"{path}[{i}]"
        if kind == "text":
            if run is None:
                run = []
                groups.append("")
            run.append(string(block, "text", where, required=True))
            groups[-1] = "".join(run)
            continue
        run = None
        if kind == "tool_use":
            call_id = string(block, "id", where, required=True)
            name = string(block, "name", where, required=True)
            arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
            calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
            if history.origins is not None:
                history.origins[call_id] = (False, name)
        elif kind == "server_tool_use" and block.get("name") in history.replays:
            call_id = string(block, "id", where, required=True)
            shown = block.get("input") if isinstance(block.get("input"), dict) else {}
            server_calls[call_id] = (block["name"], shown)
        elif kind.endswith("_tool_result") and isinstance(block.get("tool_use_id"), str) \
                and block["tool_use_id"] in server_calls:
            # A replayed hosted tool call becomes the tool round the model would have made.
            call_id = block["tool_use_id"]
            name, shown = server_calls.pop(call_id)
            chat_name, replay = history.replays[name]
            arguments, result = replay(shown, block.get("content"))
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


def _messages(raw: object, history: _History) -> None:
    if not isinstance(raw, list):
        raise bad_request("messages", "must be a list")
    if not raw:
        raise bad_request("messages", "must contain at least one message")
    for i, message in enumerate(raw):
        path = f"messages[{i}]"
        if not isinstance(message, dict):
            raise bad_request(path, "must be an object")
        role = message.get("role")
        blocks = content_blocks(message.get("content"), f"{path}.content")
        if role == "user":
            history.started = True
            _user(history, blocks, f"{path}.content")
        elif role == "assistant":
            history.started = True
            _assistant(history, blocks, f"{path}.content")
        elif role == "system":
            history.add_system(joined_text(blocks, f"{path}.content"))
        else:
            raise bad_request(f"{path}.role", "must be user, assistant or system")


def chat_messages(system: object, messages: object, replays: Replays = DEFAULT_REPLAYS, *,
                  origins: dict | None = None) -> list[dict]:
    """The chat messages for a request's `system` and `messages`; `replays` turn replayed server tool
    blocks back into tool rounds; `origins`, when given, is filled with each tool call's id ->
    (whether a server tool made it, the tool's name)."""
    history = _History(replays, origins)
    if system is not None:
        history.add_system(joined_text(content_blocks(system, "system"), "system"))
    _messages(messages, history)
    return history.result()
