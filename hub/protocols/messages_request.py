"""Anthropic Messages request -> the internal chat request (protocols.md 3.2-3.4, 4.5, 9.1-9.4).

Liberal in what it accepts: unknown fields and block types are ignored. A value of the wrong type
in a field we read is a BadRequest naming its path, e.g. `messages[2].content[0].source`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import msgspec

from ..errors import BadRequest
from ..events import HostedSearch
from .messages_blocks import decode_hit

WEB_SEARCH_TOOL = "web_search"
BILLING_HEADER = "x-anthropic-billing-header:"
_LOCATION_KEYS = ("city", "region", "country", "timezone")
_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}


@dataclass(slots=True)
class MessagesContext:
    """What the response encoders need to know about the request."""

    model: str  # as the client sent it; echoed back
    stream: bool = False
    hosted: HostedSearch | None = None  # the client offered the web_search server tool
    thinking: bool = False  # thinking enabled or adaptive (the `reasoning` alias applies)
    show_thinking: bool = False  # answer reasoning as thinking blocks
    session_id: str | None = None  # Claude Code's session, from metadata.user_id


def _bad(path: str, problem: str) -> BadRequest:
    return BadRequest(f"{path}: {problem}", param=path)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _str(obj: dict, key: str, path: str, *, required: bool = False) -> str | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise _bad(f"{path}.{key}" if path else key, "must be a string")
    return value


def _blocks(content: object, path: str) -> list[dict]:
    """Content as a list of blocks: a string is one text block; each block is an object with a type."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise _bad(path, "must be a string or a list of content blocks")
    for i, block in enumerate(content):
        if not isinstance(block, dict):
            raise _bad(f"{path}[{i}]", "must be an object")
        if not isinstance(block.get("type"), str):
            raise _bad(f"{path}[{i}].type", "must be a string")
    return content


def _text_of(blocks: list[dict], path: str) -> str:
    """The text blocks joined (system prompts, mid-conversation system messages)."""
    texts = []
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            text = _str(block, "text", f"{path}[{i}]", required=True)
            if text.startswith(BILLING_HEADER):
                continue  # changes per request; would defeat the backend's prefix cache
            texts.append(text)
    return "\n\n".join(t for t in texts if t)


def _reminder(text: str) -> str:
    return f"<system-reminder>\n{text}\n</system-reminder>"


# --- tools --------------------------------------------------------------------------------------


def _loaded_tools(messages: list) -> set[str]:
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


def _hosted(tool: dict, path: str) -> HostedSearch:
    max_uses = tool.get("max_uses")
    if max_uses is not None and (not _is_int(max_uses) or max_uses < 1):
        raise _bad(f"{path}.max_uses", "must be a positive integer")
    domains = {}
    for key in ("allowed_domains", "blocked_domains"):
        value = tool.get(key)
        if value is None:
            domains[key] = ()
        elif isinstance(value, list) and all(isinstance(d, str) for d in value):
            domains[key] = tuple(d for d in value if d)
        else:
            raise _bad(f"{path}.{key}", "must be a list of strings")
    location = tool.get("user_location")
    if location is not None and not isinstance(location, dict):
        raise _bad(f"{path}.user_location", "must be an object")
    if location:
        location = {k: v for k in _LOCATION_KEYS if isinstance(v := location.get(k), str) and v} or None
    return HostedSearch(
        allowed_domains=domains["allowed_domains"], blocked_domains=domains["blocked_domains"],
        max_uses=max_uses, user_location=location or None,
    )


def _tools(raw: object, loaded: set[str]) -> tuple[list[dict], HostedSearch | None]:
    """Chat function tools, and the hosted search when a web_search_* server tool is offered."""
    if raw is None:
        return [], None
    if not isinstance(raw, list):
        raise _bad("tools", "must be a list")
    tools: list[dict] = []
    hosted: HostedSearch | None = None
    for i, tool in enumerate(raw):
        path = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise _bad(path, "must be an object")
        kind = tool.get("type")
        if kind is not None and not isinstance(kind, str):
            raise _bad(f"{path}.type", "must be a string")
        if kind is not None and kind.startswith("web_search_"):
            hosted = _hosted(tool, path)
            continue
        if kind not in (None, "custom"):
            continue  # other Anthropic-defined tools (bash_*, web_fetch_*, ...) have no chat equivalent
        name = _str(tool, "name", path, required=True)
        schema = tool.get("input_schema")
        if not isinstance(schema, dict):
            raise _bad(f"{path}.input_schema", "must be a JSON Schema object")
        if tool.get("defer_loading") is True and name not in loaded:
            continue  # Claude Code's ToolSearch has not loaded it yet (protocols.md 4.5)
        function: dict[str, Any] = {"name": name, "parameters": schema}
        description = tool.get("description")
        if isinstance(description, str) and description:
            function["description"] = description
        if tool.get("strict") is True:
            function["strict"] = True
        tools.append({"type": "function", "function": function})
    return tools, hosted


