"""A server tool is one module of hub/tools/kinds/: the registry finds its declaration there (TOOL, a
hub/tools/kind.py ToolKind), and hub/runtime.py builds a config's tools from what the registry found,
naming none of them."""

from __future__ import annotations

import importlib
from pathlib import Path

import httpx
import pytest

from hub.tools import registry
from hub.tools.registry import CATALOG, TOOLS, discover

from .helpers import ROOT, base_config, searxng_engine, throwaway_package

KINDS_DIR = ROOT / "hub" / "tools" / "kinds"

# A new tool, as its module would be written in hub/tools/kinds/: the toy clock's classes
# (tests/toy/clock.py), built from the runtime's parts, with a helper module beside it.
CLOCK = """
    from hub.tools.kind import Parts, ToolKind
    from tests.toy.clock import Clock

    from ._names import NAME


    def _build(parts: Parts) -> Clock | None:
        # built only where the config has search engines: a build reads what it needs from the parts
        return Clock(NAME) if parts.config.web_search.engines else None


    TOOL = ToolKind(NAME, build=_build)
"""


# A new tool with a hosted form of its own: Anthropic clients offer it as a `clock_*` server tool, its
# calls show as `clock` blocks and count in `usage.server_tool_use.clock_requests`.
HOSTED_CLOCK = """
    from dataclasses import dataclass
    from typing import ClassVar

    from hub.tools.base import Hosted, ToolRequest
    from hub.tools.kind import MESSAGES, Offering, Parts, Reading, ToolKind
    from tests.toy.clock import Clock, ClockCall

    HOSTED = Hosted(action="open_page", anthropic_name="clock", anthropic_result="clock_tool_result",
                    usage_key="clock_requests")


    @dataclass(slots=True)
    class HostedClockCall(ClockCall):
        HOSTED: ClassVar[Hosted] = HOSTED


    class HostedClock(Clock):
        call_type = HostedClockCall

        def offered(self, request: ToolRequest) -> bool:
            return "clock" in request.hosted or not request.client_hosted

        def max_uses(self, request: ToolRequest) -> int | None:
            offer = request.hosted.get("clock")
            return offer["max_uses"] if offer is not None else None

        def call(self, call_id, raw_arguments, request):
            return HostedClockCall(call_id, super().call(call_id, raw_arguments, request).city)


    def _read(tool, reading: Reading) -> dict:
        # the client's tool as the Messages protocol decoded it: the fields every server tool may carry
        return {"max_uses": tool.max_uses, "type": tool.type}


    def _build(parts: Parts) -> HostedClock:
        return HostedClock()


    TOOL = ToolKind("clock", build=_build, hosted=HOSTED, offers={MESSAGES: Offering(_read, prefix="clock_")})
"""


def _package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, modules: dict[str, str]):
    return throwaway_package(tmp_path, monkeypatch, modules, "tools")


def _new_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    return discover(_package(tmp_path, monkeypatch, {"clock": CLOCK, "_names": 'NAME = "clock"\n'}))


# ---------------------------------------------------------------- the repository's tools


def test_every_tool_module_declares_its_tool():
    """Each module of hub/tools/kinds/ (read from the folder, not from the registry) gives the table
    one tool; web_search is offered before web_fetch, as it always was."""
    on_disk = {p.stem for p in KINDS_DIR.glob("*.py") if not p.stem.startswith("_")}
    assert on_disk and set(CATALOG.modules) == on_disk
    assert set(TOOLS) == {kind.name for kind in CATALOG.modules.values()}
    for module, kind in CATALOG.modules.items():
        assert importlib.import_module(f"hub.tools.kinds.{module}").TOOL is kind
    assert list(TOOLS) == ["web_search", "web_fetch"]


def test_the_runtime_names_no_tool():
    """hub/runtime.py builds the tools from the registry's table: it imports no tool module."""
    source = (ROOT / "hub" / "runtime.py").read_text()
    assert "kinds" not in source and "WebSearch(" not in source and "WebFetch(" not in source


