"""What an engines.json entry of a search engine must carry, checked when the config loads.

The types only: each engine module of hub/search/engines/ declares its own EngineKind beside its
class, and hub/search/registry.py collects them into an EngineKinds that the callers of the loader
(hub/runtime.py, hub/cli/main.py, routes/serve.py) pass in. So hub/config/ imports nothing above it
and holds no list of engines: a new engine is one module in hub/search/engines/."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class EngineKind:
    keyless: bool = False  # works without an apiKey
    needs_base_url: bool = False  # no public service: baseURL is required (self-hosted)
    index: str | None = None  # whose web index answers: "google" makes an engine Google-backed, "baidu", ...
    index_of: Callable[[Mapping[str, Any]], str | None] | None = None  # when the options choose the index
    members: bool = False  # a fan-out over other engines: its entry lists their ids in `engines` (multi)

    def index_for(self, options: Mapping[str, Any]) -> str | None:
        return self.index_of(options) if self.index_of else self.index


@dataclass(frozen=True, slots=True)
class EngineKinds:
    """The engines a build holds, by the name engines.json gives them."""

    api: Mapping[str, EngineKind] = field(default_factory=dict)  # an API engine's `type`
    model: Mapping[str, EngineKind] = field(default_factory=dict)  # a search-capable model's provider type
