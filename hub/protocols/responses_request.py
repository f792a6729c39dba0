"""A Responses API request -> the internal chat request (protocols.md 2.2-2.4 and 9.1-9.4).

Pure: a request dict in, a chat body and a ResponsesContext out, or BadRequest naming the JSON path
of what is wrong. Client tools the chat backend cannot express are reshaped (custom tools become
one-string-argument functions, namespaces are flattened) and remembered in the context, so the
answer's calls can be turned back into the client's shapes.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..errors import BadRequest
from ..events import HostedSearch

log = logging.getLogger("searchhub.responses")

HOSTED_SEARCH_TOOLS = frozenset(
    {"web_search", "web_search_2025_08_26", "web_search_preview", "web_search_preview_2025_03_11"}
)
CUSTOM_INPUT = "input"  # the one parameter of a custom tool seen as a function

# Items of the SDK's input union that a chat backend has no use for: dropped, never rejected.
_DROPPED_ITEMS = {
    "reasoning": "reasoning items are opaque to chat backends",
    "web_search_call": "a replayed web_search_call; the assistant message after it carries the answer",
    "compaction": "compaction items hold another provider's encrypted context",
    "compaction_trigger": "server-side compaction is not supported",
    "configuration_update": "configuration updates have no chat equivalent",
    "file_search_call": "file_search is not supported",
    "computer_call": "computer use is not supported",
    "computer_call_output": "computer use is not supported",
    "code_interpreter_call": "code_interpreter is not supported",
    "image_generation_call": "image_generation is not supported",
    "local_shell_call": "the hosted local_shell tool is not offered to chat models",
    "local_shell_call_output": "the hosted local_shell tool is not offered to chat models",
    "shell_call": "the hosted shell tool is not offered to chat models",
    "shell_call_output": "the hosted shell tool is not offered to chat models",
    "apply_patch_call": "the hosted apply_patch tool is not offered to chat models",
    "apply_patch_call_output": "the hosted apply_patch tool is not offered to chat models",
    "mcp_list_tools": "hosted MCP is not supported",
    "mcp_approval_request": "hosted MCP is not supported",
    "mcp_approval_response": "hosted MCP is not supported",
    "mcp_call": "hosted MCP is not supported",
    "tool_search_call": "tool_search is not offered to chat models",
    "tool_search_output": "tool_search is not offered to chat models",
    "program": "programmatic tool calling is not supported",
    "program_output": "programmatic tool calling is not supported",
}
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
_SIMPLE_CHOICES = frozenset({"auto", "none", "required"})
_CONTEXT_SIZES = frozenset({"low", "medium", "high"})
_LOCATION_KEYS = ("country", "city", "region", "timezone")


@dataclass(frozen=True, slots=True)
class ToolRef:
    """A client tool as the client knows it, behind the chat function name the model sees."""

    kind: str  # "function" | "custom"
    name: str
    namespace: str | None = None


@dataclass(slots=True)
class ResponsesContext:
    """What the encoders need from the request: echoes, the tool map, the hosted search offer."""

    model: str
    echo: dict[str, Any]  # request fields a Response object repeats (protocols.md 2.5)
    tools: dict[str, ToolRef] = field(default_factory=dict)  # chat function name -> client tool
    hosted: HostedSearch | None = None
    force_search: bool | None = None  # tool_choice named the hosted search tool
    stream: bool = False
    store: bool = True
    previous_response_id: str | None = None
    history: list[dict] = field(default_factory=list)  # the conversation in chat form, no instructions
    dropped: list[str] = field(default_factory=list)  # why parts of the request were left out

    def client_tool(self, chat_name: str) -> ToolRef:
        return self.tools.get(chat_name) or ToolRef("function", chat_name)


def to_chat(req: Any, *, history: list[dict] | None = None) -> tuple[dict, ResponsesContext]:
    """Translate a Responses request; `history` is a stored conversation (previous_response_id) to continue."""
    if not isinstance(req, dict):
        raise BadRequest("request body must be a JSON object")
    model = req.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("'model' is required and must be a non-empty string", param="model")
    instructions = _optional(req, "instructions", str)
    stream = _optional(req, "stream", bool) or False
    store = _optional(req, "store", bool)
    previous = _optional(req, "previous_response_id", str)
    if req.get("conversation") is not None:
        raise BadRequest("conversation objects are not supported; use previous_response_id or send the "
                         "full history", param="conversation")

    raw_input = req.get("input")
    if raw_input is None:
        items: list = []
    elif isinstance(raw_input, str):
        items = [{"type": "message", "role": "user", "content": raw_input}]
    elif isinstance(raw_input, list):
        items = raw_input
    else:
        raise BadRequest("'input' must be a string or an array of input items", param="input")

    dropped: list[str] = []
    tools = _Tools(dropped)
    raw_tools = req.get("tools")
    if raw_tools is not None:
        if not isinstance(raw_tools, list):
            raise BadRequest("'tools' must be an array", param="tools")
        for i, tool in enumerate(raw_tools):
            tools.add(tool, f"tools[{i}]")
    for i, item in enumerate(items):
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            extra = item.get("tools")
            if not isinstance(extra, list):
                raise BadRequest("additional_tools.tools must be an array", param=f"input[{i}].tools")
            for j, tool in enumerate(extra):
                tools.add(tool, f"input[{i}].tools[{j}]")
    chat_tools, refs = tools.build()

    max_tool_calls = _optional_int(req, "max_tool_calls")
    hosted = _hosted_search(tools.hosted, max_tool_calls) if tools.hosted is not None else None
    tool_choice, force_search = _tool_choice(req.get("tool_choice"), chat_tools, refs, dropped)
    if tool_choice == "none":
        hosted = None  # "none" rules out the built-in tools too
    if isinstance(tool_choice, _Allowed):
        chat_tools = [t for t in chat_tools if t["function"]["name"] in tool_choice.names]
        if hosted is not None and not tool_choice.search:
            hosted = None
        tool_choice = tool_choice.mode

    converted = _Conversation(refs, dropped).translate(items)
    conversation = [*(history or ()), *converted]
    if not any(m.get("role") != "system" for m in conversation):
        raise BadRequest("the request has no input to answer: send 'input' with at least one message or item",
                         param="input")

    messages = _merge_leading_system(
        ([{"role": "system", "content": instructions}] if instructions else []) + conversation
    )
    chat: dict[str, Any] = {"model": model, "messages": messages}
    if stream:
        chat["stream"] = True
        chat["stream_options"] = {"include_usage": True}
    if chat_tools:
        chat["tools"] = chat_tools
        if tool_choice is not None:
            chat["tool_choice"] = tool_choice
        parallel = _optional(req, "parallel_tool_calls", bool)
        if parallel is not None:
            chat["parallel_tool_calls"] = parallel
    elif tool_choice == "none":
        chat["tool_choice"] = "none"  # keeps the pipeline from offering its own tool
    for key in ("temperature", "top_p"):
        value = req.get(key)
        if value is not None:
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise BadRequest(f"'{key}' must be a number", param=key)
            chat[key] = value
    max_output = _optional_int(req, "max_output_tokens")
    if max_output is not None:
        chat["max_tokens"] = max_output
    reasoning = _optional(req, "reasoning", dict)
    if reasoning and isinstance(reasoning.get("effort"), str):
        chat["reasoning_effort"] = reasoning["effort"]
    text = _optional(req, "text", dict)
    if text:
        response_format = _response_format(text.get("format"))
        if response_format is not None:
            chat["response_format"] = response_format

    for reason in dropped:
        log.debug("responses request: dropped %s", reason)
    ctx = ResponsesContext(
        model=model,
        echo=_echo(req, instructions, store if store is not None else True),
        tools=refs,
        hosted=hosted,
        force_search=force_search,
        stream=stream,
        store=store if store is not None else True,
        previous_response_id=previous,
        history=conversation,
        dropped=dropped,
    )
    return chat, ctx


def items_to_messages(items: list, ctx: ResponsesContext) -> list[dict]:
    """Output items of a response in chat form (what a continuation's history needs)."""
    return _Conversation(ctx.tools, []).translate(items)


def custom_input(arguments: str) -> str:
    """The freeform input of a custom tool call, from the arguments a chat model wrote for it."""
    try:
        value = json.loads(arguments)
    except (TypeError, ValueError):
        return arguments  # the model wrote the input bare
    if isinstance(value, dict):
        inner = value.get(CUSTOM_INPUT)
        if isinstance(inner, str):
            return inner
        strings = [v for v in value.values() if isinstance(v, str)]
        if len(value) == 1 and strings:
            return strings[0]
    if isinstance(value, str):
        return value
    return arguments


# --- small readers ------------------------------------------------------------------------------


def _optional(req: dict, key: str, kind: type) -> Any:
    value = req.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        names = {str: "a string", bool: "a boolean", dict: "an object", list: "an array"}
        raise BadRequest(f"'{key}' must be {names.get(kind, kind.__name__)}", param=key)
    return value


def _optional_int(req: dict, key: str) -> int | None:
    value = req.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise BadRequest(f"'{key}' must be a positive integer", param=key)
    return value


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else ""


# --- tools --------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Entry:
    kind: str  # function | custom
    name: str
    namespace: str | None
    spec: dict


class _Tools:
    """Collects client tools from `tools` and additional_tools items, flattening namespaces."""

    def __init__(self, dropped: list[str]) -> None:
        self.entries: list[_Entry] = []
        self.hosted: dict | None = None
        self.dropped = dropped

    def add(self, tool: Any, path: str, namespace: str | None = None) -> None:
        if not isinstance(tool, dict):
            raise BadRequest(f"{path} must be a tool object", param=path)
        kind = _str(tool.get("type"))
        if kind == "function" and isinstance(tool.get("function"), dict):
            tool = {**tool["function"], "type": "function"}  # the chat shape, accepted as well
            path = f"{path}.function"
        if kind in ("function", "custom"):
            name = tool.get("name")
            if not isinstance(name, str) or not name:
                raise BadRequest(f"{path}.name is required", param=f"{path}.name")
            self.entries.append(_Entry(kind, name, namespace, tool))
        elif kind == "namespace":
            name = tool.get("name")
            if not isinstance(name, str) or not name:
                raise BadRequest(f"{path}.name is required", param=f"{path}.name")
            inner = tool.get("tools")
            if not isinstance(inner, list):
                raise BadRequest(f"{path}.tools must be an array", param=f"{path}.tools")
            for i, sub in enumerate(inner):
                self.add(sub, f"{path}.tools[{i}]", name)
        elif kind in HOSTED_SEARCH_TOOLS:
            if self.hosted is None:
                self.hosted = tool
        elif kind == "tool_search":
            self.dropped.append(f"{path}: tool_search (every tool is offered up front instead)")
        elif isinstance(kind, str):
            self.dropped.append(f"{path}: tool type {kind!r} is not supported with chat models")
        else:
            raise BadRequest(f"{path}.type is required", param=f"{path}.type")

    def build(self) -> tuple[list[dict], dict[str, ToolRef]]:
        """Chat function tools and the name map. Names stay plain unless two tools share one; then
        the namespaced ones take Codex's flat form `namespace__name`."""
        counts = Counter(e.name for e in self.entries)
        chat_tools: list[dict] = []
        refs: dict[str, ToolRef] = {}
        for e in self.entries:
            chat_name = e.name if counts[e.name] == 1 or e.namespace is None else flat_name(e.namespace, e.name)
            if chat_name in refs:
                self.dropped.append(f"tool {chat_name!r}: defined twice, the first definition is used")
                continue
            refs[chat_name] = ToolRef(e.kind, e.name, e.namespace)
            chat_tools.append(_chat_function(chat_name, e))
        return chat_tools, refs


def flat_name(namespace: str, name: str) -> str:
    """Codex's canonical flat name of a namespaced tool."""
    return f"{namespace.rstrip('_')}__{name.lstrip('_')}"


def _chat_function(chat_name: str, e: _Entry) -> dict:
    spec = e.spec
    description = _text_of(spec.get("description"))
    if e.kind == "custom":
        fmt = spec.get("format")
        if isinstance(fmt, dict) and fmt.get("type") == "grammar" and isinstance(fmt.get("definition"), str):
            syntax = fmt.get("syntax") if isinstance(fmt.get("syntax"), str) else "lark"
            description += (f"\n\nThe `{CUSTOM_INPUT}` argument is freeform text that must follow this "
                            f"{syntax} grammar:\n{fmt['definition']}")
        parameters: Any = {
            "type": "object",
            "properties": {CUSTOM_INPUT: {"type": "string", "description": "The raw input text for the tool."}},
            "required": [CUSTOM_INPUT],
            "additionalProperties": False,
        }
        strict = None
    else:
        parameters = spec.get("parameters")
        if not isinstance(parameters, dict):
            parameters = {"type": "object", "properties": {}}
        strict = spec.get("strict")
    function: dict[str, Any] = {"name": chat_name}
    if description.strip():
        function["description"] = description
    function["parameters"] = parameters
    if isinstance(strict, bool):
        function["strict"] = strict
    return {"type": "function", "function": function}


def _hosted_search(tool: dict, max_tool_calls: int | None) -> HostedSearch:
    """The built-in web_search tool's options. `external_web_access: false` (cache only) still searches
    live: the gateway has no offline index."""
    filters = tool.get("filters") if isinstance(tool.get("filters"), dict) else {}
    allowed = filters.get("allowed_domains")
    blocked = filters.get("blocked_domains")
    location = tool.get("user_location")
    if isinstance(location, dict):
        location = {k: location[k] for k in _LOCATION_KEYS if isinstance(location.get(k), str) and location[k]}
    size = _str(tool.get("search_context_size"))
    return HostedSearch(
        allowed_domains=tuple(d for d in allowed if isinstance(d, str)) if isinstance(allowed, list) else (),
        blocked_domains=tuple(d for d in blocked if isinstance(d, str)) if isinstance(blocked, list) else (),
        max_uses=max_tool_calls,
        user_location=location or None,
        context_size=size if size in _CONTEXT_SIZES else None,
    )


@dataclass(slots=True)
class _Allowed:
    mode: str
    names: set[str]
    search: bool


def _tool_choice(
    choice: Any, chat_tools: list[dict], refs: dict[str, ToolRef], dropped: list[str]
) -> tuple[Any, bool | None]:
    """(chat tool_choice or None, force_search)."""
    if choice is None:
        return None, None
    if isinstance(choice, str):
        if choice not in _SIMPLE_CHOICES:
            raise BadRequest("'tool_choice' must be 'auto', 'none', 'required' or a tool choice object",
                             param="tool_choice")
        return choice, None
    if not isinstance(choice, dict):
        raise BadRequest("'tool_choice' must be a string or an object", param="tool_choice")
    kind = _str(choice.get("type"))
    if kind in ("function", "custom"):
        name = choice.get("name")
        if not isinstance(name, str) and isinstance(choice.get(kind), dict):
            name = choice[kind].get("name")  # the chat shape
        if not isinstance(name, str) or not name:
            raise BadRequest("tool_choice.name is required", param="tool_choice.name")
        chat_name = _chat_name_for(refs, kind, name, None)
        if chat_name not in refs:
            raise BadRequest(f"tool_choice names {kind} tool '{name}', which is not in 'tools'",
                             param="tool_choice.name")
        return {"type": "function", "function": {"name": chat_name}}, None
    if kind in HOSTED_SEARCH_TOOLS:
        return None, True
    if kind == "allowed_tools":
        mode = choice.get("mode") if choice.get("mode") in ("auto", "required") else "auto"
        listed = choice.get("tools")
        if not isinstance(listed, list):
            raise BadRequest("tool_choice.tools must be an array", param="tool_choice.tools")
        names: set[str] = set()
        search = False
        for t in listed:
            if not isinstance(t, dict):
                continue
            listed_kind = _str(t.get("type"))
            if listed_kind in HOSTED_SEARCH_TOOLS:
                search = True
            elif listed_kind in ("function", "custom") and isinstance(t.get("name"), str):
                names.add(_chat_name_for(refs, listed_kind, t["name"], None))
        return _Allowed(mode, names, search), None
    dropped.append(f"tool_choice {kind!r}: the tool is not offered, the model chooses")
    return None, None


def _chat_name_for(refs: dict[str, ToolRef], kind: str, name: str, namespace: str | None) -> str:
    """The chat function name of a client tool: the same namespace first, then any tool of that name;
    a tool the request does not define keeps its plain name."""
    candidates = [c for c, r in refs.items() if r.kind == kind and r.name == name]
    for c in candidates:
        if refs[c].namespace == namespace:
            return c
    return candidates[0] if candidates else name


def _response_format(fmt: Any) -> dict | None:
    if not isinstance(fmt, dict):
        return None
    kind = fmt.get("type")
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        schema = {k: fmt[k] for k in ("name", "description", "schema", "strict") if k in fmt}
        schema.setdefault("name", "response")
        return {"type": "json_schema", "json_schema": schema}
    return None


# --- input items --------------------------------------------------------------------------------


class _Conversation:
    """Input items -> chat messages. Consecutive assistant-side items become one assistant message."""

    def __init__(self, refs: dict[str, ToolRef], dropped: list[str]) -> None:
        self.refs = refs
        self.dropped = dropped
        self.messages: list[dict] = []
        self.pending_images: list[dict] = []  # images in tool results, shown in a user turn after them

    def translate(self, items: list) -> list[dict]:
        for i, item in enumerate(items):
            path = f"input[{i}]"
            if not isinstance(item, dict):
                raise BadRequest(f"{path} must be an object", param=path)
            kind = item.get("type")
            if kind is not None and not isinstance(kind, str):
                raise BadRequest(f"{path}.type must be a string", param=f"{path}.type")
            if kind is None and "role" in item:
                kind = "message"
            if kind == "message":
                self._message(item, path)
            elif kind == "function_call":
                name = _required_str(item, "name", path)
                call_id = _required_str(item, "call_id", path)
                namespace = item.get("namespace") if isinstance(item.get("namespace"), str) else None
                chat_name = _chat_name_for(self.refs, "function", name, namespace)
                self._call(call_id, chat_name, _arguments(item.get("arguments"), f"{path}.arguments"))
            elif kind == "custom_tool_call":
                name = _required_str(item, "name", path)
                call_id = _required_str(item, "call_id", path)
                raw = item.get("input")
                if not isinstance(raw, str):
                    raise BadRequest(f"{path}.input must be a string", param=f"{path}.input")
                chat_name = _chat_name_for(self.refs, "custom", name, None)
                self._call(call_id, chat_name, json.dumps({CUSTOM_INPUT: raw}, ensure_ascii=False))
            elif kind in ("function_call_output", "custom_tool_call_output"):
                call_id = _required_str(item, "call_id", path)
                content = self._tool_output(item.get("output"), f"{path}.output", call_id)
                self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
            elif kind == "additional_tools":
                pass  # its tools were collected with the top-level ones
            elif kind == "item_reference":
                raise BadRequest("item_reference needs stored items, which this gateway does not keep by id; "
                                 "send the item itself", param=path)
            elif isinstance(kind, str) and kind in _DROPPED_ITEMS:
                self.dropped.append(f"{path}: {_DROPPED_ITEMS[kind]}")
            elif kind is None:
                raise BadRequest(f"{path} has neither 'type' nor 'role'", param=f"{path}.type")
            else:
                raise BadRequest(f"{path}.type {str(kind)[:60]!r} is not a supported input item type",
                                 param=f"{path}.type")
        self._flush_images()
        return self.messages

    def _append(self, message: dict) -> None:
        self._flush_images()
        self.messages.append(message)

    def _flush_images(self) -> None:
        if self.pending_images:
            self.messages.append({"role": "user", "content": self.pending_images})
            self.pending_images = []

    def _message(self, item: dict, path: str) -> None:
        role = _str(item.get("role"))
        if role not in _ROLES:
            raise BadRequest(f"{path}.role must be one of 'user', 'assistant', 'system', 'developer'",
                             param=f"{path}.role")
        content = item.get("content")
        if role == "user":
            self._append({"role": "user", "content": _user_content(content, f"{path}.content")})
            return
        text = _plain_text(content, f"{path}.content")
        if role != "assistant":
            self._append({"role": "system", "content": text})
            return
        last = self.messages[-1] if self.messages and not self.pending_images else None
        if last is not None and last["role"] == "assistant":
            last["content"] = f"{last['content']}\n\n{text}" if last.get("content") else text
        else:
            self._append({"role": "assistant", "content": text})

    def _call(self, call_id: str, chat_name: str, arguments: str) -> None:
        call = {"id": call_id, "type": "function", "function": {"name": chat_name, "arguments": arguments}}
        last = self.messages[-1] if self.messages and not self.pending_images else None
        if last is not None and last["role"] == "assistant":
            last.setdefault("tool_calls", []).append(call)
        else:
            self._append({"role": "assistant", "content": None, "tool_calls": [call]})

    def _tool_output(self, output: Any, path: str, call_id: str) -> str:
        if isinstance(output, str):
            return output
        if not isinstance(output, list):
            raise BadRequest(f"{path} must be a string or an array of content items", param=path)
        texts: list[str] = []
        images: list[dict] = []
        for j, part in enumerate(output):
            ppath = f"{path}[{j}]"
            if not isinstance(part, dict):
                raise BadRequest(f"{ppath} must be an object", param=ppath)
            kind = _str(part.get("type"))
            if kind in _TEXT_PARTS:
                texts.append(_part_text(part, ppath))
            elif kind == "input_image":
                images.append(_image_part(part, ppath))
                texts.append(f"[image {len(images)} follows in the next message]")
            elif kind == "input_file":
                name = part.get("filename") if isinstance(part.get("filename"), str) else "file"
                texts.append(f"[{name}: files in tool results are not supported]")
            else:
                raise BadRequest(f"{ppath}.type {str(kind)[:60]!r} is not a supported tool output part",
                                 param=f"{ppath}.type")
        if images:
            self.pending_images.append({"type": "text", "text": f"Images returned by tool call {call_id}:"})
            self.pending_images.extend(images)
        out = ""
        for t in texts:
            out += t if not out or out.endswith("\n") else "\n" + t
        return out


def _required_str(item: dict, key: str, path: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{path}.{key} is required and must be a non-empty string", param=f"{path}.{key}")
    return value


def _arguments(value: Any, path: str) -> str:
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    raise BadRequest(f"{path} must be a JSON string", param=path)


def _part_text(part: dict, path: str) -> str:
    text = part.get("text")
    if not isinstance(text, str):
        raise BadRequest(f"{path}.text must be a string", param=f"{path}.text")
    return text


def _image_part(part: dict, path: str) -> dict:
    url = part.get("image_url")
    if isinstance(url, dict):
        url = url.get("url")
    if not isinstance(url, str) or not url:
        raise BadRequest(f"{path}.image_url is required (file ids are not supported)", param=f"{path}.image_url")
    image: dict[str, Any] = {"url": url}
    if part.get("detail") in ("auto", "low", "high"):
        image["detail"] = part["detail"]
    return {"type": "image_url", "image_url": image}


def _user_content(content: Any, path: str) -> str | list[dict]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise BadRequest(f"{path} must be a string or an array of content parts", param=path)
    parts: list[dict] = []
    for j, part in enumerate(content):
        ppath = f"{path}[{j}]"
        if not isinstance(part, dict):
            raise BadRequest(f"{ppath} must be an object", param=ppath)
        kind = _str(part.get("type"))
        if kind in _TEXT_PARTS:
            parts.append({"type": "text", "text": _part_text(part, ppath)})
        elif kind == "input_image":
            parts.append(_image_part(part, ppath))
        elif kind == "input_file":
            data = part.get("file_data")
            if not isinstance(data, str) or not data:
                raise BadRequest(f"{ppath}.file_data is required (file ids and URLs are not supported)",
                                 param=f"{ppath}.file_data")
            file: dict[str, Any] = {"file_data": data}
            if isinstance(part.get("filename"), str):
                file["filename"] = part["filename"]
            parts.append({"type": "file", "file": file})
        else:
            raise BadRequest(f"{ppath}.type {str(kind)[:60]!r} is not a supported content part",
                             param=f"{ppath}.type")
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)  # chat templates that only take strings work too
    return parts


def _plain_text(content: Any, path: str) -> str:
    """System and assistant content: text only (refusals read as text)."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if not isinstance(content, list):
        raise BadRequest(f"{path} must be a string or an array of content parts", param=path)
    texts = []
    for j, part in enumerate(content):
        ppath = f"{path}[{j}]"
        if not isinstance(part, dict):
            raise BadRequest(f"{ppath} must be an object", param=ppath)
        kind = _str(part.get("type"))
        if kind in _TEXT_PARTS:
            texts.append(_part_text(part, ppath))
        elif kind == "refusal":
            texts.append(_text_of(part.get("refusal")))
        else:
            raise BadRequest(f"{ppath}.type {str(kind)[:60]!r} is not allowed here (text only)",
                             param=f"{ppath}.type")
    return "\n".join(texts)


def _merge_leading_system(messages: list[dict]) -> list[dict]:
    """One leading system message: many chat templates accept a system prompt only in first place."""
    n = 0
    while n < len(messages) and messages[n]["role"] == "system":
        n += 1
    if n < 2:
        return messages
    joined = "\n\n".join(m["content"] for m in messages[:n] if m["content"])
    return [{"role": "system", "content": joined}, *messages[n:]]


def _echo(req: dict, instructions: str | None, store: bool) -> dict[str, Any]:
    """The request fields a Response repeats, with the API's defaults."""
    text = req.get("text") if isinstance(req.get("text"), dict) else {}
    echo_text: dict[str, Any] = {"format": text.get("format") if isinstance(text.get("format"), dict)
                                 else {"type": "text"}}
    if isinstance(text.get("verbosity"), str):
        echo_text["verbosity"] = text["verbosity"]

    def pick(key: str, kind: type | tuple, default: Any = None) -> Any:
        value = req.get(key)
        if isinstance(value, bool) and kind is not bool:
            return default
        return value if isinstance(value, kind) else default

    return {
        "background": False,
        "instructions": instructions,
        "max_output_tokens": pick("max_output_tokens", int),
        "max_tool_calls": pick("max_tool_calls", int),
        "parallel_tool_calls": pick("parallel_tool_calls", bool, True),
        "previous_response_id": pick("previous_response_id", str),
        "prompt_cache_key": pick("prompt_cache_key", str),
        "reasoning": pick("reasoning", dict, {"effort": None, "summary": None}),
        "safety_identifier": pick("safety_identifier", str),
        "service_tier": "default",
        "store": store,
        "temperature": pick("temperature", (int, float), 1.0),
        "text": echo_text,
        "tool_choice": req.get("tool_choice") if isinstance(req.get("tool_choice"), str | dict) else "auto",
        "tools": req.get("tools") if isinstance(req.get("tools"), list) else [],
        "top_p": pick("top_p", (int, float), 1.0),
        "truncation": pick("truncation", str, "disabled"),
        "user": pick("user", str),
        "metadata": pick("metadata", dict, {}),
    }
