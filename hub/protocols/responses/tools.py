"""Responses tools -> chat function tools, and the map back (docs/responses.md).

Chat backends know only function tools. A custom (freeform) tool becomes a function with one string
parameter `input`; namespace tools are flattened; the built-in web_search tool is not a chat tool but
the hosted-search offer the pipeline serves itself. ToolRef remembers what each chat function stands
for, so the model's calls go back to the client in its own shapes.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ...core.errors import BadRequest
from ...core.text import str_or_empty, str_or_none
from ...tools.base import HostedSearch

HOSTED_SEARCH_TOOLS = frozenset(
    {"web_search", "web_search_2025_08_26", "web_search_preview", "web_search_preview_2025_03_11"}
)
CUSTOM_INPUT = "input"  # the one parameter of a custom tool seen as a function
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
class _Entry:
    kind: str  # function | custom
    name: str
    namespace: str | None
    spec: dict


class ToolSet:
    """Collects client tools from `tools` and additional_tools items, flattening namespaces."""

    def __init__(self, dropped: list[str]) -> None:
        self.entries: list[_Entry] = []
        self.hosted: dict | None = None
        self.openrouter: list[dict] = []
        self.dropped = dropped

    def add(self, tool: Any, path: str, namespace: str | None = None) -> None:
        if not isinstance(tool, dict):
            raise BadRequest(f"{path} must be a tool object", param=path)
        kind = str_or_none(tool.get("type"))
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
        elif kind in ("openrouter:web_search", "openrouter:web_fetch"):
            self.openrouter.append(tool)  # OpenRouter's server tools: hub/injection/openrouter.py reads them
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
    description = str_or_empty(spec.get("description"))
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


def hosted_search(tool: dict, max_tool_calls: int | None) -> HostedSearch:
    """The built-in web_search tool's options. `external_web_access: false` (cache only) still searches
    live: the gateway has no offline index."""
    filters = tool.get("filters") if isinstance(tool.get("filters"), dict) else {}
    allowed = filters.get("allowed_domains")
    blocked = filters.get("blocked_domains")
    location = tool.get("user_location")
    if isinstance(location, dict):
        location = {k: location[k] for k in _LOCATION_KEYS if isinstance(location.get(k), str) and location[k]}
    size = str_or_none(tool.get("search_context_size"))
    return HostedSearch(
        allowed_domains=tuple(d for d in allowed if isinstance(d, str)) if isinstance(allowed, list) else (),
        blocked_domains=tuple(d for d in blocked if isinstance(d, str)) if isinstance(blocked, list) else (),
        max_uses=max_tool_calls,
        user_location=location or None,
        context_size=size if size in _CONTEXT_SIZES else None,
    )


@dataclass(slots=True)
class Allowed:
    mode: str
    names: set[str]
    search: bool


def translate_tool_choice(choice: Any, refs: dict[str, ToolRef], dropped: list[str]) -> tuple[Any, bool | None]:
    """(the chat tool_choice, an Allowed for allowed_tools, or None; force_search)."""
    if choice is None:
        return None, None
    if isinstance(choice, str):
        if choice not in _SIMPLE_CHOICES:
            raise BadRequest("'tool_choice' must be 'auto', 'none', 'required' or a tool choice object",
                             param="tool_choice")
        return choice, None
    if not isinstance(choice, dict):
        raise BadRequest("'tool_choice' must be a string or an object", param="tool_choice")
    kind = str_or_none(choice.get("type"))
    if kind in ("function", "custom"):
        name = choice.get("name")
        if not isinstance(name, str) and isinstance(choice.get(kind), dict):
            name = choice[kind].get("name")  # the chat shape
        if not isinstance(name, str) or not name:
            raise BadRequest("tool_choice.name is required", param="tool_choice.name")
        chat_name = chat_name_for(refs, kind, name, None)
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
            listed_kind = str_or_none(t.get("type"))
            if listed_kind in HOSTED_SEARCH_TOOLS:
                search = True
            elif listed_kind in ("function", "custom") and isinstance(t.get("name"), str):
                names.add(chat_name_for(refs, listed_kind, t["name"], None))
        return Allowed(mode, names, search), None
    dropped.append(f"tool_choice {kind!r}: the tool is not offered, the model chooses")
    return None, None


def chat_name_for(refs: dict[str, ToolRef], kind: str, name: str, namespace: str | None) -> str:
    """The chat function name of a client tool: the same namespace first, then any tool of that name;
    a tool the request does not define keeps its plain name."""
    candidates = [c for c, r in refs.items() if r.kind == kind and r.name == name]
    for c in candidates:
        if refs[c].namespace == namespace:
            return c
    return candidates[0] if candidates else name


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
