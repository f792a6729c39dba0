"""Anthropic Messages request -> the internal chat request (docs/claude-code.md).

Liberal in what it accepts: unknown fields and block types are ignored. A value of the wrong type
in a field we read is a BadRequest naming its path, e.g. `messages[2].content[0].source`.
Messages and their content blocks are translated in messages_content.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import msgspec

from ...core.errors import BadRequest
from ...tools.base import HostedFetch, HostedSearch
from ...tools.web_fetch import SourcedFetch, ToolFilter, UrlSources
from .content import DEFAULT_REPLAYS, Replays, bad_request, chat_messages, loaded_tools, string

_LOCATION_KEYS = ("city", "region", "country", "timezone")
_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}
_SOURCE_KINDS = ("all", "none")
_FILTER_KINDS = ("all", "none", "only", "except")


@dataclass(slots=True)
class MessagesContext:
    """What the response encoders need to know about the request."""

    model: str  # as the client sent it; echoed back
    stream: bool = False
    hosted: HostedSearch | None = None  # the client offered the web_search server tool
    hosted_fetch: HostedFetch | None = None  # the client offered the web_fetch server tool
    force_search: bool = False  # tool_choice forces the hosted web_search
    withheld: bool = False  # a server tool offered only to other callers (code execution), not to the model
    thinking: bool = False  # thinking enabled or adaptive (the `reasoning` alias applies)
    show_thinking: bool = False  # answer reasoning as thinking blocks
    session_id: str | None = None  # Claude Code's session, from metadata.user_id

    @property
    def server_tools(self) -> bool:
        """The client offered server tools: their calls show as blocks and usage counts them."""
        return self.hosted is not None or self.hosted_fetch is not None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --- tools --------------------------------------------------------------------------------------


def _max_uses(tool: dict, path: str) -> int | None:
    max_uses = tool.get("max_uses")
    if max_uses is not None and (not _is_int(max_uses) or max_uses < 1):
        raise bad_request(f"{path}.max_uses", "must be a positive integer")
    return max_uses


def _domains(tool: dict, path: str) -> dict[str, tuple[str, ...]]:
    domains = {}
    for key in ("allowed_domains", "blocked_domains"):
        value = tool.get(key)
        if value is None:
            domains[key] = ()
        elif isinstance(value, list) and all(isinstance(d, str) for d in value):
            domains[key] = tuple(d for d in value if d)
        else:
            raise bad_request(f"{path}.{key}", "must be a list of strings")
    return domains


def _direct(tool: dict, path: str) -> bool:
    """Whether the model may call the server tool itself: `allowed_callers` (default ["direct"]) lists
    "direct" or only code-execution callers, which this gateway does not have. The other fields every
    version may carry are checked here too: `defer_loading` and `strict` (accepted; a server tool is
    offered at once, there is no tool search for it), `response_inclusion` (it only concerns results a
    code-execution call consumed; direct calls' results are always returned)."""
    for key in ("defer_loading", "strict"):
        if tool.get(key) is not None and not isinstance(tool[key], bool):
            raise bad_request(f"{path}.{key}", "must be a boolean")
    if tool.get("response_inclusion") is not None and not isinstance(tool["response_inclusion"], str):
        raise bad_request(f"{path}.response_inclusion", 'must be "full" or "excluded"')
    callers = tool.get("allowed_callers")
    if callers is None:
        return True
    if not isinstance(callers, list) or not all(isinstance(c, str) for c in callers):
        raise bad_request(f"{path}.allowed_callers", "must be a list of strings")
    return "direct" in callers


def _source(value: object, path: str, declared: set[str], kinds: tuple[str, ...]) -> ToolFilter:
    """One source of `url_sources`: "all" / "none", or {"type": "all"|"none"|"only"|"except", "tools":
    [{"type": "tool_reference", "name"}]}; a named tool must be one of the request's tools."""
    if value is None:
        return ToolFilter()
    if isinstance(value, str):
        kind, where = value, path
    elif isinstance(value, dict):
        kind, where = value.get("type"), f"{path}.type"
    else:
        raise bad_request(path, "must be an object or a string")
    if kind not in kinds:
        raise bad_request(where, "must be one of " + ", ".join(kinds))
    if kind in ("all", "none"):
        return ToolFilter(kind)
    refs = value.get("tools") if isinstance(value, dict) else None
    if not isinstance(refs, list):
        raise bad_request(f"{path}.tools", "must be a list of tool references")
    names = set()
    for j, ref in enumerate(refs):
        name = ref.get("name") if isinstance(ref, dict) else None
        if not isinstance(name, str):
            raise bad_request(f"{path}.tools[{j}].name", "must be a string")
        if ref.get("type") not in (None, "tool_reference"):
            raise bad_request(f"{path}.tools[{j}].type", "must be tool_reference")
        if name not in declared:
            raise bad_request(f"{path}.tools[{j}].name", f"names no tool of this request: {name[:64]}")
        names.add(name)
    return ToolFilter(kind, frozenset(names))


def _url_sources(tool: dict, path: str, declared: set[str], origins: dict) -> UrlSources | None:
    raw = tool.get("url_sources")
    if raw is None:
        return None
    path = f"{path}.url_sources"
    if not isinstance(raw, dict):
        raise bad_request(path, "must be an object")
    user = _source(raw.get("user_input"), f"{path}.user_input", declared, _SOURCE_KINDS)
    return UrlSources(
        user_input=user.kind == "all",
        server_tool_results=_source(raw.get("server_tool_results"), f"{path}.server_tool_results", declared,
                                    _FILTER_KINDS),
        client_tool_results=_source(raw.get("client_tool_results"), f"{path}.client_tool_results", declared,
                                    _FILTER_KINDS),
        origins=origins,
    )


def _hosted(tool: dict, path: str) -> HostedSearch:
    max_uses = _max_uses(tool, path)
    domains = _domains(tool, path)
    location = tool.get("user_location")
    if location is not None and not isinstance(location, dict):
        raise bad_request(f"{path}.user_location", "must be an object")
    if location:
        location = {k: v for k in _LOCATION_KEYS if isinstance(v := location.get(k), str) and v} or None
    return HostedSearch(
        allowed_domains=domains["allowed_domains"], blocked_domains=domains["blocked_domains"],
        max_uses=max_uses, user_location=location or None,
    )


def _hosted_fetch(tool: dict, path: str, declared: set[str], origins: dict) -> HostedFetch:
    """A web_fetch_* server tool (every version: the later ones add `use_cache`; `url_sources` narrows
    where fetchable URLs may come from, hub/tools/web_fetch.py UrlSources)."""
    domains = _domains(tool, path)
    if domains["allowed_domains"] and domains["blocked_domains"]:
        raise bad_request(path, "allowed_domains and blocked_domains cannot both be set")
    citations = tool.get("citations")
    if citations is not None and not isinstance(citations, dict):
        raise bad_request(f"{path}.citations", "must be an object")
    max_tokens = tool.get("max_content_tokens")
    if max_tokens is not None and (not _is_int(max_tokens) or max_tokens < 1):
        raise bad_request(f"{path}.max_content_tokens", "must be a positive integer")
    if tool.get("use_cache") is not None and not isinstance(tool["use_cache"], bool):
        raise bad_request(f"{path}.use_cache", "must be a boolean")
    fields = dict(
        allowed_domains=domains["allowed_domains"], blocked_domains=domains["blocked_domains"],
        max_uses=_max_uses(tool, path), citations=bool(citations and citations.get("enabled") is True),
        max_content_tokens=max_tokens, use_cache=tool.get("use_cache") is not False,
    )
    sources = _url_sources(tool, path, declared, origins)
    return HostedFetch(**fields) if sources is None else SourcedFetch(**fields, url_sources=sources)


@dataclass(slots=True)
class _Hosted:
    search: HostedSearch | None = None
    fetch: HostedFetch | None = None
    withheld: bool = False  # a server tool the model may not call directly (allowed_callers)


def _tools(raw: object, loaded: set[str], origins: dict) -> tuple[list[dict], _Hosted]:
    """Chat function tools, and the hosted tools when web_search_* / web_fetch_* server tools are offered
    to the model (any version, matched by prefix); `origins` is filled later with the history's tool
    calls, for a web_fetch tool's url_sources."""
    hosted = _Hosted()
    if raw is None:
        return [], hosted
    if not isinstance(raw, list):
        raise bad_request("tools", "must be a list")
    declared = {t["name"] for t in raw if isinstance(t, dict) and isinstance(t.get("name"), str)}
    tools: list[dict] = []
    for i, tool in enumerate(raw):
        path = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise bad_request(path, "must be an object")
        kind = tool.get("type")
        if kind is not None and not isinstance(kind, str):
            raise bad_request(f"{path}.type", "must be a string")
        if kind is not None and kind.startswith("web_search_"):
            search = _hosted(tool, path)
            if _direct(tool, path):
                hosted.search = search
            else:
                hosted.withheld = True
            continue
        if kind is not None and kind.startswith("web_fetch_"):
            fetch = _hosted_fetch(tool, path, declared, origins)
            if _direct(tool, path):
                hosted.fetch = fetch
            else:
                hosted.withheld = True
            continue
        if kind not in (None, "custom"):
            continue  # other Anthropic-defined tools (bash_*, code_execution_*, ...) have no chat equivalent
        name = string(tool, "name", path, required=True)
        schema = tool.get("input_schema")
        if not isinstance(schema, dict):
            raise bad_request(f"{path}.input_schema", "must be a JSON Schema object")
        if tool.get("defer_loading") is True and name not in loaded:
            continue  # Claude Code's ToolSearch has not loaded it yet (docs/claude-code.md)
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
        raise bad_request("tool_choice", "must be an object")
    kind = string(raw, "type", "tool_choice", required=True)
    names = {t["function"]["name"] for t in body.get("tools", ())}
    choice: object
    if kind == "auto":
        choice = "auto"
    elif kind == "any":
        choice = "required"
    elif kind == "none":
        choice = "none"
    elif kind == "tool":
        name = string(raw, "name", "tool_choice", required=True)
        # The hosted web_search (the gateway runs its own loop), a deferred tool not loaded yet, or an
        # Anthropic-defined tool we cannot offer: nothing the backend could be forced to call.
        choice = {"type": "function", "function": {"name": name}} if name in names else None
    else:
        raise bad_request("tool_choice.type", "must be one of auto, any, tool, none")
    if not names:
        return  # hosted search only, or no tools at all: nothing for the backend to choose
    if choice is not None:
        body["tool_choice"] = choice
    if raw.get("disable_parallel_tool_use") is True:
        body["parallel_tool_calls"] = False


# --- request ------------------------------------------------------------------------------------


def _thinking(req: dict, body: dict, ctx: MessagesContext) -> None:
    thinking = req.get("thinking")
    if thinking is not None:
        if not isinstance(thinking, dict):
            raise bad_request("thinking", "must be an object")
        kind = string(thinking, "type", "thinking", required=True)
        ctx.thinking = kind in ("enabled", "adaptive")
        ctx.show_thinking = ctx.thinking and thinking.get("display") != "omitted"
        if kind == "enabled":
            budget = thinking.get("budget_tokens")
            if budget is not None and not _is_int(budget):
                raise bad_request("thinking.budget_tokens", "must be an integer")
            if budget:
                body["reasoning_effort"] = "low" if budget < 4096 else "medium" if budget < 16384 else "high"
    config = req.get("output_config")
    if config is None:
        return
    if not isinstance(config, dict):
        raise bad_request("output_config", "must be an object")
    effort = config.get("effort")
    if effort is not None and not isinstance(effort, str):
        raise bad_request("output_config.effort", "must be a string")
    if effort in _EFFORTS and not (isinstance(thinking, dict) and thinking.get("type") == "disabled"):
        body["reasoning_effort"] = _EFFORTS[effort]
    fmt = config.get("format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and isinstance(fmt.get("schema"), dict):
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "output", "schema": fmt["schema"]}}