def _tool_choice(raw: object, body: dict) -> None:
    if raw is None:
        return
    if not isinstance(raw, dict):
        raise _bad("tool_choice", "must be an object")
    kind = _str(raw, "type", "tool_choice", required=True)
    names = {t["function"]["name"] for t in body.get("tools", ())}
    choice: object
    if kind == "auto":
        choice = "auto"
    elif kind == "any":
        choice = "required"
    elif kind == "none":
        choice = "none"
    elif kind == "tool":
        name = _str(raw, "name", "tool_choice", required=True)
        # The hosted web_search (the gateway runs its own loop), a deferred tool not loaded yet, or an
        # Anthropic-defined tool we cannot offer: nothing the backend could be forced to call.
        choice = {"type": "function", "function": {"name": name}} if name in names else None
    else:
        raise _bad("tool_choice.type", "must be one of auto, any, tool, none")
    if not names:
        return  # hosted search only, or no tools at all: nothing for the backend to choose
    if choice is not None:
        body["tool_choice"] = choice
    if raw.get("disable_parallel_tool_use") is True:
        body["parallel_tool_calls"] = False


# --- messages -----------------------------------------------------------------------------------


class _History:
    """Builds chat messages, merging consecutive user (and assistant) turns as chat templates expect."""

    def __init__(self) -> None:
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
        raise _bad(f"{path}.source", "must be an object")
    kind = source.get("type")
    if kind == "base64":
        media = _str(source, "media_type", f"{path}.source", required=True)
        data = _str(source, "data", f"{path}.source", required=True)
        url = f"data:{media};base64,{data}"
    elif kind == "url":
        url = _str(source, "url", f"{path}.source", required=True)
    else:
        raise _bad(f"{path}.source.type", "must be base64 or url")
    return {"type": "image_url", "image_url": {"url": url}}


def _document(block: dict, path: str) -> dict:
    source = block.get("source")
    if not isinstance(source, dict):
        raise _bad(f"{path}.source", "must be an object")
    title = block.get("title") if isinstance(block.get("title"), str) else None
    kind = source.get("type")
    if kind == "base64":
        media = _str(source, "media_type", f"{path}.source", required=True)
        data = _str(source, "data", f"{path}.source", required=True)
        file = {"file_data": f"data:{media};base64,{data}", "filename": title or "document.pdf"}
        return {"type": "file", "file": file}
    if kind == "text":
        text = _str(source, "data", f"{path}.source", required=True)
    elif kind == "content":
        content = source.get("content")
        text = _text_of(_blocks(content, f"{path}.source.content"), f"{path}.source.content")
    elif kind == "url":
        text = f"Document: {_str(source, 'url', f'{path}.source', required=True)}"
    else:
        text = ""
    return {"type": "text", "text": f"{title}\n\n{text}" if title else text}


def _search_result_text(block: dict, path: str) -> str:
    lines = [v for k in ("title", "source") if isinstance(v := block.get(k), str) and v]
    content = block.get("content")
    if content is not None:
        lines.append(_text_of(_blocks(content, f"{path}.content"), f"{path}.content"))
    return "\n".join(lines)


def _tool_result(block: dict, path: str) -> tuple[str, list[dict]]:
    """A tool_result's content as text for the chat tool message, plus images (which chat tool
    messages cannot carry) for a following user message."""
    content = block.get("content")
    texts: list[str] = []
    images: list[dict] = []
    if content is not None:
        for i, part in enumerate(_blocks(content, f"{path}.content")):
            kind, where = part["type"], f"{path}.content[{i}]"
            if kind == "text":
                texts.append(_str(part, "text", where, required=True))
            elif kind == "tool_reference":
                texts.append(f"Tool loaded: {_str(part, 'tool_name', where, required=True)}")
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


