"""Server tool name -> its declaration, found in hub/tools/kinds/: adding a tool is adding one module
there.

Each module declares its name and how one config's tool is built from the runtime's parts
(hub/tools/kind.py's ToolKind and Parts):

    TOOL = ToolKind("web_fetch", build=_build, order=10)   # _build(parts) -> WebFetch | None

hub/runtime.py builds a config's tools from TOOLS (`build`). The protocols ask which client tools are
hosted tools (`offerings`, `read_offers`: a tool's `offers`, by protocol) and which usage counters
the Messages encoders show (`usage_counters`). Modules whose name starts with "_" are helpers and
declare nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import msgspec

from ..core.plugins import declarations
from . import kinds as kinds_package
from .base import ServerTool
from .kind import Offering, Parts, Reading, ToolKind
from .kinds.web_search import WebSearch


@dataclass(frozen=True, slots=True)
class Catalog:
    """The server tool kinds of one package."""

    tools: dict[str, ToolKind]  # by name, in the order they are offered (ToolKind.order, then name)
    modules: dict[str, ToolKind]  # module name -> the kind it declares


def discover(package: ModuleType) -> Catalog:
    """Import every module of `package` and collect the kind each declares as TOOL. A module that
    declares none or a name declared twice is a bug: ValueError."""
    modules = declarations(package, "TOOL", ToolKind, "server tool", "hub/tools/registry.py")
    for module, kind in modules.items():
        if not callable(kind.build):
            raise ValueError(f"{package.__name__}.{module}.TOOL: build must be a callable taking the runtime's Parts")
        if kind.settings is not None:
            try:
                msgspec.convert({}, kind.settings)
            except (msgspec.ValidationError, TypeError) as e:
                raise ValueError(f"{package.__name__}.{module}.TOOL: settings must be a msgspec Struct whose "
                                 f"fields all have defaults ({e})") from None
    ordered = sorted(modules.values(), key=lambda k: (k.order, k.name))
    return Catalog({k.name: k for k in ordered}, modules)


CATALOG = discover(kinds_package)
TOOLS: dict[str, ToolKind] = CATALOG.tools  # what hub/runtime.py builds a config's tools from


def settings_types(tools: Mapping[str, ToolKind]) -> dict[str, type]:
    """Tool name -> its settings type, for the config loader's `tools` section (hub/config/plugins.py)."""
    return {name: kind.settings for name, kind in tools.items() if kind.settings is not None}


def offerings(protocol: str, client_type: object) -> list[tuple[str, Offering]]:
    """The tools a client tool of `protocol` offers hosted, by their names: none for an ordinary tool.
    Read from TOOLS when asked (a test may give it more tools)."""
    return [(kind.name, offer) for kind in TOOLS.values()
            if (offer := kind.offers.get(protocol)) is not None and offer.matches(client_type)]


def read_offers(protocol: str, client_tools: list[Any], reading: Reading | None = None, *,
                kind_of: Callable[[Any], object] = lambda tool: tool.type,
                params: Callable[[Any], Any] = lambda tool: tool) -> dict[str, Any]:
    """The client's offers of hosted tools, by tool name, from the client tools of `protocol`:
    `kind_of(tool)` is a tool's type, `params(tool)` what the offer's reader is given. A later tool
    offering the same tool replaces the earlier one's offer."""
    reading = reading if reading is not None else Reading()
    offers: dict[str, Any] = {}
    for tool in client_tools:
        for name, offer in offerings(protocol, kind_of(tool)):
            offers[name] = offer.read(params(tool), reading)
    return offers


def usage_counters() -> tuple[str, ...]:
    """The Anthropic `usage.server_tool_use` counters, one per hosted shape, in the tools' order."""
    return tuple(dict.fromkeys(kind.hosted.usage_key for kind in TOOLS.values() if kind.hosted is not None))


class ServerTools:
    """The tools the gateway runs itself, by chat function name and by Anthropic hosted name."""

    def __init__(self, tools: list[ServerTool]) -> None:
        self._by_name = {t.name: t for t in tools}
        self._by_hosted = {t.call_type.HOSTED.anthropic_name: t for t in tools}
        # the search tool, for the Messages search execution (hub/tools/search_execution.py)
        self.search: WebSearch | None = next((t for t in tools if isinstance(t, WebSearch)), None)
        # Anthropic server tool name -> (chat function name, replay), for the Messages translator
        self.replays = {hosted: (t.name, t.replay) for hosted, t in self._by_hosted.items()}

    def __iter__(self) -> Iterator[ServerTool]:
        return iter(self._by_name.values())

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def get(self, name: str | None) -> ServerTool | None:
        return self._by_name.get(name) if name else None

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._by_name)


def build(parts: Parts, kinds: Mapping[str, ToolKind] | None = None) -> ServerTools:
    """One config's tools: each kind of `kinds` (TOOLS unless given) that its config enables."""
    table = TOOLS if kinds is None else kinds
    return ServerTools([t for kind in table.values() if (t := kind.build(parts)) is not None])