def _sampling(req: dict, body: dict) -> None:
    max_tokens = req.get("max_tokens")
    if max_tokens is not None:
        if not _is_int(max_tokens) or max_tokens < 1:
            raise bad_request("max_tokens", "must be a positive integer")
        body["max_tokens"] = max_tokens
    for key in ("temperature", "top_p"):
        value = req.get(key)
        if value is not None:
            if not _is_number(value):
                raise bad_request(key, "must be a number")
            body[key] = value
    top_k = req.get("top_k")
    if top_k is not None:
        if not _is_int(top_k):
            raise bad_request("top_k", "must be an integer")
        body["top_k"] = top_k
    stops = req.get("stop_sequences")
    if stops is not None:
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise bad_request("stop_sequences", "must be a list of strings")
        if stops:
            body["stop"] = stops


def _session(metadata: object) -> str | None:
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise bad_request("metadata", "must be an object")
    user_id = metadata.get("user_id")
    if user_id is None:
        return None
    if not isinstance(user_id, str):
        raise bad_request("metadata.user_id", "must be a string")
    try:
        value = json.loads(user_id)  # Claude Code: a JSON string with device_id and session_id
    except ValueError:
        return None
    session = value.get("session_id") if isinstance(value, dict) else None
    return session if isinstance(session, str) and session else None