def _search_digest(block: dict) -> str:
    """A replayed web_search_tool_result as the tool message the model would have seen."""
    content = block.get("content")
    if isinstance(content, dict):
        return f"Error: web search failed ({content.get('error_code', 'unavailable')})"
    if not isinstance(content, list) or not content:
        return "No results."
    lines = []
    for n, item in enumerate((c for c in content if isinstance(c, dict)), 1):
        hit = decode_hit(item.get("encrypted_content")) or {}
        title = item.get("title") or hit.get("title") or ""
        url = item.get("url") or hit.get("url") or ""
        lines.append(f"{n}. {title}\n   {url}")
        if isinstance(item.get("page_age"), str) and item["page_age"]:
            lines.append(f"   Published: {item['page_age']}")
        if isinstance(hit.get("snippet"), str) and hit["snippet"]:
            lines.append(f"   {hit['snippet']}")
    return "\n".join(lines)


def _user(history: _History, blocks: list[dict], path: str) -> None:
    parts: list[dict] = []
    images: list[dict] = []
    for i, block in enumerate(blocks):
        kind, where = block["type"], f"{path}[{i}]"
        if kind == "text":
            parts.append({"type": "text", "text": _str(block, "text", where, required=True)})
        elif kind == "image":
            parts.append(_image(block, where))
        elif kind == "document":
            parts.append(_document(block, where))
        elif kind == "search_result":
            parts.append({"type": "text", "text": _search_result_text(block, where)})
        elif kind == "tool_reference":
            parts.append({"type": "text", "text": f"Tool loaded: {_str(block, 'tool_name', where, required=True)}"})
        elif kind == "mid_conv_system":
            text = _text_of(_blocks(block.get("content"), f"{where}.content"), f"{where}.content")
            if text:
                parts.append({"type": "text", "text": _reminder(text)})
        elif kind == "tool_result":
            call_id = _str(block, "tool_use_id", where, required=True)
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
    searches: dict[str, str] = {}
    for i, block in enumerate(blocks):
        kind, where = block["type"], f"{path}[{i}]"
        if kind == "text":
            if run is None:
                run = []
                groups.append("")
            run.append(_str(block, "text", where, required=True))
            groups[-1] = "".join(run)
            continue
        run = None
        if kind == "tool_use":
            call_id = _str(block, "id", where, required=True)
            name = _str(block, "name", where, required=True)
            arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
            calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
        elif kind == "server_tool_use" and block.get("name") == WEB_SEARCH_TOOL:
            call_id = _str(block, "id", where, required=True)
            query = block.get("input", {}).get("query") if isinstance(block.get("input"), dict) else None
            searches[call_id] = query if isinstance(query, str) else ""
        elif kind == "web_search_tool_result":
            call_id = _str(block, "tool_use_id", where, required=True)
            if call_id not in searches:
                continue
            # A replayed hosted search becomes the tool round the model would have made.
            text = "\n\n".join(g for g in groups if g)
            search_call = {"id": call_id, "type": "function", "function": {
                "name": WEB_SEARCH_TOOL, "arguments": json.dumps({"query": searches.pop(call_id)}, ensure_ascii=False)}}
            history.assistant(text, [search_call])
            history.tool(call_id, _search_digest(block))
            groups = []
        # thinking / redacted_thinking: opaque to other backends, dropped (protocols.md 9.4)
    text = "\n\n".join(g for g in groups if g)
    if text or calls:
        history.assistant(text, calls)


def _messages(raw: object, history: _History) -> None:
    if not isinstance(raw, list):
        raise _bad("messages", "must be a list")
    if not raw:
        raise _bad("messages", "must contain at least one message")
    for i, message in enumerate(raw):
        path = f"messages[{i}]"
        if not isinstance(message, dict):
            raise _bad(path, "must be an object")
        role = message.get("role")
        blocks = _blocks(message.get("content"), f"{path}.content")
        if role == "user":
            history.started = True
            _user(history, blocks, f"{path}.content")
        elif role == "assistant":
            history.started = True
            _assistant(history, blocks, f"{path}.content")
        elif role == "system":
            history.add_system(_text_of(blocks, f"{path}.content"))
        else:
            raise _bad(f"{path}.role", "must be user, assistant or system")


