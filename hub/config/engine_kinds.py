"""What each kind of search engine needs from engines.json, checked when the config loads.

The engine classes (hub/search/engines/) say how to search; this table says what an entry must carry,
so the loader needs nothing above hub/config/. tests/test_search_parser_properties.py keeps these
names, hub/search/registry.py and the schema's enums equal."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


def ddgs_backends(options: Mapping[str, Any]) -> list[str]:
    """The ddgs backends an entry's `options.backend` names ("auto" when it names none)."""
    value = options.get("backend", "auto")
    return [b.strip().lower() for b in value.split(",") if b.strip()] if isinstance(value, str) else ["auto"]


def _ddgs_index(options: Mapping[str, Any]) -> str | None:
    chosen = ddgs_backends(options)
    return "google" if chosen and all(b == "google" for b in chosen) else None


def _jina_index(options: Mapping[str, Any]) -> str | None:
    engine = options.get("provider") or options.get("engine")
    return engine if isinstance(engine, str) and engine in ("google", "bing") else None


@dataclass(frozen=True, slots=True)
class EngineKind:
    keyless: bool = False  # works without an apiKey
    needs_base_url: bool = False  # no public service: baseURL is required (self-hosted)
    index: str | None = None  # whose web index answers: "google" makes an engine Google-backed, "baidu", ...
    index_of: Callable[[Mapping[str, Any]], str | None] | None = None  # when the options choose the index

    def index_for(self, options: Mapping[str, Any]) -> str | None:
        return self.index_of(options) if self.index_of else self.index


# An API engine's `type` in engines.json.
API_ENGINE_KINDS: dict[str, EngineKind] = {
    "ddgs": EngineKind(keyless=True, index_of=_ddgs_index),
    "serper": EngineKind(index="google"),
    "brave": EngineKind(),
    "exa": EngineKind(),
    "tavily": EngineKind(),
    "searxng": EngineKind(keyless=True, needs_base_url=True),
    "bocha": EngineKind(),
    "zhipu": EngineKind(),
    "baidu": EngineKind(index="baidu"),
    "ollama": EngineKind(),
    "jina": EngineKind(index_of=_jina_index),
    "perplexity": EngineKind(),
    "firecrawl": EngineKind(),
    "linkup": EngineKind(),
    "multi": EngineKind(keyless=True),  # its members carry the keys
}

# The provider types whose models search themselves (an LLM engine's providerKey) -> the index they search.
MODEL_ENGINE_KINDS: dict[str, EngineKind] = {
    "glm": EngineKind(),
    "gemini": EngineKind(index="google"),
    "dashscope": EngineKind(),
    "moonshot": EngineKind(),
    "perplexity": EngineKind(),
    "openai": EngineKind(),
    "anthropic": EngineKind(),
}
