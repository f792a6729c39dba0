"""Engine kind -> engine class. Adding an engine is one module and one line here."""

from __future__ import annotations

from ..config import Config, EngineConfig
from .brave import BraveEngine
from .engine import Engine, EngineContext
from .exa import ExaEngine
from .gemini import GeminiEngine
from .glm import GlmEngine
from .model import ModelEngine
from .searxng import SearxngEngine
from .serper import SerperEngine
from .tavily import TavilyEngine

# An API engine's `type`, or the provider type of an LLM engine's providerKey.
ENGINES: dict[str, type[Engine]] = {
    "serper": SerperEngine,
    "brave": BraveEngine,
    "exa": ExaEngine,
    "tavily": TavilyEngine,
    "searxng": SearxngEngine,
    "glm": GlmEngine,
    "gemini": GeminiEngine,
}

MODEL_BACKENDS: dict[str, type[ModelEngine]] = {
    kind: cls for kind, cls in ENGINES.items() if issubclass(cls, ModelEngine)
}


def kind_of(engine: EngineConfig, config: Config) -> str:
    if engine.type:
        return engine.type
    target = config.target(engine.provider_key or "")
    return target.provider.type if target else ""


def build_engines(config: Config, ctx: EngineContext) -> dict[str, Engine]:
    """One engine object per configured engine (config validation already vouched for the kinds)."""
    out: dict[str, Engine] = {}
    for e in config.web_search.engines:
        cls = ENGINES.get(kind_of(e, config))
        if cls is None:
            raise ValueError(f"webSearch engine {e.id}: no engine implements '{kind_of(e, config)}'")
        out[e.id] = cls(e, ctx)
    return out