# ---------------------------------------------------------------- a new tool: one module, nothing else


def test_a_new_tool_module_is_found(tmp_path, monkeypatch):
    catalog = _new_tools(tmp_path, monkeypatch)
    assert list(catalog.tools) == ["clock"] and list(catalog.modules) == ["clock"]
    assert "clock" not in TOOLS


def test_a_new_tool_is_offered_run_and_cited_over_http(tmp_path, monkeypatch, gateway, fake_model, search_fakes):
    """Over HTTP: with the discovered tool in the table the runtime builds from, the model is offered it
    beside web_search, its call runs and the answer cites its result."""
    catalog = _new_tools(tmp_path, monkeypatch)
    monkeypatch.setattr(registry, "TOOLS", {**TOOLS, **catalog.tools})
    cfg = base_config(fake_model.url)
    cfg["webSearch"] = {"engines": [searxng_engine(search_fakes, default=True)], "injectPolicy": "always",
                        "cacheTtlMs": 0}
    cfg["webFetch"] = {"enabled": False}
    gw = gateway(cfg)

    def clock_then_answer(body: dict) -> dict:
        if body["messages"][-1]["role"] == "tool":
            return {"content": "It is noon in Paris [1]."}
        return {"tool_calls": [{"name": "clock", "arguments": {"city": "Paris"}}]}

    fake_model.default = clock_then_answer
    r = httpx.post(gw.url + "/v1/chat/completions", timeout=30, json={
        "model": "default", "messages": [{"role": "user", "content": "what time is it in Paris?"}]})
    assert r.status_code == 200, r.text
    msg = r.json()["choices"][0]["message"]
    assert msg["content"] == "It is noon in Paris [1]."
    assert msg["annotations"][0]["url_citation"]["url"] == "https://clock.test/paris"
    first, second = fake_model.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["web_search", "clock"]
    assert second["messages"][-1]["content"] == "[1] It is 12:00 in paris."


def test_a_tool_whose_build_declines_is_left_out(tmp_path, monkeypatch, gateway, fake_model):
    """The new tool's build returns None without search engines: the model gets no tools at all."""
    catalog = _new_tools(tmp_path, monkeypatch)
    monkeypatch.setattr(registry, "TOOLS", {**TOOLS, **catalog.tools})
    cfg = base_config(fake_model.url)
    cfg["webSearch"] = {"engines": [], "injectPolicy": "always"}
    gw = gateway(cfg)
    r = httpx.post(gw.url + "/v1/chat/completions", timeout=30, json={
        "model": "default", "messages": [{"role": "user", "content": "what time is it in Paris?"}]})
    assert r.status_code == 200, r.text
    assert "tools" not in fake_model.requests[0]


# ---------------------------------------------------------------- a new hosted tool: still one module


def _messages(gw, tools: list[dict]) -> httpx.Response:
    return httpx.post(gw.url + "/v1/messages", timeout=30, headers={"anthropic-version": "2023-06-01"}, json={
        "model": "default", "max_tokens": 100, "tools": tools,
        "messages": [{"role": "user", "content": "what time is it in Paris?"}]})


