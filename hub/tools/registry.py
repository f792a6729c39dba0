"""The server tools of a config: one line per tool kind. Adding a tool is one module in this package
and one entry in TOOLS."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx

from ..access.budget import Budget
from ..config.settings import Config
from ..fetcher import Fetcher, UrlPolicy
from ..fetcher.reading import PageReader
from ..search.service import SearchService
from .base import ServerTool
from .web_fetch import WebFetch
from .web_search import WebSearch


@dataclass(frozen=True, slots=True)
class Parts:
    """What a tool may be built from: the config and the shared services."""

    config: Config
    client: httpx.AsyncClient
    search: SearchService
    budget: Budget | None = None  # per-key search budgets and cost (hub/access/budget.py)
    fetch: tuple[Fetcher, UrlPolicy] | None = None  # the fetcher and the operator's URL policy (webFetch)
    reader: PageReader | None = None  # reads the top result pages of a search (webSearch.readPages)


# kind -> how to build it (None: not configured)
TOOLS: dict[str, Callable[[Parts], ServerTool | None]] = {
    "web_search": lambda parts: WebSearch(parts.config.web_search, parts.search, parts.budget, parts.reader),
    "web_fetch": lambda parts: (WebFetch(parts.config.web_fetch, *parts.fetch, parts.budget)
                                if parts.fetch and parts.config.web_fetch.enabled else None),
}


class ServerTools:
    """The tools the gateway runs itself, by chat function name and by Anthropic hosted name."""

    def __init__(self, tools: list[ServerTool]) -> None:
        self._by_name = {t.name: t for t in tools}
        self._by_hosted = {t.call_type.HOSTED.anthropic_name: t for t in tools}
        self.search: WebSearch | None = next((t for t in tools if isinstance(t, WebSearch)), None)
        # Anthropic server tool name -> (chat function name, replay), for the Messages translator
        self.replays = {hosted: (t.name, t.replay) for hosted, t in self._by_hosted.items()}

    def __iter__(self) -> Iterator[ServerTool]:
        return iter(self._by_name.values())

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def get(self, name: str | None) -> ServerTool | None:
        return self._by_name.get(name) if name else None

    def hosted(self, anthropic_name: object) -> ServerTool | None:
        """The tool a replayed Anthropic `server_tool_use` block names."""
        return self._by_hosted.get(anthropic_name) if isinstance(anthropic_name, str) else None

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._by_name)


def build(parts: Parts) -> ServerTools:
    return ServerTools([t for make in TOOLS.values() if (t := make(parts)) is not None])
