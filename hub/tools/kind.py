"""What a server tool module of hub/tools/kinds/ declares (`TOOL = ToolKind(...)`): its name, how it is
built from the parts of the runtime, and how clients offer it as a hosted tool in each protocol.
hub/tools/registry.py finds the declarations; hub/runtime.py passes the parts; the protocols ask the
registry which client tools are hosted tools (`offerings`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from ..access.budget import Budget
from ..config.settings import Config
from ..fetcher import Fetcher, UrlPolicy
from ..fetcher.reading import PageReader
from ..search.service import SearchService
from .base import Hosted, ServerTool

# the protocols whose clients may offer a hosted tool (ToolKind.offers)
MESSAGES = "messages"  # an Anthropic server tool: {"type": "web_fetch_20250910", ...}
RESPONSES = "responses"  # a Responses built-in tool: {"type": "web_search", ...}
OPENROUTER = "openrouter"  # an OpenRouter server tool on a chat request: {"type": "openrouter:web_search", "parameters": {...}}


@dataclass(frozen=True, slots=True)
class Parts:
    """What a tool may be built from: the config and the shared services, passed explicitly."""

    config: Config
    client: httpx.AsyncClient
    search: SearchService
    budget: Budget | None = None  # per-key search budgets and cost (hub/access/budget.py)
    fetch: tuple[Fetcher, UrlPolicy] | None = None  # the fetcher and the operator's URL policy (webFetch)
    reader: PageReader | None = None  # reads the top result pages of a search (webSearch.readPages)


@dataclass(frozen=True, slots=True)
class ToolKind:
    """One server tool kind: its name, and how one config's tool is built (None: not configured).

    `order` places its chat function among the tools offered to the model (lower first); ties go
    by name. `hosted` is how its calls show where a protocol has hosted tools (its call type's
    HOSTED; its `usage_key` is the Anthropic `usage.server_tool_use` counter the Messages encoders
    always show), `offers` how each protocol's clients offer it hosted. `settings` is the type of its
    own section of engines.json, `tools.<name>` (a msgspec Struct whose fields all have defaults): the
    config loader decodes it and names a wrong field, and the build reads it as
    `parts.config.tools[name]`."""

    name: str
    build: Callable[[Parts], ServerTool | None]
    order: int = 100
    hosted: Hosted | None = None
    offers: Mapping[str, Offering] = field(default_factory=dict)  # MESSAGES | RESPONSES | OPENROUTER -> how
    settings: type | None = None


@dataclass(slots=True)
class Reading:
    """What reading a client's offer may need besides the client's tool."""

    max_tool_calls: int | None = None  # Responses: the request's cap on built-in tool calls
    origins: dict = field(default_factory=dict)  # Messages: the history's tool calls, filled as it is translated
    uses_origins: bool = False  # set by a reader that keeps `origins` (web_fetch's url_sources)


@dataclass(frozen=True, slots=True)
class Offering:
    """How one protocol's clients offer the tool hosted: the client tool types that do (exact `names`,
    or every type starting with `prefix`, for versioned names like `web_fetch_20250910`) and `read`,
    the client's tool (as the protocol decoded it; OpenRouter's: its `parameters`) -> the tool's offer
    (what ToolRequest.hosted holds under the tool's name)."""

    read: Callable[[Any, Reading], Any]
    names: frozenset[str] = frozenset()
    prefix: str = ""

    def matches(self, kind: object) -> bool:
        return isinstance(kind, str) and (kind in self.names or bool(self.prefix) and kind.startswith(self.prefix))