def test_a_new_tools_hosted_name_is_recognised_on_messages(tmp_path, monkeypatch, gateway, fake_model, search_fakes):
    """Over HTTP: a client offering the new tool's Anthropic server tool (`clock_20260101`) gets it run
    as a hosted tool: the model is offered only it (not web_search, which the client did not offer),
    the client's max_uses reaches it through the offer its module reads, its calls show as its blocks
    and are counted under its own usage counter."""
    catalog = discover(_package(tmp_path, monkeypatch, {"clock": HOSTED_CLOCK}))
    cfg = base_config(fake_model.url)
    cfg["webSearch"] = {"engines": [searxng_engine(search_fakes, default=True)], "injectPolicy": "always",
                        "cacheTtlMs": 0}
    cfg["webFetch"] = {"enabled": False}
    offered = [{"type": "clock_20260101", "name": "clock", "max_uses": 1}]

    # the repository's tools do not know the type: an Anthropic tool the gateway cannot offer, so the
    # client named no hosted tool and gets the gateway's own search (injectPolicy always)
    fake_model.default = lambda body: {"content": "no clock here"}
    r = _messages(gateway(cfg, "without.json"), offered)
    assert r.status_code == 200, r.text
    assert [t["function"]["name"] for t in fake_model.requests[0]["tools"]] == ["web_search"]
    assert "server_tool_use" not in r.json()["usage"]

    monkeypatch.setattr(registry, "TOOLS", {**TOOLS, **catalog.tools})  # as if its module were in hub/tools/kinds/
    gw = gateway(cfg, "with.json")
    fake_model.reset()
    fake_model.script({"tool_calls": [{"name": "clock", "arguments": {"city": "Paris"}},
                                      {"name": "clock", "arguments": {"city": "Tokyo"}}]},
                      {"content": "It is noon in Paris [1]."})
    r = _messages(gw, offered)
    assert r.status_code == 200, r.text
    first, second = fake_model.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["clock"]
    message = r.json()
    assert [b["type"] for b in message["content"]][:2] == ["server_tool_use", "clock_tool_result"]
    assert message["content"][0]["name"] == "clock"
    # max_uses 1 from the client's offer: the second call was refused, and never counted
    assert [m["content"] for m in second["messages"][-2:]] == [
        "[1] It is 12:00 in paris.", '{"error":"max_uses_exceeded: no more calls are allowed"}']
    assert message["usage"]["server_tool_use"] == {"web_search_requests": 0, "web_fetch_requests": 0,
                                                   "clock_requests": 1}


# ---------------------------------------------------------------- what the registry refuses


def test_a_module_that_declares_no_tool_is_a_bug(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, {"empty": "X = 1\n"})
    with pytest.raises(ValueError, match=r"\.empty declares no server tool"):
        discover(package)


def test_two_modules_claiming_one_name_is_a_bug(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, {"_names": 'NAME = "clock"\n', "clock": CLOCK, "clock2": CLOCK})
    with pytest.raises(ValueError, match=r"\.clock2\.TOOL: 'clock' is already .*\.clock\.TOOL"):
        discover(package)


def test_a_declaration_needs_a_name(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, {"nameless": (
        "from hub.tools.kind import ToolKind\n\nTOOL = ToolKind('', build=lambda parts: None)\n")})
    with pytest.raises(ValueError, match=r"\.nameless\.TOOL: its name must be a non-empty string"):
        discover(package)


def test_tools_are_offered_by_their_order_then_name(tmp_path, monkeypatch):
    declare = "from hub.tools.kind import ToolKind\n\nTOOL = ToolKind({!r}, build=lambda parts: None{})\n"
    package = _package(tmp_path, monkeypatch, {"m1": declare.format("b", ""), "m2": declare.format("a", ", order=100"),
                                               "m3": declare.format("z", ", order=1")})
    assert list(discover(package).tools) == ["z", "a", "b"]


# ---------------------------------------------------------------- a tool's own settings: still one module

# A clock with settings of its own, `tools.clock` in engines.json: the module declares their type.
SET_CLOCK = """
    import msgspec

    from hub.tools.kind import Parts, ToolKind
    from tests.toy.clock import Clock


    class ClockSettings(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
        enabled: bool = True
        description: str = "The local time in a city."
        max_cities: int = 3


    def _build(parts: Parts) -> Clock | None:
        settings = parts.config.tools["clock"]
        if not settings.enabled:
            return None
        clock = Clock("clock")
        clock._schema["function"]["description"] = f"{settings.description} (up to {settings.max_cities})"
        return clock


    TOOL = ToolKind("clock", build=_build, settings=ClockSettings)
"""


