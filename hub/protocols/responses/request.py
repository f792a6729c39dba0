"""A Responses API request -> the internal chat request (docs/responses.md).

Pure: a request dict in, a chat body and a ResponsesContext out, or BadRequest naming the JSON path
of what is wrong. The request is decoded and checked first (wire.py); tools are reshaped in tools.py,
input items in items.py; this module joins them with the request-level fields and remembers what the
encoders need in the context.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ...core.errors import BadRequest
from ...tools.kind import RESPONSES, Reading
from ...tools.registry import read_offers
from .items import Conversation
from .tools import Allowed, ToolRef, ToolSet, custom_input, translate_tool_choice
from .wire import AdditionalTools, Request, decode_items, decode_request

__all__ = ["ResponsesContext", "ToolRef", "custom_input", "items_to_messages", "to_chat", "translate"]

log = logging.getLogger("searchhub.responses")


@dataclass(slots=True)
class ResponsesContext:
    """What the encoders need from the request: echoes, the tool map, the hosted search offer."""

    model: str
    echo: dict[str, Any]  # request fields a Response object repeats
    tools: dict[str, ToolRef] = field(default_factory=dict)  # chat function name -> client tool
    # the client's hosted tools, by tool name: the built-in web_search offers "web_search" and, as its
    # calls may open pages (open_page), "web_fetch" (read by those tools, hub/tools/registry.py)
    hosted: dict[str, Any] = field(default_factory=dict)
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
    """Decode and translate a Responses request; `history` is a stored conversation (previous_response_id) to continue."""
    return translate(decode_request(req), history=history)


def translate(request: Request, *, history: list[dict] | None = None) -> tuple[dict, ResponsesContext]:
    """Translate a decoded request (wire.decode_request; its item references already resolved)."""
    req = request.fields
    if req.conversation is not None:
        raise BadRequest("conversation objects are not supported; use previous_response_id or send the "
                         "full history", param="conversation")

    dropped: list[str] = []
    tools = ToolSet(dropped)
    for i, tool in enumerate(request.tools):
        tools.add(tool, f"tools[{i}]")
    for i, item in enumerate(request.items):
        if isinstance(item, AdditionalTools):
            for j, tool in enumerate(item.tools):
                tools.add(tool, f"input[{i}].tools[{j}]")
    chat_tools, refs = tools.build()

    include = req.include or []
    hosted = read_offers(RESPONSES, tools.hosted, Reading(max_tool_calls=req.max_tool_calls))
    tool_choice, force_search = translate_tool_choice(req.tool_choice, refs, dropped)
    if tool_choice == "none":
        hosted = {}  # "none" rules out the built-in tools too
    if isinstance(tool_choice, Allowed):
        chat_tools = [t for t in chat_tools if t["function"]["name"] in tool_choice.names]
        if not tool_choice.search:
            hosted = {}
        tool_choice = tool_choice.mode
    if tool_choice == "required" and not chat_tools and hosted:
        force_search = True  # the built-in search is the only tool to call

    converted = Conversation(refs, dropped).translate(request.items)
    conversation = [*(history or ()), *converted]
    if not any(m.get("role") != "system" for m in conversation):
        raise BadRequest("the request has no input to answer: send 'input' with at least one message or item",
                         param="input")

    instructions = req.instructions
    messages = _merge_leading_system(
        ([{"role": "system", "content": instructions}] if instructions else []) + conversation
    )
    chat: dict[str, Any] = {"model": req.model, "messages": messages}
    if req.stream:
        chat["stream"] = True
        chat["stream_options"] = {"include_usage": True}
    if chat_tools:
        chat["tools"] = chat_tools
        if tool_choice is not None:
            chat["tool_choice"] = tool_choice
        if req.parallel_tool_calls is not None:
            chat["parallel_tool_calls"] = req.parallel_tool_calls
    elif tool_choice == "none":
        chat["tool_choice"] = "none"  # keeps the pipeline from offering its own tool
    if tools.openrouter:  # OpenRouter's server tools and web plugin: hub/injection/openrouter.py
        chat["tools"] = [*chat.get("tools", ()), *tools.openrouter]
    body = request.body
    if body.get("plugins") is not None:
        chat["plugins"] = body["plugins"]
    if req.temperature is not None:
        chat["temperature"] = req.temperature
    if req.top_p is not None:
        chat["top_p"] = req.top_p
    if req.max_output_tokens is not None:
        chat["max_tokens"] = req.max_output_tokens
    if req.reasoning is not None and req.reasoning.effort is not None:
        chat["reasoning_effort"] = req.reasoning.effort
    if req.text is not None and req.text.format is not None:
        response_format = _response_format(body["text"]["format"])  # its fields go to the backend as sent
        if response_format is not None:
            chat["response_format"] = response_format

    for reason in dropped:
        log.debug("responses request: dropped %s", reason)
    store = req.store if req.store is not None else True
    ctx = ResponsesContext(
        model=req.model,
        echo=_echo(request, store),
        tools=refs,
        hosted=hosted,
        force_search=force_search,
        results="web_search_call.results" in include,
        stream=bool(req.stream),
        store=store,
        previous_response_id=req.previous_response_id,
        history=conversation,
        dropped=dropped,
    )
    return chat, ctx


def items_to_messages(items: list, ctx: ResponsesContext) -> list[dict]:
    """Output items of a response in chat form (what a continuation's history needs)."""
    return Conversation(ctx.tools, []).translate(decode_items(items))


# --- small readers ------------------------------------------------------------------------------


def _response_format(fmt: dict) -> dict | None:
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


def _echo(request: Request, store: bool) -> dict[str, Any]:
    """The request fields a Response repeats, with the API's defaults; objects as the client sent them."""
    req, body = request.fields, request.body
    text = req.text
    echo_text: dict[str, Any] = {"format": body["text"]["format"] if text is not None and text.format is not None
                                 else {"type": "text"}}
    if text is not None and text.verbosity is not None:
        echo_text["verbosity"] = text.verbosity

    def sent(key: str, default: Any) -> Any:
        value = body.get(key)
        return default if value is None else value

    return {
        "background": False,
        "instructions": req.instructions,
        "max_output_tokens": req.max_output_tokens,
        "max_tool_calls": req.max_tool_calls,
        "parallel_tool_calls": sent("parallel_tool_calls", True),
        "previous_response_id": req.previous_response_id,
        "prompt_cache_key": req.prompt_cache_key,
        "reasoning": sent("reasoning", {"effort": None, "summary": None}),
        "safety_identifier": req.safety_identifier,
        "service_tier": "default",
        "store": store,
        "temperature": sent("temperature", 1.0),
        "text": echo_text,
        "tool_choice": sent("tool_choice", "auto"),
        "tools": sent("tools", []),
        "top_p": sent("top_p", 1.0),
        "truncation": sent("truncation", "disabled"),
        "user": req.user,
        "metadata": sent("metadata", {}),
    }


def wants_thinking(body: dict) -> bool:
    """The request asks for reasoning (a model alias or a commercial target may depend on it)."""
    reasoning = body.get("reasoning")
    effort = reasoning.get("effort") if isinstance(reasoning, dict) else None
    return isinstance(effort, str) and effort != "none"