# --- request ------------------------------------------------------------------------------------


def _thinking(req: dict, body: dict, ctx: MessagesContext) -> None:
    thinking = req.get("thinking")
    if thinking is not None:
        if not isinstance(thinking, dict):
            raise _bad("thinking", "must be an object")
        kind = _str(thinking, "type", "thinking", required=True)
        ctx.thinking = kind in ("enabled", "adaptive")
        ctx.show_thinking = ctx.thinking and thinking.get("display") != "omitted"
        if kind == "enabled":
            budget = thinking.get("budget_tokens")
            if budget is not None and not _is_int(budget):
                raise _bad("thinking.budget_tokens", "must be an integer")
            if budget:
                body["reasoning_effort"] = "low" if budget < 4096 else "medium" if budget < 16384 else "high"
    config = req.get("output_config")
    if config is None:
        return
    if not isinstance(config, dict):
        raise _bad("output_config", "must be an object")
    effort = config.get("effort")
    if effort is not None and not isinstance(effort, str):
        raise _bad("output_config.effort", "must be a string")
    if effort in _EFFORTS and not (isinstance(thinking, dict) and thinking.get("type") == "disabled"):
        body["reasoning_effort"] = _EFFORTS[effort]
    fmt = config.get("format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and isinstance(fmt.get("schema"), dict):
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "output", "schema": fmt["schema"]}}


def _sampling(req: dict, body: dict) -> None:
    max_tokens = req.get("max_tokens")
    if max_tokens is not None:
        if not _is_int(max_tokens) or max_tokens < 1:
            raise _bad("max_tokens", "must be a positive integer")
        body["max_tokens"] = max_tokens
    for key in ("temperature", "top_p"):
        value = req.get(key)
        if value is not None:
            if not _is_number(value):
                raise _bad(key, "must be a number")
            body[key] = value
    top_k = req.get("top_k")
    if top_k is not None:
        if not _is_int(top_k):
            raise _bad("top_k", "must be an integer")
        body["top_k"] = top_k
    stops = req.get("stop_sequences")
    if stops is not None:
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise _bad("stop_sequences", "must be a list of strings")
        if stops:
            body["stop"] = stops


def _session(metadata: object) -> str | None:
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise _bad("metadata", "must be an object")
    user_id = metadata.get("user_id")
    if user_id is None:
        return None
    if not isinstance(user_id, str):
        raise _bad("metadata.user_id", "must be a string")
    try:
        value = json.loads(user_id)  # Claude Code: a JSON string with device_id and session_id
    except ValueError:
        return None
    session = value.get("session_id") if isinstance(value, dict) else None
    return session if isinstance(session, str) and session else None


def to_chat(req: object) -> tuple[dict, MessagesContext]:
    """A Messages request body -> (chat request body, context for the response encoders)."""
    if not isinstance(req, dict):
        raise BadRequest("request body must be a JSON object")
    model = _str(req, "model", "", required=True)
    if not model.strip():
        raise _bad("model", "must not be empty")
    stream = req.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise _bad("stream", "must be a boolean")
    ctx = MessagesContext(model=model, stream=bool(stream))

    raw_messages = req.get("messages")
    loaded = _loaded_tools(raw_messages if isinstance(raw_messages, list) else [])
    tools, ctx.hosted = _tools(req.get("tools"), loaded)
    history = _History()
    system = req.get("system")
    if system is not None:
        history.add_system(_text_of(_blocks(system, "system"), "system"))
    _messages(raw_messages, history)

    body: dict[str, Any] = {"model": model, "messages": history.result()}
    if tools:
        body["tools"] = tools
    _tool_choice(req.get("tool_choice"), body)
    _thinking(req, body, ctx)
    _sampling(req, body)
    ctx.session_id = _session(req.get("metadata"))
    if ctx.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body, ctx


def estimate_input_tokens(req: dict) -> int:
    """About four bytes of JSON per token over system, messages and tools (count_tokens, message_start)."""
    size = 0
    for key in ("system", "messages", "tools"):
        value = req.get(key)
        if value is not None:
            try:
                size += len(msgspec.json.encode(value))
            except (TypeError, ValueError, OverflowError):
                size += len(str(value))
    return max(1, size // 4)
