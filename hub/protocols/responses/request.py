"""A Responses API request -> the internal chat request (docs/responses.md).

Pure: a request dict in, a chat body and a ResponsesContext out, or BadRequest naming the JSON path
of what is wrong. Tools are reshaped in responses_tools, input items in responses_items; this module
joins them with the request-level fields and remembers what the encoders need in the context.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ...core.errors import BadRequest
from ...tools.base import HostedFetch, HostedSearch
from .items import Conversation
from .tools import Allowed, ToolRef, ToolSet, custom_input, hosted_search, translate_tool_choice

__all__ = ["ResponsesContext", "ToolRef", "custom_input", "items_to_messages", "to_chat"]

log = logging.getLogger("searchhub.responses")


@dataclass(slots=True)
class ResponsesContext:
    """What the encoders need from the request: echoes, the tool map, the hosted search offer."""

    model: str
    echo: dict[str, Any]  # request fields a Response object repeats
    tools: dict[str, ToolRef] = field(default_factory=dict)  # chat function name -> client tool
    hosted: HostedSearch | None = None
    hosted_fetch: HostedFetch | None = None  # with the hosted web_search, calls may open pages (open_page)
    force_search: bool | None = None  # tool_choice named the hosted search tool
    results: bool = False  # include has web_search_call.results: web_search_call items list what came back
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
    tools = ToolSet(dropped)
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

    include = _optional(req, "include", list) or []
    for i, value in enumerate(include):
        if not isinstance(value, str):
            raise BadRequest("'include' must be an array of strings", param=f"include[{i}]")

    max_tool_calls = _optional_int(req, "max_tool_calls")
    hosted = hosted_search(tools.hosted, max_tool_calls) if tools.hosted is not None else None
    tool_choice, force_search = translate_tool_choice(req.get("tool_choice"), refs, dropped)
    if tool_choice == "none":
        hosted = None  # "none" rules out the built-in tools too
    if isinstance(tool_choice, Allowed):
        chat_tools = [t for t in chat_tools if t["function"]["name"] in tool_choice.names]
        if hosted is not None and not tool_choice.search:
            hosted = None
        tool_choice = tool_choice.mode
    if tool_choice == "required" and not chat_tools and hosted is not None:
        force_search = True  # the built-in search is the only tool to call

    converted = Conversation(refs, dropped).translate(items)
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
    if tools.openrouter:  # OpenRouter's server tools and web plugin: hub/injection/openrouter.py
        chat["tools"] = [*chat.get("tools", ()), *tools.openrouter]
    if req.get("plugins") is not None:
        chat["plugins"] = req["plugins"]
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
        # OpenAI's web_search opens pages too (open_page actions); the same domain filters apply
        hosted_fetch=HostedFetch(allowed_domains=hosted.allowed_domains, blocked_domains=hosted.blocked_domains,
                                 max_uses=hosted.max_uses) if hosted is not None else None,
        force_search=force_search,
        results="web_search_call.results" in include,
        stream=stream,
        store=store if store is not None else True,
        previous_response_id=previous,
        history=conversation,
        dropped=dropped,
    )
    return chat, ctx


def items_to_messages(items: list, ctx: ResponsesContext) -> list[dict]:
    """Output items of a response in chat form (what a continuation's history needs)."""
    return Conversation(ctx.tools, []).translate(items)


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


def wants_thinking(body: dict) -> bool:
    """The request asks for reasoning (a model alias or a commercial target may depend on it)."""
    reasoning = body.get("reasoning")
    effort = reasoning.get("effort") if isinstance(reasoning, dict) else None
    return isinstance(effort, str) and effort != "none"
