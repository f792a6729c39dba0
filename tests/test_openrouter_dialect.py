"""OpenRouter's ways of asking for web search, through the gateway with the official OpenAI SDK: the
`:online` model suffix, `plugins: [{"id": "web"}]`, and the `openrouter:web_search` /
`openrouter:web_fetch` server tools, on chat and on Responses (hub/injection/openrouter.py)."""

from __future__ import annotations

import json

import httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hub.injection import openrouter
from hub.tools.events import Options

from .helpers import base_config, searxng_engine
from .test_read_pages import DEEP_FACT, teasers

NEUTRAL = "Tell me about the harbour museum."  # no search intent: only the dialect can make it search


def config(model_url: str, fakes, site=None, **web_search) -> dict:
    ws = {"engines": [searxng_engine(fakes)], "cacheTtlMs": 0, **web_search}
    extra = {}
    if site is not None:
        ws["readPages"] = {}
        extra["webFetch"] = {"cacheTtlMs": 0, "allowHosts": ["127.0.0.1"], "allowPorts": [site.port]}
    return base_config(model_url, webSearch=ws, **extra)


def search_then_cite(body: dict) -> dict:
    if body["messages"][-1]["role"] == "tool":
        return {"content": "The ferry carried 41,862 passengers [1]."}
    return {"tool_calls": [{"name": "web_search", "arguments": {"query": "varnholt ferry passengers"}}]}


def client(gw) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)


def tool_names(body: dict) -> list[str]:
    return [t.get("function", {}).get("name") or t.get("type") for t in body.get("tools") or []]


def test_online_suffix_searches_routes_without_it_and_cites_with_content(gateway, fake_model, search_fakes, site):
    gw = gateway(config(fake_model.url, search_fakes, site))
    search_fakes.script("searxng", teasers(site, "/deep"))
    fake_model.default = search_then_cite
    r = client(gw).chat.completions.create(model="default:online", messages=[{"role": "user", "content": NEUTRAL}])
    first = fake_model.requests[0]
    assert first["model"] == "m" and "web_search" in tool_names(first)  # routed as "default", tool offered
    assert len(search_fakes.calls("searxng")) == 1
    (ann,) = r.choices[0].message.annotations
    cited = ann.url_citation.model_dump()
    assert cited["url"] == site.origin + "/deep" and DEEP_FACT in cited["content"]


def test_web_plugin_searches_with_its_max_results(gateway, fake_model, search_fakes):
    gw = gateway(config(fake_model.url, search_fakes))
    fake_model.default = search_then_cite
    client(gw).chat.completions.create(model="default", messages=[{"role": "user", "content": NEUTRAL}],
                                       extra_body={"plugins": [{"id": "web", "max_results": 2}]})
    (call,) = search_fakes.calls("searxng")
    result = json.loads([m for m in fake_model.requests[-1]["messages"] if m["role"] == "tool"][0]["content"])
    assert len(result["results"]) <= 2 and call.params.get("q")
    assert all("plugins" not in body for body in fake_model.requests)


def test_without_the_dialect_the_neutral_question_is_not_searched(gateway, fake_model, search_fakes):
    """The control: the same question and config search only because of the dialect."""
    gw = gateway(config(fake_model.url, search_fakes))
    fake_model.default = search_then_cite
    client(gw).chat.completions.create(model="default", messages=[{"role": "user", "content": NEUTRAL}])
    assert "web_search" not in tool_names(fake_model.requests[0]) and search_fakes.calls("searxng") == []


def test_unknown_plugins_are_ignored_never_a_400(gateway, fake_model, search_fakes):
    gw = gateway(config(fake_model.url, search_fakes))
    fake_model.default = lambda body: {"content": "It keeps records of the river crossings."}
    r = client(gw).chat.completions.create(
        model="default", messages=[{"role": "user", "content": NEUTRAL}],
        extra_body={"plugins": [{"id": "file-parser", "pdf": {"engine": "x"}}, "junk", {"no": "id"}]})
    assert r.choices[0].message.content
    assert "plugins" not in fake_model.requests[0] and search_fakes.calls("searxng") == []


def test_server_tools_are_run_by_the_gateway_and_never_reach_the_backend(gateway, fake_model, search_fakes):
    gw = gateway(config(fake_model.url, search_fakes))
    fake_model.default = search_then_cite
    client(gw).chat.completions.create(
        model="default", messages=[{"role": "user", "content": NEUTRAL}],
        tools=[{"type": "openrouter:web_search", "parameters": {"max_results": 3, "allowed_domains": ["rust-lang.org"],
                                                                "engine": "native"}},
               {"type": "openrouter:web_fetch", "parameters": {"max_uses": 2}}])
    offered = tool_names(fake_model.requests[0])
    assert offered == ["web_search", "web_fetch"]  # ours, in OpenRouter's tools' place
    assert len(search_fakes.calls("searxng")) == 1
    result = json.loads([m for m in fake_model.requests[-1]["messages"] if m["role"] == "tool"][0]["content"])
    urls = [hit["url"] for hit in result["results"]]
    assert urls and all("rust-lang.org" in u for u in urls)  # allowed_domains held
    assert all(not str(t.get("type", "")).startswith("openrouter:") for b in fake_model.requests
               for t in b.get("tools") or [])


