"""Engine kind -> engine class, found in hub/search/engines/: adding an engine is adding one module there.

Each engine class declares, beside its code, what names it in engines.json and what an entry of it
must carry (hub/config/engine_kinds.py's EngineKind: a key, a baseURL, whose index, member engines):

    class SerperEngine(ApiEngine):
        TYPE = "serper"                     # an API engine: webSearch.engines[].type
        KIND = EngineKind(index="google")

    class GeminiEngine(ModelEngine):
        PROVIDER_TYPE = "gemini"            # a search-capable model: the provider type of a providerKey
        KIND = EngineKind(index="google")

Two tables, because a name can be both: `perplexity` is the Search API as an engine `type`
(perplexity.py) and the Sonar chat models as a provider type (sonar.py); `ollama` is the hosted
search API and a local chat server. ENGINE_KINDS is what the config loader checks entries against:
hub/config/ imports nothing above it, so the callers of its `load`/`parse` pass it in. Modules whose
name starts with "_" are helpers and declare nothing."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from ..config.engine_kinds import EngineKind, EngineKinds
from ..config.settings import Config, EngineConfig
from ..core.plugins import plugin_modules
from . import engines as engines_package
from .engine import Engine, EngineContext
from .model import ModelEngine


@dataclass(frozen=True, slots=True)
class Catalog:
    """The engine classes of one package, by the name engines.json gives them."""

    api: dict[str, type[Engine]]  # an API engine's `type`
    model: dict[str, type[ModelEngine]]  # the provider type of a search-capable model
    modules: dict[str, tuple[type[Engine], ...]]  # module name -> the engines it declares

    @property
    def kinds(self) -> EngineKinds:
        return EngineKinds(api={name: _kind(cls) for name, cls in self.api.items()},
                           model={name: _kind(cls) for name, cls in self.model.items()})


def _kind(cls: type[Engine]) -> EngineKind:
    return vars(cls)["KIND"]


def _declared(module: ModuleType) -> list[type[Engine]]:
    """The engine classes a module defines and names (not the ones it imports, nor bases it subclasses)."""
    return [obj for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, Engine) and obj.__module__ == module.__name__
            and ("TYPE" in vars(obj) or "PROVIDER_TYPE" in vars(obj))]


def discover(package: ModuleType) -> Catalog:
    """Import every module of `package` and collect the engines they declare. A module that declares
    none, a name declared twice, or a declaration that does not fit its class is a bug: ValueError."""
    api: dict[str, type[Engine]] = {}
    model: dict[str, type[ModelEngine]] = {}
    modules: dict[str, tuple[type[Engine], ...]] = {}
    for name, where, module in plugin_modules(package):
        found = _declared(module)
        if not found:
            raise ValueError(f"{where} declares no engine: give its class a TYPE or PROVIDER_TYPE and a KIND "
                             "(hub/search/registry.py), or start the module's name with '_'")
        for cls in found:
            if not isinstance(vars(cls).get("KIND"), EngineKind):
                raise ValueError(f"{where}.{cls.__name__}: KIND must be an EngineKind")
            if "TYPE" in vars(cls):
                if issubclass(cls, ModelEngine):
                    raise ValueError(f"{where}.{cls.__name__}: a model engine is named by PROVIDER_TYPE")
                _add(api, vars(cls)["TYPE"], cls, where)
            if "PROVIDER_TYPE" in vars(cls):
                if not issubclass(cls, ModelEngine):
                    raise ValueError(f"{where}.{cls.__name__}: PROVIDER_TYPE is for a ModelEngine")
                _add(model, vars(cls)["PROVIDER_TYPE"], cls, where)
        modules[name] = tuple(found)
    return Catalog(api, model, modules)


def _add(table: dict, name: object, cls: type[Engine], where: str) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}.{cls.__name__}: its engine name must be a non-empty string")
    if name in table:
        raise ValueError(f"{where}.{cls.__name__}: '{name}' is already {table[name].__module__}."
                         f"{table[name].__name__}")
    table[name] = cls


CATALOG = discover(engines_package)
API_ENGINES: dict[str, type[Engine]] = CATALOG.api
MODEL_ENGINES: dict[str, type[ModelEngine]] = CATALOG.model
MODEL_BACKENDS = MODEL_ENGINES  # the name the service passes to EngineContext
ENGINE_KINDS: EngineKinds = CATALOG.kinds  # what the config loader is given


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
    Engines of members (multi) are built last: they hold their members."""
    classes: dict[str, type[Engine]] = {}
    for e in config.web_search.engines:
        cls = engine_class(e, config)
        if cls is None:
            raise ValueError(f"webSearch engine {e.id}: no engine implements '{kind_of(e, config)}'")
        classes[e.id] = cls
    out: dict[str, Engine] = {}
    for e in sorted(config.web_search.engines, key=lambda e: _kind(classes[e.id]).members):
        cls = classes[e.id]
        out[e.id] = cls(e, ctx, members=out) if _kind(cls).members else cls(e, ctx)
    return {e.id: out[e.id] for e in config.web_search.engines}
