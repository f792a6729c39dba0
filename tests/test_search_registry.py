"""A search engine is one module of hub/search/engines/: the registry finds it there, and the config
loader knows engines only from the EngineKinds it is given (hub/search/registry.py, in hub/runtime.py's
PLUGINS)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hub.config import ConfigError, EngineKind, EngineKinds, Plugins, parse
from hub.runtime import PLUGINS
from hub.search.registry import API_ENGINES, CATALOG, ENGINE_KINDS, MODEL_ENGINES, discover

from .fakes.search_providers import config_with
from .helpers import ROOT, throwaway_package

ENGINES_DIR = ROOT / "hub" / "search" / "engines"


def _package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, modules: dict[str, str]):
    return throwaway_package(tmp_path, monkeypatch, modules, "engines")


ECHO = """
    from hub.config.engine_kinds import EngineKind
    from hub.search.base import Parsed, RawHit
    from hub.search.engine import ApiEngine
    from hub.search.fetch import Outgoing

    from ._shared import BASE


    class EchoEngine(ApiEngine):
        TYPE = "echo"
        KIND = EngineKind(keyless=True, index="google")
        DEFAULT_BASE_URL = BASE

        def request(self, req):
            return Outgoing("GET", self.base_url + "/search", params={"q": req.query})

        @staticmethod
        def parse(data):
            return Parsed([RawHit("t", "https://a.example/", "s")])
"""


def _cfg(engines: list[dict]) -> str:
    return json.dumps(config_with(engines))


# ---------------------------------------------------------------- the repository's engines


def test_every_engine_module_declares_its_engines():
    """Each module of hub/search/engines/ (read from the folder, not from the registry) is found and
    gives the tables at least one engine, and the kinds the config gets are those classes' KINDs."""
    on_disk = {p.stem for p in ENGINES_DIR.glob("*.py") if not p.stem.startswith("_")}
    assert on_disk and set(CATALOG.modules) == on_disk
    for module, classes in CATALOG.modules.items():
        assert classes, module
        for cls in classes:
            assert cls.__module__ == f"hub.search.engines.{module}"
            assert cls in API_ENGINES.values() or cls in MODEL_ENGINES.values()
    for table, kinds in ((API_ENGINES, ENGINE_KINDS.api), (MODEL_ENGINES, ENGINE_KINDS.model)):
        assert kinds.keys() == table.keys()
        assert all(kinds[name] is vars(cls)["KIND"] for name, cls in table.items())


def test_a_name_can_be_an_api_engine_and_a_model_engine():
    from hub.search.engines.perplexity import PerplexityEngine
    from hub.search.engines.sonar import SonarEngine

    assert API_ENGINES["perplexity"] is PerplexityEngine and MODEL_ENGINES["perplexity"] is SonarEngine
    assert "ollama" in API_ENGINES and ENGINE_KINDS.api["multi"].members


# ---------------------------------------------------------------- a new engine: one module, nothing else


def test_a_new_engine_module_is_found_and_its_config_accepted(tmp_path, monkeypatch):
    """A package with one new engine module (and a helper module) is discovered, and a config naming
    it loads with the kinds discovered from it, while the repository's kinds do not know it."""
    package = _package(tmp_path, monkeypatch, {"echo": ECHO, "_shared": 'BASE = "http://127.0.0.1:9"\n'})
    catalog = discover(package)
    assert list(catalog.api) == ["echo"] and catalog.model == {} and list(catalog.modules) == ["echo"]

    text = _cfg([{"id": "mine", "type": "echo"}])  # keyless, as its KIND says: no apiKey needed
    engine = parse(text, env={}, plugins=Plugins(catalog.kinds, PLUGINS.families)).web_search.engines[0]
    assert engine.type == "echo" and engine.google  # the KIND's index made it Google-backed
    with pytest.raises(ConfigError) as e:
        parse(text, env={}, plugins=PLUGINS)
    assert e.value.errors == [f"webSearch.engines[0].type: unknown engine type 'echo' "
                              f"(known: {', '.join(sorted(API_ENGINES))})"]


