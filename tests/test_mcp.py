"""The MCP server, driven by the official SDK's client: over Streamable HTTP at /mcp (auth, budgets,
replicas) and over stdio (`searchhub mcp`), with the same hits as `searchhub search`; and its
web_fetch against the fake web site on loopback (opened through webFetch.allowHosts / allowPorts,
as the fetcher tests do; one test proves the default refuses it)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from .fakes.search_providers import KEYS, Reply
from .fakes.web import ARTICLE_TITLE, MAIN_SENTENCES, NAV_WORDS, SCRIPT_TEXT, FakeWeb
from .helpers import base_config, hermetic, searxng_engine, serper_engine

ROOT = Path(__file__).resolve().parent.parent
ALICE = "sk-mcp-alice-7c2e91"


def config(model_url: str, fakes, *, api_keys: list | None = None, **ws) -> dict:
    cfg = base_config(model_url)
    cfg["webSearch"] = {"engines": [serper_engine(fakes, default=True, costPerCall=0.002), searxng_engine(fakes)],
                        **ws}
    if api_keys is not None:
        cfg["server"]["apiKeys"] = api_keys
    return cfg


async def over_http(url: str, key: str | None, work) -> Any:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(url + "/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)


async def over_stdio(config_path: Path, work, env: dict | None = None) -> Any:
    params = StdioServerParameters(command=sys.executable, args=["-m", "hub", "mcp", "--config", str(config_path)],
                                   cwd=str(ROOT), env={**_env(), **(env or {})})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("SEARCHHUB_CONFIG", "SEARCHHUB_API_KEY")}


def cli_hits(config_path: Path, *args: str) -> list[dict]:
    p = subprocess.run([sys.executable, "-m", "hub", "search", *args, "--config", str(config_path), "--json"],
                       cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return [{"title": h["title"], "url": h["url"], "snippet": h["snippet"]} for h in json.loads(p.stdout)["hits"]]


def hits_of(result) -> list[dict]:
    return [{k: h[k] for k in ("title", "url", "snippet")} for h in result.structured_content["hits"]]


async def list_and_search(session: ClientSession, **arguments) -> tuple:
    tools = (await session.list_tools()).tools
    return tools, await session.call_tool("web_search", {"query": "latest stable rust release", **arguments})


def check_listing(tools) -> None:
    (tool,) = [t for t in tools if t.name == "web_search"]
    assert "Engines: serper: Google results via Serper; searxng: SearXNG metasearch." in tool.description
    assert tool.input_schema["properties"]["engine"]["enum"] == ["serper", "searxng"]
    assert tool.input_schema["required"] == ["query"]
    assert set(tool.input_schema["properties"]) == {"query", "engine", "count", "recency", "domains", "read_pages"}
    assert tool.output_schema["properties"]["hits"]["items"]["required"] == ["title", "url", "snippet"]


# ---------------------------------------------------------------- Streamable HTTP


def test_http_lists_and_searches_like_the_cli(gateway, fake_model, search_fakes, tmp_path) -> None:
    cfg = config(fake_model.url, search_fakes, api_keys=[{"key": ALICE, "name": "alice"}])
    gw = gateway(cfg)
    tools, result = asyncio.run(over_http(gw.url, ALICE, lambda s: list_and_search(s, count=3, engine="searxng")))
    check_listing(tools)
    assert not result.is_error, result.content
    doc = result.structured_content
    assert doc["engine"] == "searxng" and doc["cached"] is False
    assert hits_of(result) == cli_hits(gw.path, "latest stable rust release", "--count", "3", "--engine", "searxng")
    assert doc["hits"][0]["date"] is None or isinstance(doc["hits"][0]["date"], str)
    text = result.content[0].text
    assert text.startswith('Web search results for "latest stable rust release" (untrusted web content')
    assert f"[1] {doc['hits'][0]['title']}\n{doc['hits'][0]['url']}" in text


def test_http_second_call_is_a_cache_hit_and_counts_cost(gateway, fake_model, search_fakes) -> None:
    gw = gateway(config(fake_model.url, search_fakes, api_keys=[{"key": ALICE, "name": "alice"}]))

    async def twice(session):
        return [await session.call_tool("web_search", {"query": "rust", "count": 2}) for _ in range(2)]

    before = cost_metric(gw)
    first, second = asyncio.run(over_http(gw.url, ALICE, twice))
    assert first.structured_content["cached"] is False and second.structured_content["cached"] is True
    assert hits_of(first) == hits_of(second)
    assert len(search_fakes.calls("serper")) == 1
    assert cost_metric(gw) - before == pytest.approx(0.002)  # one priced search; the cache hit is free
    assert 'web_search_calls_total{outcome="ok",provider="serper"}' in httpx.get(gw.url + "/metrics").text


def cost_metric(gw) -> float:
    for line in httpx.get(gw.url + "/metrics", timeout=5).text.splitlines():
        if line.startswith('searchhub_search_cost_total{engine="serper",key="alice"} '):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_http_domains_filter_and_exclude(gateway, fake_model, search_fakes) -> None:
    gw = gateway(config(fake_model.url, search_fakes))

    async def go(session):
        only = await session.call_tool("web_search", {"query": "rust", "engine": "searxng", "count": 5,
                                                      "domains": ["rust-lang.org", "-doc.rust-lang.org"]})
        return only

    result = asyncio.run(over_http(gw.url, None, go))
    urls = [h["url"] for h in result.structured_content["hits"]]
    assert urls and all("rust-lang.org/" in u and "//doc." not in u for u in urls), urls


@pytest.mark.parametrize(("arguments", "needle"), [
    ({}, "'query' is required"),
    ({"query": 3}, "'query' is required and must be a string"),
    ({"query": "rust", "count": "two"}, "'count' must be an integer"),
    ({"query": "rust", "domains": "rust-lang.org"}, "'domains' must be an array"),
    ({"query": "rust", "domains": [1]}, "domains must be an array of strings"),
    ({"query": "rust", "engine": "bing"}, "unknown engine 'bing'; valid engines: serper, searxng"),
    ({"query": "rust", "recency": "lately"}, "recency must be one of"),
])
def test_http_bad_arguments_are_tool_errors(gateway, fake_model, search_fakes, arguments, needle) -> None:
    gw = gateway(config(fake_model.url, search_fakes))
    result = asyncio.run(over_http(gw.url, None, lambda s: s.call_tool("web_search", arguments)))
    assert result.is_error and needle in result.content[0].text, result.content
    assert not search_fakes.calls("serper")


def test_http_engine_failure_and_unknown_tool_are_tool_errors(gateway, fake_model, search_fakes) -> None:
    gw = gateway(config(fake_model.url, search_fakes))
    search_fakes.script("serper", Reply(status=401, body={"message": f"bad key {KEYS['serper']}"}))

    async def go(session):
        return (await session.call_tool("web_search", {"query": "rust"}),
                await session.call_tool("web_fetch_everything", {"url": "x"}))

    failed, unknown = asyncio.run(over_http(gw.url, None, go))
    assert failed.is_error and failed.content[0].text.startswith("search failed (engine serper): ")
    assert KEYS["serper"] not in failed.model_dump_json()
    assert unknown.is_error and "unknown tool 'web_fetch_everything'" in unknown.content[0].text


def test_http_needs_a_gateway_key(gateway, fake_model, search_fakes) -> None:
    gw = gateway(config(fake_model.url, search_fakes, api_keys=[{"key": ALICE, "name": "alice"}]))
    raw = httpx.post(gw.url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                     headers={"accept": "application/json, text/event-stream"}, timeout=10)
    assert raw.status_code == 401 and raw.headers["www-authenticate"] == "Bearer"
    with pytest.raises((MCPError, httpx2.HTTPStatusError, ExceptionGroup)):
        asyncio.run(over_http(gw.url, "sk-wrong", lambda s: s.list_tools()))


def test_budget_spent_over_two_replicas_is_a_tool_error_with_retry_after(
        gateway, fake_model, search_fakes, redis_server) -> None:
    cfg = config(fake_model.url, search_fakes, api_keys=[{"key": ALICE, "name": "alice", "searchesPerDay": 2}],
                 cacheTtlMs=0)
    cfg["state"] = {"backend": "redis", "url": redis_server.url, "keyPrefix": f"t{uuid.uuid4().hex[:8]}:"}
    a, b = gateway(cfg, name="a.json"), gateway(cfg, name="b.json")
    r = httpx.post(a.url + "/v1/search", json={"query": "one"}, headers={"authorization": f"Bearer {ALICE}"},
                   timeout=10)
    assert r.status_code == 200
    second = asyncio.run(over_http(b.url, ALICE, lambda s: s.call_tool("web_search", {"query": "two"})))
    assert not second.is_error
    third = asyncio.run(over_http(a.url, ALICE, lambda s: s.call_tool("web_search", {"query": "three"})))
    assert third.is_error
    assert third.content[0].text.startswith("search budget for this key is exhausted until ")
    assert third.structured_content["code"] == "budget_exhausted"
    assert 0 < third.structured_content["retryAfter"] <= 86400
    assert len(search_fakes.calls("serper")) == 2


# ---------------------------------------------------------------- stdio


def test_stdio_lists_and_searches_like_the_cli(fake_model, search_fakes, tmp_path) -> None:
    path = tmp_path / "engines.json"
    path.write_text(json.dumps(hermetic(config(fake_model.url, search_fakes))))
    tools, result = asyncio.run(over_stdio(path, lambda s: list_and_search(s, count=2)))
    check_listing(tools)
    assert not result.is_error, result.content
    assert result.structured_content["engine"] == "serper"
    assert hits_of(result) == cli_hits(path, "latest stable rust release", "--count", "2")
    assert len(hits_of(result)) == 2


def test_stdio_counts_against_the_key_in_the_environment(fake_model, search_fakes, tmp_path) -> None:
    path = tmp_path / "engines.json"
    path.write_text(json.dumps(hermetic(config(fake_model.url, search_fakes, cacheTtlMs=0,
                                      api_keys=[{"key": ALICE, "name": "alice", "searchesPerDay": 1}]))))

    async def go(session):
        return [await session.call_tool("web_search", {"query": q}) for q in ("one", "two")]

    first, second = asyncio.run(over_stdio(path, go, env={"SEARCHHUB_API_KEY": ALICE}))
    assert not first.is_error and second.is_error
    assert second.structured_content["code"] == "budget_exhausted"
    p = subprocess.run([sys.executable, "-m", "hub", "mcp", "--config", str(path)], cwd=ROOT,
                       env={**_env(), "SEARCHHUB_API_KEY": "sk-nope"}, capture_output=True, text=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 1 and "SEARCHHUB_API_KEY is not one of server.apiKeys" in p.stderr
    assert "sk-nope" not in p.stderr


def test_the_sdk_loads_with_the_first_call_and_serves_concurrent_first_calls(gateway, fake_model, search_fakes):
    p = subprocess.run([sys.executable, "-c", "import sys, routes.app; print('mcp' in sys.modules)"], cwd=ROOT,
                       env=_env(), capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "False", p.stderr  # a gateway nobody asks for MCP never loads the SDK
    gw = gateway(config(fake_model.url, search_fakes))

    async def four():
        return await asyncio.gather(*(over_http(gw.url, None, lambda s: s.list_tools()) for _ in range(4)))

    assert [[t.name for t in r.tools] for r in asyncio.run(four())] == [["web_search", "web_fetch"]] * 4


def test_keyless_loopback_gateway_refuses_rebound_hosts(gateway, fake_model, search_fakes) -> None:
    gw = gateway(config(fake_model.url, search_fakes))
    call = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    ok = httpx.post(gw.url + "/mcp", json=call, headers=headers, timeout=10)
    assert ok.status_code == 200 and ok.json()["result"]["serverInfo"]["name"] == "searchhub"
    rebound = httpx.post(gw.url + "/mcp", json=call, headers={**headers, "host": "evil.example"}, timeout=10)
    assert rebound.status_code == 421
    page = httpx.post(gw.url + "/mcp", json=call, headers={**headers, "origin": "http://evil.example"}, timeout=10)
    assert page.status_code == 403


# ---------------------------------------------------------------- web_fetch




def fetch_config(model_url: str, fakes, web: FakeWeb | None, *, api_keys: list | None = None, **web_fetch) -> dict:
    """The search config plus webFetch, with the fake site opened through the operator's allow-list
    unless web is None (then the default address policy stands)."""
    cfg = config(model_url, fakes, api_keys=api_keys)
    opened = {"allowHosts": ["127.0.0.1"], "allowPorts": [web.port]} if web is not None else {}
    cfg["webFetch"] = {**opened, **web_fetch}
    return cfg


def check_article(result) -> None:
    assert not result.is_error, result.content
    doc = result.structured_content
    assert set(doc) == {"url", "final_url", "title", "text", "retrieved_at", "truncated"}
    assert doc["title"].startswith(ARTICLE_TITLE)
    assert all(s in doc["text"] for s in MAIN_SENTENCES)
    assert not any(w in doc["text"] for w in (*NAV_WORDS, SCRIPT_TEXT))
    assert doc["retrieved_at"].endswith("Z") and doc["truncated"] is False
    text = json.loads(result.content[0].text)
    assert text["note"].startswith("Fetched web page. It is untrusted third-party text")
    assert text["text"] == doc["text"] and text["final_url"] == doc["final_url"]


def test_http_fetches_a_page_the_caller_names(gateway, fake_model, search_fakes, site) -> None:
    # requirePriorContext stays at its default (true): it binds the model in a conversation, not a direct call
    gw = gateway(fetch_config(fake_model.url, search_fakes, site, api_keys=[{"key": ALICE, "name": "alice"}]))
    url = site.origin + "/article"

    async def go(session):
        tools = (await session.list_tools()).tools
        return (tools, await session.call_tool("web_fetch", {"url": url}),
                await session.call_tool("web_fetch", {"url": url + "#top", "max_chars": 120}),
                await session.call_tool("web_fetch", {"url": site.origin + "/redirect?to=/notes.txt"}))

    tools, page, short, redirected = asyncio.run(over_http(gw.url, ALICE, go))
    (tool,) = [t for t in tools if t.name == "web_fetch"]
    assert tool.input_schema["required"] == ["url"] and set(tool.input_schema["properties"]) == {"url", "max_chars"}
    assert "main text" in tool.description and "private-network addresses" in tool.description
    assert tool.output_schema["required"] == ["url", "final_url", "title", "text", "retrieved_at", "truncated"]
    check_article(page)
    assert page.structured_content["url"] == url == page.structured_content["final_url"]
    doc = short.structured_content
    assert not short.is_error and doc["truncated"] is True and len(doc["text"]) <= 120
    assert page.structured_content["text"].startswith(doc["text"][:-1])
    assert [p for p, _ in site.requests].count("/article") == 1  # the second read came from the cache
    assert redirected.structured_content["final_url"] == site.origin + "/notes.txt"
    assert redirected.structured_content["text"].startswith("Plain notes: line one.")
    metrics = httpx.get(gw.url + "/metrics", timeout=5).text
    assert 'web_fetch_cache_total{outcome="hit"}' in metrics


def test_http_private_url_is_refused_by_default(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(fetch_config(fake_model.url, search_fakes, None))

    async def go(session):
        return [await session.call_tool("web_fetch", {"url": u}) for u in (
            site.origin + "/article", "http://169.254.169.254/latest/meta-data/", "http://localhost/")]

    for result in asyncio.run(over_http(gw.url, None, go)):
        assert result.is_error and result.structured_content["code"] == "url_not_allowed", result.content
        assert result.content[0].text.startswith("web_fetch: ")
    assert site.connections == 0


def test_http_operator_domain_lists_still_apply(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(fetch_config(fake_model.url, search_fakes, site, blockedDomains=["127.0.0.1"]))
    result = asyncio.run(over_http(gw.url, None, lambda s: s.call_tool("web_fetch", {"url": site.origin + "/article"})))
    assert result.is_error and result.structured_content["code"] == "url_not_allowed"
    assert "blocked by the operator" in result.content[0].text
    assert site.connections == 0


@pytest.mark.parametrize(("arguments", "needle"), [
    ({}, "web_fetch: 'url' is required and must be a string"),
    ({"url": ["http://x.example/"]}, "web_fetch: 'url' is required and must be a string"),
    ({"url": "http://x.example/", "max_chars": "10"}, "web_fetch: 'max_chars' must be an integer"),
    ({"url": "http://x.example/", "max_chars": 0}, "web_fetch: 'max_chars' must be at least 1"),
    ({"url": "file:///etc/passwd"}, "web_fetch: "),
    ({"url": "http://x.example:22/"}, "web_fetch: "),
])
def test_http_bad_fetch_arguments_are_tool_errors(gateway, fake_model, search_fakes, site, arguments, needle) -> None:
    gw = gateway(fetch_config(fake_model.url, search_fakes, site))
    result = asyncio.run(over_http(gw.url, None, lambda s: s.call_tool("web_fetch", arguments)))
    assert result.is_error and result.content[0].text.startswith(needle), result.content
    assert site.connections == 0


def test_http_fetch_budget_is_a_tool_error_with_retry_after(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(fetch_config(fake_model.url, search_fakes, site,
                              api_keys=[{"key": ALICE, "name": "alice", "fetchesPerDay": 1}]))
    first = asyncio.run(over_http(gw.url, ALICE, lambda s: s.call_tool("web_fetch", {"url": site.origin + "/article"})))
    check_article(first)
    # the second call on the raw wire, to see the HTTP header beside the tool error (stateless: no session needed)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "web_fetch", "arguments": {"url": site.origin + "/notes.txt"}}}
    raw = httpx.post(gw.url + "/mcp", json=call, timeout=10, headers={
        "authorization": f"Bearer {ALICE}", "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18"})
    assert raw.status_code == 200, raw.text
    second = raw.json()["result"]
    assert second["isError"] is True
    assert second["content"][0]["text"].startswith("fetch budget for this key is exhausted until ")
    assert second["structuredContent"]["code"] == "budget_exhausted"
    assert 0 < second["structuredContent"]["retryAfter"] <= 86400
    assert int(raw.headers["retry-after"]) == second["structuredContent"]["retryAfter"]
    assert [p for p, _ in site.requests] == ["/article"]
    searched = asyncio.run(over_http(gw.url, ALICE, lambda s: s.call_tool("web_search", {"query": "rust"})))
    assert not searched.is_error  # fetchesPerDay bounds fetches, not searches


def test_http_fetch_off_is_not_listed(gateway, fake_model, search_fakes) -> None:
    gw = gateway(fetch_config(fake_model.url, search_fakes, None, enabled=False))

    async def go(session):
        return (await session.list_tools()).tools, await session.call_tool("web_fetch", {"url": "https://x.example/"})

    tools, result = asyncio.run(over_http(gw.url, None, go))
    assert [t.name for t in tools] == ["web_search"]
    assert result.is_error and "unknown tool 'web_fetch'; tools: web_search" in result.content[0].text


def test_stdio_fetches_and_counts_against_the_key(fake_model, search_fakes, site, tmp_path) -> None:
    path = tmp_path / "engines.json"
    path.write_text(json.dumps(hermetic(fetch_config(fake_model.url, search_fakes, site, cacheTtlMs=0,
                                            api_keys=[{"key": ALICE, "name": "alice", "fetchesPerDay": 1}]))))

    async def go(session):
        tools = (await session.list_tools()).tools
        return tools, [await session.call_tool("web_fetch", {"url": site.origin + "/article"}) for _ in range(2)]

    tools, (first, second) = asyncio.run(over_stdio(path, go, env={"SEARCHHUB_API_KEY": ALICE}))
    assert [t.name for t in tools] == ["web_search", "web_fetch"]
    check_article(first)
    assert second.is_error and second.structured_content["code"] == "budget_exhausted"
    assert [p for p, _ in site.requests] == ["/article"]

    refused = asyncio.run(over_stdio(path, lambda s: s.call_tool("web_fetch", {"url": "http://10.0.0.1/"})))
    assert refused.is_error and refused.structured_content["code"] == "url_not_allowed"
