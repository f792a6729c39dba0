"""Engine kind -> engine class. Adding an engine is one module and one line here.

Two tables, because a name can be both: `perplexity` is the Search API as an engine `type` and the
Sonar chat models as a provider type; `ollama` is the hosted search API and a local chat server."""

from __future__ import annotations

from ..config.settings import Config, EngineConfig
from .engine import Engine, EngineContext
from .engines.anthropic import AnthropicEngine
from .engines.baidu import BaiduEngine
from .engines.bocha import BochaEngine
from .engines.brave import BraveEngine
from .engines.dashscope import DashscopeEngine
from .engines.ddgs import DdgsEngine
from .engines.exa import ExaEngine
from .engines.firecrawl import FirecrawlEngine
from .engines.gemini import GeminiEngine
from .engines.glm import GlmEngine
from .engines.jina import JinaEngine
from .engines.linkup import LinkupEngine
from .engines.moonshot import MoonshotEngine
from .engines.multi import MultiEngine
from .engines.ollama import OllamaEngine
from .engines.openai import OpenAIEngine
from .engines.perplexity import PerplexityEngine
from .engines.searxng import SearxngEngine
from .engines.serper import SerperEngine
from .engines.sonar import SonarEngine
from .engines.tavily import TavilyEngine
from .engines.zhipu import ZhipuEngine
from .model import ModelEngine

# An API engine's `type` in engines.json.
API_ENGINES: dict[str, type[Engine]] = {
    "ddgs": DdgsEngine,
    "serper": SerperEngine,
    "brave": BraveEngine,
    "exa": ExaEngine,
    "tavily": TavilyEngine,
    "searxng": SearxngEngine,
    "bocha": BochaEngine,
    "zhipu": ZhipuEngine,
    "baidu": BaiduEngine,
    "ollama": OllamaEngine,
    "jina": JinaEngine,
    "perplexity": PerplexityEngine,
    "firecrawl": FirecrawlEngine,
    "linkup": LinkupEngine,
    "multi": MultiEngine,
}

# The provider type of a search-capable model (an LLM engine's providerKey).
MODEL_ENGINES: dict[str, type[ModelEngine]] = {
    "glm": GlmEngine,
    "gemini": GeminiEngine,
    "dashscope": DashscopeEngine,
    "moonshot": MoonshotEngine,
    "perplexity": SonarEngine,
    "openai": OpenAIEngine,
    "anthropic": AnthropicEngine,
}
MODEL_BACKENDS = MODEL_ENGINES  # the name the service passes to EngineContext


def engine_class(engine: EngineConfig, config: Config) -> type[Engine] | None:
    if engine.provider_key:
        target = config.target(engine.provider_key)
        return MODEL_ENGINES.get(target.provider.type) if target else None
    return API_ENGINES.get(engine.type or "")


def kind_of(engine: EngineConfig, config: Config) -> str:
    if engine.type:
        return engine.type
    target = config.target(engine.provider_key or "")
    return target.provider.type if target else ""


def build_engines(config: Config, ctx: EngineContext) -> dict[str, Engine]:
    """One engine object per configured engine (config validation already vouched for the kinds).
    Multi engines are built last: they hold their members."""
    out: dict[str, Engine] = {}
    engines = sorted(config.web_search.engines, key=lambda e: e.type == "multi")
    for e in engines:
        cls = engine_class(e, config)
        if cls is None:
            raise ValueError(f"webSearch engine {e.id}: no engine implements '{kind_of(e, config)}'")
        out[e.id] = cls(e, ctx, members=out) if cls is MultiEngine else cls(e, ctx)
    return {e.id: out[e.id] for e in config.web_search.engines}