def test_a_module_that_declares_no_engine_is_a_bug(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, {"empty": "X = 1\n"})
    with pytest.raises(ValueError, match=r"\.empty declares no engine"):
        discover(package)


def test_two_modules_claiming_one_name_is_a_bug(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, {
        "_shared": 'BASE = "http://127.0.0.1:9"\n', "echo": ECHO,
        "echo2": ECHO.replace("class EchoEngine", "class OtherEngine"),
    })
    with pytest.raises(ValueError, match=r"OtherEngine: 'echo' is already .*\.echo\.EchoEngine"):
        discover(package)


def test_a_model_engine_is_named_by_its_provider_type(tmp_path, monkeypatch):
    wrong = """
        from hub.config.engine_kinds import EngineKind
        from hub.search.model import ModelEngine


        class WrongEngine(ModelEngine):
            TYPE = "wrong"
            KIND = EngineKind()
    """
    with pytest.raises(ValueError, match="named by PROVIDER_TYPE"):
        discover(_package(tmp_path, monkeypatch, {"wrong": wrong}))


# ---------------------------------------------------------------- the loader has no list of its own


def test_without_kinds_the_loader_knows_no_engine():
    with pytest.raises(ConfigError) as e:
        parse(_cfg([{"id": "web", "type": "ddgs"}]), env={}, plugins=Plugins(EngineKinds(), PLUGINS.families))
    assert e.value.errors == ["webSearch.engines[0].type: unknown engine type 'ddgs' (known: none)"]
    model = config_with([{"id": "g", "providerKey": "gem.gemini-2.5-flash"}], search_targets=[["gem.gemini-2.5-flash"]],
                        providers={"gem": {"type": "gemini", "baseURL": "http://127.0.0.1:9", "apiKey": "k"}})
    with pytest.raises(ConfigError, match=r"needs a provider of a search-capable type \(none\), got 'gemini'"):
        parse(json.dumps(model), env={}, plugins=Plugins(EngineKinds(api=ENGINE_KINDS.api), PLUGINS.families))
    assert parse(json.dumps(model), env={}, plugins=PLUGINS).web_search.engines[0].google


def test_what_an_entry_needs_comes_from_its_injected_kind():
    kinds = EngineKinds(api={"hosted": EngineKind(), "own": EngineKind(keyless=True, needs_base_url=True),
                             "fanout": EngineKind(keyless=True, members=True)})
    with pytest.raises(ConfigError) as e:
        parse(_cfg([{"id": "a", "type": "hosted"}, {"id": "b", "type": "own"},
                    {"id": "c", "type": "fanout", "engines": ["a", "nope"]},
                    {"id": "d", "type": "own", "baseURL": "http://127.0.0.1:9", "engines": ["a"]}]),
              env={}, plugins=Plugins(kinds, PLUGINS.families))
    assert e.value.errors == [
        "webSearch.engines[0].apiKey: engine 'a' of type hosted needs an apiKey",
        "webSearch.engines[1].baseURL: a own engine needs the URL of its instance",
        "webSearch.engines[3].engines: only a multi engine has member engines",
        "webSearch.engines[2].engines: unknown engine 'nope' (known: a, b, c, d)",
    ]


def test_an_unknown_type_from_the_environment_is_named_by_its_variable():
    """The value could be anything (a key pasted into the wrong variable): the error names the variable."""
    with pytest.raises(ConfigError) as e:
        parse(_cfg([{"id": "web", "type": "${ENGINE}"}, {"id": "x", "type": "nope"}]),
              env={"ENGINE": "sk-not-shown"}, plugins=PLUGINS)
    first, second = e.value.errors
    assert first.startswith("webSearch.engines[0].type: unknown engine type from ${ENGINE} (known: baidu, ")
    assert second.startswith("webSearch.engines[1].type: unknown engine type 'nope' (known: baidu, ")
    assert "sk-not-shown" not in str(e.value)