def test_server_tool_beside_a_client_function(gateway, fake_model, search_fakes):
    gw = gateway(config(fake_model.url, search_fakes))
    fake_model.default = search_then_cite
    client(gw).chat.completions.create(
        model="default", messages=[{"role": "user", "content": NEUTRAL}],
        tools=[{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}},
               {"type": "openrouter:web_search"}])
    assert tool_names(fake_model.requests[0]) == ["lookup", "web_search"]


@pytest.mark.parametrize("how", ["suffix", "tool", "plugin"])
def test_responses_requests_speak_the_dialect_too(gateway, fake_model, search_fakes, how):
    gw = gateway(config(fake_model.url, search_fakes))
    fake_model.default = search_then_cite
    kw: dict = {"model": "default:online" if how == "suffix" else "default", "input": NEUTRAL}
    if how == "tool":
        kw["tools"] = [{"type": "openrouter:web_search", "parameters": {"max_results": 2}}]
    if how == "plugin":
        kw["extra_body"] = {"plugins": [{"id": "web"}]}
    r = client(gw).responses.create(**kw)
    assert "41,862" in r.output_text
    assert len(search_fakes.calls("searxng")) == 1
    assert fake_model.requests[0]["model"] == "m"


def test_an_explicit_no_search_wins_over_the_suffix(gateway, fake_model, search_fakes):
    gw = gateway(config(fake_model.url, search_fakes))
    fake_model.default = search_then_cite
    r = httpx.post(gw.url + "/v1/chat/completions", timeout=30, json={
        "model": "default:online", "web_search": False, "messages": [{"role": "user", "content": NEUTRAL}]})
    assert r.status_code == 200 and search_fakes.calls("searxng") == []


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["model", "plugins", "tools", "messages"]),
                       st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=12),
                                    lambda inner: st.lists(inner, max_size=3)
                                    | st.dictionaries(st.sampled_from(["id", "type", "parameters", "max_results",
                                                                       "engine", "allowed_domains", "max_uses"]),
                                                      inner, max_size=4), max_leaves=15), max_size=4))
def test_adapt_never_raises_and_takes_out_only_the_dialect(body):
    out, opts = openrouter.adapt(body, Options(), frozenset({"searxng"}))
    assert "plugins" not in out
    tools = out.get("tools")
    if isinstance(tools, list):
        assert not any(isinstance(t, dict) and str(t.get("type", "")).startswith("openrouter:") for t in tools)
    assert {k: v for k, v in out.items() if k not in ("model", "plugins", "tools", "tool_choice",
                                                      "parallel_tool_calls")} == \
        {k: v for k, v in body.items() if k not in ("model", "plugins", "tools", "tool_choice", "parallel_tool_calls")}
    if out is body:
        assert opts == Options()


@pytest.mark.parametrize("how", ["tool", "plugin"])
@pytest.mark.parametrize(("engine", "runs_on"), [("SearXNG", "searxng"), ("parallel", "default"), ("native", "default")])
def test_an_engine_name_is_ours_or_the_default_never_a_failed_search(gateway, fake_model, search_fakes, how, engine,
                                                                      runs_on):
    """OpenRouter's `engine` (on the tool or the web plugin) names one of our engines in any case, or
    else means our default engine: a name we do not have never fails the search."""
    cfg = config(fake_model.url, search_fakes)
    cfg["webSearch"]["engines"] = [{**searxng_engine(search_fakes, id="backup"), "default": True},
                                   searxng_engine(search_fakes)]  # the default is "backup", not "searxng"
    gw = gateway(cfg)
    fake_model.default = search_then_cite
    extra = ({"tools": [{"type": "openrouter:web_search", "parameters": {"engine": engine}}]} if how == "tool"
             else {"extra_body": {"plugins": [{"id": "web", "engine": engine}]}})
    r = client(gw).chat.completions.create(model="default", messages=[{"role": "user", "content": NEUTRAL}], **extra)
    assert "41,862" in r.choices[0].message.content
    result = json.loads([m for m in fake_model.requests[-1]["messages"] if m["role"] == "tool"][0]["content"])
    assert "error" not in result, result
    assert result["engine"] == ("searxng" if runs_on == "searxng" else "backup")
