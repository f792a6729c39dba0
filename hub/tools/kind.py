"""What a server tool module of hub/tools/kinds/ declares (`TOOL = ToolKind(...)`), and the parts of the
runtime it may be built from. hub/tools/registry.py finds the declarations; hub/runtime.py passes the
parts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import httpx

from ..access.budget import Budget
from ..config.settings import Config
from ..fetcher import Fetcher, UrlPolicy
from ..fetcher.reading import PageReader
from ..search.service import SearchService
from .base import ServerTool


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
    by name."""

    name: str
    build: Callable[[Parts], ServerTool | None]
    order: int = 100
