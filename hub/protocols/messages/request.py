"""Anthropic Messages request -> the internal chat request (docs/claude-code.md).

Liberal in what it accepts: unknown fields and block types are ignored. The request is decoded and
checked first (hub/protocols/messages/wire.py: a wrong type in a field we read is a BadRequest naming
its path, e.g. `messages.2.content.0.source`); messages and their content blocks are translated in
messages/content.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ...tools.kind import MESSAGES, Reading
from ...tools.registry import offerings
from . import wire
from .content import DEFAULT_REPLAYS, Replays, chat_messages, loaded_tools
from .wire import CustomTool, MessagesRequest, decode_request

_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}
_CHOICES = {"auto": "auto", "any": "required", "none": "none"}


@dataclass(slots=True)
class MessagesContext:
    """What the response encoders need to know about the request."""

    model: str  # as the client sent it; echoed back
    stream: bool = False
    # the client's hosted tools offered to the model, by tool name ("web_search" -> HostedSearch,
    # "web_fetch" -> HostedFetch), read by the tools that declare them (hub/tools/registry.py)
    hosted: dict[str, Any] = field(default_factory=dict)
    force_search: bool = False  # tool_choice forces the hosted web_search
    withheld: bool = False  # a server tool offered only to other callers (code execution), not to the model
    thinking: bool = False  # thinking enabled or adaptive (the `reasoning` alias applies)
    show_thinking: bool = False  # answer reasoning as thinking blocks
    session_id: str | None = None  # Claude Code's session, from metadata.user_id

    @property
    def server_tools(self) -> bool:
        """The client offered server tools: their calls show as blocks and usage counts them."""
        return bool(self.hosted)


# --- tools --------------------------------------------------------------------------------------


def _direct(tool: wire.ServerTool) -> bool:
    """Whether the model may call the server tool itself: `allowed_callers` (default ["direct"]) lists
    "direct" or only code-execution callers, which this gateway does not have. `defer_loading` and
    `strict` are accepted (a server tool is offered at once, there is no tool search for it), and so is
    `response_inclusion` (it only concerns results a code-execution call consumed; direct calls' results
    are always returned)."""
    return tool.allowed_callers is None or "direct" in tool.allowed_callers


@dataclass(slots=True)
class _Hosted:
    offers: dict[str, Any] = field(default_factory=dict)  # by tool name
    withheld: bool = False  # a server tool the model may not call directly (allowed_callers)


def _tools(raw: list[wire.Tool], loaded: set[str], reading: Reading) -> tuple[list[dict], _Hosted]:
    """Chat function tools, and the hosted tools when server tools the tool registry knows are offered
    to the model (web_search_* / web_fetch_*: any version, matched by prefix); `reading.origins` is
    filled later with the history's tool calls, for a web_fetch tool's url_sources."""
    hosted = _Hosted()
    tools: list[dict] = []
    for tool in raw:
        if isinstance(tool, CustomTool):
            if tool.defer_loading is True and tool.name not in loaded:
                continue  # Claude Code's ToolSearch has not loaded it yet (docs/claude-code.md)
            function: dict[str, Any] = {"name": tool.name, "parameters": tool.input_schema}
            if tool.description:
                function["description"] = tool.description
            if tool.strict is True:
                function["strict"] = True
            tools.append({"type": "function", "function": function})
        elif isinstance(tool, wire.ServerTool) and (found := offerings(MESSAGES, tool.type)):
            if not _direct(tool):
                hosted.withheld = True
                continue
            for name, offer in found:
                hosted.offers[name] = offer.read(tool, reading)
        # other Anthropic-defined tools (bash_*, code_execution_*, ...) have no chat equivalent
    return tools, hosted


def _tool_choice(raw: wire.ToolChoice | None, body: dict) -> None:
    if raw is None:
        return
    names = {t["function"]["name"] for t in body.get("tools", ())}
    choice: object
    if raw.type == "tool":
        # The hosted web_search (the gateway runs its own loop), a deferred tool not loaded yet, or an
        # Anthropic-defined tool we cannot offer: nothing the backend could be forced to call.
        choice = {"type": "function", "function": {"name": raw.name}} if raw.name in names else None
    else:
        choice = _CHOICES[raw.type]
    if not names:
        return  # hosted search only, or no tools at all: nothing for the backend to choose
    if choice is not None:
        body["tool_choice"] = choice
    if raw.disable_parallel_tool_use is True:
        body["parallel_tool_calls"] = False


# --- request ------------------------------------------------------------------------------------


def _thinking(req: MessagesRequest, body: dict, ctx: MessagesContext) -> None:
    thinking = req.thinking
    if thinking is not None:
        ctx.thinking = thinking.type in ("enabled", "adaptive")
        ctx.show_thinking = ctx.thinking and thinking.display != "omitted"
        budget = thinking.budget_tokens
        if thinking.type == "enabled" and budget:
            body["reasoning_effort"] = "low" if budget < 4096 else "medium" if budget < 16384 else "high"
    config = req.output_config
    if config is None:
        return
    if config.effort in _EFFORTS and not (thinking is not None and thinking.type == "disabled"):
        body["reasoning_effort"] = _EFFORTS[config.effort]
    fmt = config.format
    if fmt is not None and fmt.type == "json_schema":
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "output", "schema": fmt.schema}}


def _sampling(req: MessagesRequest, body: dict) -> None:
    for key in ("max_tokens", "temperature", "top_p", "top_k"):
        value = getattr(req, key)
        if value is not None:
            body[key] = value
    if req.stop_sequences:
        body["stop"] = req.stop_sequences


def _session(metadata: wire.Metadata | None) -> str | None:
    if metadata is None or metadata.user_id is None:
        return None
    try:
        value = json.loads(metadata.user_id)  # Claude Code: a JSON string with device_id and session_id
    except ValueError:
        return None
    session = value.get("session_id") if isinstance(value, dict) else None
    return session if isinstance(session, str) and session else None


def to_chat(req: MessagesRequest | object, replays: Replays = DEFAULT_REPLAYS) -> tuple[dict, MessagesContext]:
    """A Messages request (decoded, or the body to decode) -> (chat request body, context for the
    response encoders); `replays`: the server tools whose replayed blocks become tool rounds
    (hub/tools/registry.py)."""
    request = req if isinstance(req, MessagesRequest) else decode_request(req)
    ctx = MessagesContext(model=request.model, stream=bool(request.stream))
    reading = Reading()  # its origins: the history's tool calls, for url_sources
    tools, hosted = _tools(request.tools or [], loaded_tools(request.messages), reading)
    ctx.hosted, ctx.withheld = hosted.offers, hosted.withheld
    body: dict[str, Any] = {"model": request.model, "messages": chat_messages(
        request.system, request.messages, replays, origins=reading.origins if reading.uses_origins else None)}
    if tools:
        body["tools"] = tools
    _tool_choice(request.tool_choice, body)
    choice = request.tool_choice
    if "web_search" in ctx.hosted and choice is not None and (
            (choice.type == "tool" and choice.name == "web_search") or (choice.type == "any" and not tools)):
        ctx.force_search = True
    _thinking(request, body, ctx)
    _sampling(request, body)
    ctx.session_id = _session(request.metadata)
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


def wants_thinking(body: dict) -> bool:
    """The request asks for extended thinking (a model alias or a commercial target may depend on it)."""
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