def to_chat(req: object, replays: Replays = DEFAULT_REPLAYS) -> tuple[dict, MessagesContext]:
    """A Messages request body -> (chat request body, context for the response encoders); `replays`:
    the server tools whose replayed blocks become tool rounds (hub/tools/registry.py)."""
    if not isinstance(req, dict):
        raise BadRequest("request body must be a JSON object")
    model = string(req, "model", "", required=True)
    if not model.strip():
        raise bad_request("model", "must not be empty")
    stream = req.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise bad_request("stream", "must be a boolean")
    ctx = MessagesContext(model=model, stream=bool(stream))

    raw_messages = req.get("messages")
    loaded = loaded_tools(raw_messages if isinstance(raw_messages, list) else [])
    origins: dict[str, tuple[bool, str]] = {}  # the history's tool calls, for url_sources
    tools, hosted = _tools(req.get("tools"), loaded, origins)
    ctx.hosted, ctx.hosted_fetch, ctx.withheld = hosted.search, hosted.fetch, hosted.withheld
    body: dict[str, Any] = {"model": model, "messages": chat_messages(
        req.get("system"), raw_messages, replays, origins=origins if isinstance(ctx.hosted_fetch, SourcedFetch)
        else None)}
    if tools:
        body["tools"] = tools
    _tool_choice(req.get("tool_choice"), body)
    choice = req.get("tool_choice")
    if ctx.hosted is not None and isinstance(choice, dict) and (
            (choice.get("type") == "tool" and choice.get("name") == "web_search")
            or (choice.get("type") == "any" and not tools)):
        ctx.force_search = True
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


def wants_thinking(body: dict) -> bool:
    """The request asks for extended thinking (a model alias or a commercial target may depend on it)."""
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
