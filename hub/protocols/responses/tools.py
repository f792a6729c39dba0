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
from ...tools.kind import RESPONSES
from ...tools.registry import offerings
from .wire import (
    CustomTool,
    FunctionTool,
    NamespaceTool,
    OpenRouterTool,
    OtherTool,
    Tool,
    ToolChoice,
    WebSearchTool,
)

CUSTOM_INPUT = "input"  # the one parameter of a custom tool seen as a function


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
    spec: FunctionTool | CustomTool


class ToolSet:
    """Collects client tools from `tools` and additional_tools items, flattening namespaces."""

    def __init__(self, dropped: list[str]) -> None:
        self.entries: list[_Entry] = []
        self.hosted: list[WebSearchTool | OtherTool] = []  # the client's hosted tools, first of each (hub/tools/registry.py)
        self._hosting: set[str] = set()  # the server tools they offer
        self.openrouter: list[dict] = []
        self.dropped = dropped

    def add(self, tool: Tool, path: str, namespace: str | None = None) -> None:
        """One decoded tool (hub/protocols/responses/wire.py); `path` names it in a dropped reason."""
        match tool:
            case FunctionTool(name=str(name)):  # the decode made sure of the name
                self.entries.append(_Entry("function", name, namespace, tool))
            case CustomTool():
                self.entries.append(_Entry("custom", tool.name, namespace, tool))
            case NamespaceTool():
                for i, sub in enumerate(tool.tools):
                    self.add(sub, f"{path}.tools[{i}]", tool.name)
            case WebSearchTool() | OtherTool() if found := offerings(RESPONSES, tool.type):
                names = {name for name, _ in found}
                if not names & self._hosting:  # a second search tool adds nothing
                    self.hosted.append(tool)
                    self._hosting |= names
            case OpenRouterTool():
                self.openrouter.append(tool.spec)  # OpenRouter's server tools: hub/injection/openrouter.py reads them
            case OtherTool(type="tool_search"):
                self.dropped.append(f"{path}: tool_search (every tool is offered up front instead)")
            case OtherTool():
                self.dropped.append(f"{path}: tool type {tool.type!r} is not supported with chat models")

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
    description = spec.description or ""
    if isinstance(spec, CustomTool):
        fmt = spec.format
        if fmt is not None and fmt.type == "grammar" and fmt.definition is not None:
            syntax = fmt.syntax if fmt.syntax is not None else "lark"
            description += (f"\n\nThe `{CUSTOM_INPUT}` argument is freeform text that must follow this "
                            f"{syntax} grammar:\n{fmt.definition}")
        parameters: Any = {
            "type": "object",
            "properties": {CUSTOM_INPUT: {"type": "string", "description": "The raw input text for the tool."}},
            "required": [CUSTOM_INPUT],
            "additionalProperties": False,
        }
        strict = None
    else:
        parameters = spec.parameters if spec.parameters is not None else {"type": "object", "properties": {}}
        strict = spec.strict
    function: dict[str, Any] = {"name": chat_name}
    if description.strip():
        function["description"] = description
    function["parameters"] = parameters
    if strict is not None:
        function["strict"] = strict
    return {"type": "function", "function": function}


@dataclass(slots=True)
class Allowed:
    mode: str
    names: set[str]
    search: bool


def translate_tool_choice(choice: str | ToolChoice | None, refs: dict[str, ToolRef],
                          dropped: list[str]) -> tuple[Any, bool | None]:
    """(the chat tool_choice, an Allowed for allowed_tools, or None; force_search)."""
    if choice is None or isinstance(choice, str):
        return choice, None  # auto, none or required (the decode checked it)
    kind = choice.type
    if kind in ("function", "custom"):
        name = choice.name
        inner = choice.function if kind == "function" else choice.custom
        if name is None and inner is not None:
            name = inner.name  # the chat shape
        if not name:
            raise BadRequest("tool_choice.name is required", param="tool_choice.name")
        chat_name = chat_name_for(refs, kind, name, None)
        if chat_name not in refs:
            raise BadRequest(f"tool_choice names {kind} tool '{name}', which is not in 'tools'",
                             param="tool_choice.name")
        return {"type": "function", "function": {"name": chat_name}}, None
    if offerings(RESPONSES, kind):  # the built-in search tool
        return None, True
    if kind == "allowed_tools":
        if choice.tools is None:
            raise BadRequest("'tool_choice.tools' is required for allowed_tools", param="tool_choice.tools")
        names: set[str] = set()
        search = False
        for t in choice.tools:
            if offerings(RESPONSES, t.type):
                search = True
            elif t.type in ("function", "custom") and t.name is not None:
                names.add(chat_name_for(refs, t.type, t.name, None))
        return Allowed(choice.mode or "auto", names, search), None
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
