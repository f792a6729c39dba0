"""engines.json loading: schema errors with paths, env expansion, target parsing, secrets masked."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub import config as cfgmod
from hub.runtime import PLUGINS


def _with_model_engine(name: str, provider: dict, engines: list[dict]) -> dict:
    """A config with a second provider `name` (a search model) beside 'local', and these engines."""
    return _cfg(providers={"local": {"type": "vllm", "baseURL": "http://x/v1"}, name: provider},
                webSearch={"engines": engines})


def _cfg(**over) -> dict:
    cfg = {
        "providers": {"local": {"type": "vllm", "baseURL": "http://127.0.0.1:9/v1"}},
        "virtualrouter": {"routing": {"default": [{"id": "p", "targets": ["local.m"]}]}},
    }
    cfg.update(over)
    return cfg


def test_repository_engines_json_is_valid() -> None:
    cfg = cfgmod.load("engines.json", plugins=PLUGINS)
    assert cfg.router.routes["default"][0].targets[0].provider.type == "ollama"
    assert cfg.web_search.engines and cfg.web_search.default_engine is not None


def test_target_splits_at_first_dot() -> None:
    cfg = cfgmod.build(_cfg(virtualrouter={"routing": {"default": [{"targets": ["local.qwen2.5:7b/instruct.q4"]}]}}),
                       env={}, plugins=PLUGINS)
    t = cfg.router.routes["default"][0].targets[0]
    assert (t.provider.id, t.model) == ("local", "qwen2.5:7b/instruct.q4")


def test_unknown_provider_in_target_names_path() -> None:
    with pytest.raises(cfgmod.ConfigError) as e:
        cfgmod.build(_cfg(virtualrouter={"routing": {"default": [{"targets": ["local.m", "nope.m"]}]}}), env={},
                     plugins=PLUGINS)
    assert any(err.startswith("virtualrouter.routing.default[0].targets[1]: unknown provider 'nope'")
               for err in e.value.errors)


def test_engine_provider_key_must_be_in_web_search_route() -> None:
    raw = _with_model_engine("glm", {"type": "glm", "baseURL": "http://g"}, [
        {"id": "a", "type": "searxng", "baseURL": "http://s"},
        {"id": "b", "type": "searxng", "baseURL": "http://s"},
        {"id": "glm", "providerKey": "glm.glm-4.7"},
    ])
    with pytest.raises(cfgmod.ConfigError) as e:
        cfgmod.build(raw, env={}, plugins=PLUGINS)
    assert any(err.startswith("webSearch.engines[2].providerKey:") and "'glm'" in err for err in e.value.errors)
    raw["virtualrouter"]["routing"]["web_search"] = [{"targets": ["glm.glm-4.7"]}]
    cfg = cfgmod.build(raw, env={}, plugins=PLUGINS)
    assert [e.id for e in cfg.web_search.engines] == ["a", "b", "glm"]


def test_google_defaults() -> None:
    raw = _with_model_engine("gem", {"type": "gemini", "baseURL": "http://g"}, [
        {"id": "serper", "type": "serper", "apiKey": "k"},
        {"id": "brave", "type": "brave", "apiKey": "k"},
        {"id": "my-google-proxy", "type": "searxng", "baseURL": "http://s"},
        {"id": "gem", "providerKey": "gem.gemini-2.5-flash"},
        {"id": "serper2", "type": "serper", "apiKey": "k", "google": False},
    ])
    raw["virtualrouter"]["routing"]["web_search"] = [{"targets": ["gem.gemini-2.5-flash"]}]
    cfg = cfgmod.build(raw, env={}, plugins=PLUGINS)
    assert {e.id: e.google for e in cfg.web_search.engines} == {
        "serper": True, "brave": False, "my-google-proxy": True, "gem": True, "serper2": False}


def test_schema_errors_have_paths_and_hide_values() -> None:
    raw = _cfg(webSearch={"engines": [{"id": "x", "type": "serper", "apiKey": "sk-SECRET"}], "maxToolIterations": 99})
    raw["providers"]["local"]["type"] = "${LOCAL_TYPE}"
    with pytest.raises(cfgmod.ConfigError) as e:
        cfgmod.build(raw, env={"LOCAL_TYPE": "sk-SECRET-TYPE"}, plugins=PLUGINS)
    text = str(e.value)
    assert "providers.local.type: unknown provider type from ${LOCAL_TYPE} (known: anthropic, " in text
    assert "webSearch.maxToolIterations: must be <= 20" in text
    assert "SECRET" not in text


def test_missing_env_var_names_variable_and_path() -> None:
    raw = _cfg(webSearch={"engines": [{"id": "s", "type": "serper", "apiKey": "${SERPER_KEY}"}]})
    with pytest.raises(cfgmod.ConfigError) as e:
        cfgmod.build(raw, env={}, plugins=PLUGINS)
    assert "webSearch.engines[0].apiKey: environment variable SERPER_KEY is not set" in e.value.errors


def test_env_default_and_value() -> None:
    raw = _cfg(providers={"local": {"type": "vllm", "baseURL": "${URL:-http://d/v1}", "apiKey": "${K}"}})
    cfg = cfgmod.build(raw, env={"K": "secret-value-123"}, plugins=PLUGINS)
    assert cfg.providers["local"].base_url == "http://d/v1"
    assert cfg.providers["local"].api_key == "secret-value-123"
    table = json.dumps(cfg.routing_table())
    assert "secret-value-123" not in table
    assert "secret-value-123" not in repr(cfg)


@given(name=st.from_regex(r"[A-Z_][A-Z0-9_]{0,12}", fullmatch=True),
       value=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30),
       prefix=st.text(alphabet="abc/:.", max_size=5), suffix=st.text(alphabet="abc/:.", max_size=5))
def test_env_expansion_property(name: str, value: str, prefix: str, suffix: str) -> None:
    errors: list[str] = []
    out = cfgmod.expand_env({"a": [f"{prefix}${{{name}}}{suffix}"]}, {name: value}, (), errors)
    assert out == {"a": [prefix + value + suffix]} and not errors
    errors = []
    out = cfgmod.expand_env({"a": f"${{{name}:-{suffix}}}"}, {}, (), errors)
    assert out == {"a": suffix} and not errors
    cfgmod.expand_env({"a": {"b": [f"${{{name}}}"]}}, {}, (), errors)
    assert errors == [f"a.b[0]: environment variable {name} is not set"]


@given(provider=st.from_regex(r"[A-Za-z0-9_-]{1,10}", fullmatch=True),
       model=st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30))
def test_target_parsing_property(provider: str, model: str) -> None:
    raw = {"providers": {provider: {"type": "vllm", "baseURL": "http://x"}},
           "virtualrouter": {"routing": {"default": [{"targets": [f"{provider}.{model}"]}]}}}
    cfg = cfgmod.build(raw, env={}, plugins=PLUGINS)
    t = cfg.router.routes["default"][0].targets[0]
    assert (t.provider.id, t.model, t.key) == (provider, model, f"{provider}.{model}")
    assert cfg.target(f"{provider}.{model}") == t


def test_cli_check_ok_and_error(tmp_path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_cfg(providers={"local": {"type": "vllm", "baseURL": "http://x/v1",
                                                            "apiKey": "sk-verysecretkey-0001"}})))
    r = subprocess.run([sys.executable, "-m", "hub", "check", "--config", str(good)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert '"default"' in r.stdout and "local.m" in r.stdout
    assert "sk-verysecretkey-0001" not in r.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_cfg(webSearch={"engines": [{"id": "a", "type": "searxng", "baseURL": "http://s"},
                                                          {"id": "b", "type": "searxng", "baseURL": "http://s"},
                                                          {"id": "c", "providerKey": "x.y"}]})))
    r = subprocess.run([sys.executable, "-m", "hub", "check", "--config", str(bad)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "webSearch.engines[2].providerKey:" in r.stderr
    r = subprocess.run([sys.executable, "-m", "hub", "check", "--config", str(tmp_path / "missing.json")],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "cannot read" in r.stderr


def test_api_keys_plain_and_named_with_limits() -> None:
    cfg = cfgmod.build(_cfg(server={"apiKeys": [
        "sk-plain-1", {"key": "sk-team-2", "name": "team", "searchesPerDay": 2, "searchesPerMinute": 1,
                       "fetchesPerDay": 5, "maxCostPerDay": 1.5}]}), env={}, plugins=PLUGINS)
    plain, team = cfg.server.api_keys
    assert (plain.key, plain.name, plain.limited) == ("sk-plain-1", "apiKeys[0]", False)
    assert (team.name, team.searches_per_day, team.searches_per_minute, team.fetches_per_day,
            team.max_cost_per_day) == ("team", 2, 1, 5, 1.5)
    assert team.limited and "sk-team-2" not in repr(cfg.server)


@pytest.mark.parametrize(("entry", "error"), [
    ({"key": "sk-SECRET-1"}, "server.apiKeys[0]: 'name' is a required property"),
    ({"key": "sk-SECRET-1", "name": "n", "searchesPerDay": -1}, "server.apiKeys[0]: searchesPerDay: must be >= 0"),
    ({"key": "sk-SECRET-1", "name": "n", "perDay": 1}, "server.apiKeys[0]: Additional properties are not allowed"),
    ({"key": "sk-SECRET-1", "name": "has space"}, "server.apiKeys[0]: name: does not match the pattern"),
    ("", "server.apiKeys[0]: must be a non-empty string or an object {key, name, ...}"),
])
def test_bad_api_key_entries_name_the_path_not_the_key(entry, error) -> None:
    with pytest.raises(cfgmod.ConfigError) as e:
        cfgmod.build(_cfg(server={"apiKeys": [entry]}), env={}, plugins=PLUGINS)
    assert any(err.startswith(error) for err in e.value.errors), e.value.errors
    assert "SECRET" not in str(e.value)


def test_api_key_names_are_unique() -> None:
    with pytest.raises(cfgmod.ConfigError) as e:
        cfgmod.build(_cfg(server={"apiKeys": [{"key": "a1", "name": "x"}, {"key": "b2", "name": "x"}]}), env={},
                     plugins=PLUGINS)
    assert e.value.errors == ["server.apiKeys: the name 'x' is used by more than one key"]


def test_engine_prices() -> None:
    searx = {"id": "s", "type": "searxng", "baseURL": "http://127.0.0.1:9", "costPerCall": 0.002}
    cfg = cfgmod.build(_cfg(webSearch={"engines": [searx]}), env={}, plugins=PLUGINS)
    assert cfg.web_search.engines[0].cost_per_call == 0.002
    with pytest.raises(cfgmod.ConfigError) as e:
        cfgmod.build(_cfg(webSearch={"engines": [{**searx, "costPerMillionInputTokens": 1}]}), env={},
                     plugins=PLUGINS)
    assert e.value.errors == ["webSearch.engines[0].costPerMillionInputTokens: only model engines (providerKey) "
                              "report tokens; use costPerCall"]


def test_defaults_come_from_the_schema_once() -> None:
    schema, with_defaults, parse = cfgmod.schema, cfgmod.with_defaults, cfgmod.parse
    ws_schema = schema()["$defs"]["webSearch"]["properties"]
    cfg = parse(json.dumps({
        "providers": {"local": {"type": "vllm", "baseURL": "http://127.0.0.1:9/v1"}},
        "virtualrouter": {"routing": {"default": [{"targets": ["local.m"]}]}},
        "webSearch": {"maxToolIterations": 3, "perBackend": {"local": {"maxConsecutiveErrors": 7}}},
    }), env={}, plugins=PLUGINS)
    assert cfg.server.port == schema()["properties"]["server"]["properties"]["port"]["default"]
    assert cfg.web_search.keepalive_s * 1000 == ws_schema["keepaliveMs"]["default"]
    assert cfg.router.routes["default"][0].priority == schema()["$defs"]["pool"]["properties"]["priority"]["default"]
    state_props = schema()["properties"]["state"]["properties"]
    assert cfg.state == {k: v["default"] for k, v in state_props.items() if "default" in v}
    assert cfg.state["backend"] == "memory" and cfg.state["keyPrefix"] == "searchhub:"
    local = cfg.web_search.limits_for("local")  # an override inherits what it leaves out
    assert (local.max_consecutive_errors, local.max_tool_iterations) == (7, 3)
    assert with_defaults({"server": {"port": 1}})["server"]["port"] == 1  # a value given wins