def _set_clock(tmp_path, monkeypatch):
    from hub import runtime
    from hub.config import Plugins

    catalog = discover(_package(tmp_path, monkeypatch, {"clock": SET_CLOCK}))
    plugins = Plugins(runtime.PLUGINS.engines, runtime.PLUGINS.families,
                      registry.settings_types({**TOOLS, **catalog.tools}))
    return catalog, plugins


def test_a_tools_settings_are_read_from_its_section_over_http(tmp_path, monkeypatch, gateway, fake_model,
                                                              search_fakes):
    """The settings the module declares are what the gateway reads from `tools.clock`: the model is
    offered the tool as they describe it, and not at all when they turn it off."""
    from hub import runtime

    catalog, plugins = _set_clock(tmp_path, monkeypatch)
    monkeypatch.setattr(registry, "TOOLS", {**TOOLS, **catalog.tools})
    monkeypatch.setattr(runtime, "PLUGINS", plugins)  # what hub/runtime.py's load_config checks against
    for section, offered in (({"clock": {"description": "Ask the clock.", "maxCities": 2}}, "Ask the clock. (up to 2)"),
                             ({}, "The local time in a city. (up to 3)"),
                             ({"clock": {"enabled": False}}, None)):
        cfg = base_config(fake_model.url)
        cfg["webSearch"] = {"engines": [searxng_engine(search_fakes, default=True)], "injectPolicy": "always"}
        cfg["webFetch"] = {"enabled": False}
        cfg["tools"] = section
        gw = gateway(cfg)
        fake_model.requests.clear()
        r = httpx.post(gw.url + "/v1/chat/completions", timeout=30, json={
            "model": "default", "messages": [{"role": "user", "content": "what time is it in Paris?"}]})
        assert r.status_code == 200, r.text
        tools = {t["function"]["name"]: t["function"]["description"] for t in fake_model.requests[0].get("tools", [])}
        assert "web_search" in tools and tools.get("clock") == offered, (section, tools)


def test_a_wrong_tool_setting_is_a_config_error_naming_it(tmp_path, monkeypatch):
    import json

    from hub.config import ConfigError, parse

    _, plugins = _set_clock(tmp_path, monkeypatch)
    cases = {
        "enabled": ({"clock": {"enabled": "${CLOCK_ON}"}}, "tools.clock.enabled: Expected `bool`, got `str`"),
        "unknown": ({"clock": {"colour": 1}}, "tools.clock: Object contains unknown field `colour`"),
        "nested": ({"clock": {"maxCities": [1]}}, "tools.clock.maxCities: Expected `int`, got `array`"),
        "no tool": ({"nope": {}}, "tools.nope: no server tool with settings is named 'nope' (known: clock)"),
    }
    for what, (section, error) in cases.items():
        cfg = base_config("http://127.0.0.1:9/v1")
        cfg["tools"] = section
        with pytest.raises(ConfigError) as e:
            parse(json.dumps(cfg), env={"CLOCK_ON": "sk-not-a-bool"}, plugins=plugins)
        assert e.value.errors == [error], what
        assert "sk-not-a-bool" not in str(e.value)
    with pytest.raises(ConfigError, match="no server tool with settings is named 'clock'"):
        parse(json.dumps({**base_config("http://127.0.0.1:9/v1"), "tools": {"clock": {}}}), env={},
              plugins=runtime_plugins())


def runtime_plugins():
    from hub.runtime import PLUGINS

    return PLUGINS


def test_settings_must_have_defaults(tmp_path, monkeypatch):
    source = SET_CLOCK.replace('forbid_unknown_fields=True,', 'forbid_unknown_fields=True, kw_only=True,').replace(
        'max_cities: int = 3', 'max_cities: int')
    with pytest.raises(ValueError, match=r"\.clock\.TOOL: settings must be a msgspec Struct whose fields all have defaults"):
        discover(_package(tmp_path, monkeypatch, {"clock": source}))
