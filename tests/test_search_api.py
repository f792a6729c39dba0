"""POST /v1/search and the Open WebUI route over HTTP, API keys with budgets (one gateway, and two
replicas on a real redis-server), and cost accounting: the counter, the header and the log line."""

from __future__ import annotations

import asyncio
import logging
import uuid

import httpx
import pytest

from hub.access.budget import Budget
from hub.config.keys import ApiKey
from hub.store import MemoryStore

from .fakes.search_models import GLM_KEY
from .fakes.search_providers import KEYS, Reply
from .helpers import base_config, searxng_engine, serper_engine

ALICE, BOB, PLAIN = "sk-alice-5b1c9e", "sk-bob-0d3f7a", "sk-plain-9e2b41"
PRICE = 0.005


def keys(**alice_limits) -> list:
    return [{"key": ALICE, "name": "alice", **alice_limits}, {"key": BOB, "name": "bob"}, PLAIN]


def search_config(model_url: str, fakes, *, api_keys: list | None = None, **ws) -> dict:
    cfg = base_config(model_url)
    cfg["webSearch"] = {"engines": [serper_engine(fakes, default=True, costPerCall=PRICE), searxng_engine(fakes)],
                        **ws}
    if api_keys is not None:
        cfg["server"]["apiKeys"] = api_keys
    return cfg


def post(gw, body, key: str | None = ALICE, path: str = "/v1/search") -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return httpx.post(gw.url + path, json=body, headers=headers, timeout=30)


def metric(gw, name: str, **labels: str) -> float:
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))  # the exposition sorts labels
    for line in httpx.get(gw.url + "/metrics", timeout=5).text.splitlines():
        if line.startswith(f"{name}{{{want}}} ") or (not labels and line.startswith(name + " ")):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


# ---------------------------------------------------------------- /v1/search


def test_search_answers_then_serves_the_cache(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, search_fakes, api_keys=keys()))
    r = post(gw, {"query": "latest stable rust release", "count": 2})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["object"] == "search.result" and doc["engine"] == "serper" and doc["cached"] is False
    assert doc["summary"] == "1.91.0"
    assert [h["url"] for h in doc["hits"]] == ["https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/",
                                               "https://doc.rust-lang.org/stable/releases.html"]
    assert doc["hits"][0]["date"] == "2025-10-30" and doc["cost"] == PRICE
    assert r.headers["x-searchhub-search-cost"] == "0.005"
    again = post(gw, {"query": "Latest  stable Rust release", "count": 2})  # same search, other spelling
    assert again.json()["cached"] is True and again.json()["hits"] == doc["hits"]
    assert again.headers["x-searchhub-search-cost"] == "0" and again.json()["cost"] == 0
    assert len(search_fakes.calls("serper")) == 1


def test_search_passes_engine_recency_domains_and_location(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, search_fakes))
    r = post(gw, {"query": "rust", "engine": "SearXNG", "recency": "oneWeek", "count": 3,
                  "allowed_domains": ["rust-lang.org"], "blocked_domains": ["doc.rust-lang.org"],
                  "user_location": {"country": "de"}}, key=None)
    assert r.status_code == 200, r.text
    assert r.json()["engine"] == "searxng"
    assert r.json()["hits"] and all(h["url"].startswith("https://blog.rust-lang.org/") for h in r.json()["hits"])
    (call,) = search_fakes.calls("searxng")
    assert call.params["time_range"] == "week"


@pytest.mark.parametrize(("body", "needle", "param"), [
    ({}, "'query' is required", "query"),
    ({"query": 7}, "'query': Expected `str`, got `int`", "query"),
    ({"query": "rust", "count": "many"}, "'count': Expected `int | null`, got `str`", "count"),
    ({"query": "rust", "allowed_domains": "rust-lang.org"}, "'allowed_domains': Expected `array`", "allowed_domains"),
    ({"query": "rust", "allowed_domains": ["a.example", 3]}, "'allowed_domains[1]'", "allowed_domains[1]"),
    ({"query": "   "}, "query is empty", None),
    ({"query": "rust", "engine": "bing"}, "unknown engine 'bing'; valid engines: serper, searxng", None),
    ({"query": "rust", "recency": "lately"}, "recency must be one of", None),
    ({"query": "x" * 600}, "longer than 500", None),
])
def test_bad_search_requests_get_openai_shaped_400s(gateway, fake_model, search_fakes, body, needle, param) -> None:
    gw = gateway(search_config(fake_model.url, search_fakes))
    r = post(gw, body, key=None)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and needle in err["message"] and err["param"] == param
    assert not search_fakes.calls("serper")


def test_body_that_is_not_json_is_a_400(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, search_fakes))
    r = httpx.post(gw.url + "/v1/search", content=b"{query", timeout=10)
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]


def test_engine_failure_is_a_502_without_the_engine_key(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, search_fakes))
    search_fakes.script("serper", Reply(status=500, body={"message": "boom"}))
    r = post(gw, {"query": "rust"}, key=None)
    assert r.status_code == 502 and r.json()["error"]["code"] == "search_unavailable"
    assert r.json()["error"]["message"] == "search failed (engine serper): the search service failed (HTTP 500: boom)"
    assert KEYS["serper"] not in r.text
    search_fakes.script("serper", Reply(status=429, body={"message": "slow down"}))
    r = post(gw, {"query": "rust"}, key=None)
    assert r.status_code == 503 and r.headers["retry-after"] == "5"


def test_search_needs_a_gateway_key_when_keys_are_set(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, search_fakes, api_keys=keys()))
    assert post(gw, {"query": "rust"}, key=None).status_code == 401
    assert post(gw, {"query": "rust"}, key="sk-wrong").status_code == 401
    assert post(gw, {"query": "rust"}, key=PLAIN).status_code == 200  # plain string keys keep working
    r = httpx.post(gw.url + "/v1/search", json={"query": "rust"}, headers={"x-api-key": BOB}, timeout=10)
    assert r.status_code == 200


# ---------------------------------------------------------------- Open WebUI's external engine


def test_open_webui_external_engine_contract(gateway, fake_model, search_fakes) -> None:
    """Open WebUI posts {"query", "count"} with its API key as bearer and reads [{link, title, snippet}]."""
    gw = gateway(search_config(fake_model.url, search_fakes, api_keys=keys()))
    r = post(gw, {"query": "rust", "count": 2}, path="/v1/search/open-webui")
    assert r.status_code == 200, r.text
    assert r.json() == [
        {"link": "https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/", "title": "Announcing Rust 1.91.0 | Rust Blog",
         "snippet": "The Rust team is happy to announce a new version of Rust, 1.91.0 & more."},
        {"link": "https://doc.rust-lang.org/stable/releases.html", "title": "Releases - The Rust Programming Language",
         "snippet": "Version 1.91.0 (2025-10-30): language, compiler and library changes."},
    ]
    bad = post(gw, {"count": 2}, path="/v1/search/open-webui")
    assert bad.status_code == 400 and "query" in bad.json()["error"]["message"]


# ---------------------------------------------------------------- budgets


def test_searches_per_day_then_429_with_retry_after(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, search_fakes, api_keys=keys(searchesPerDay=2)))
    denials = metric(gw, "searchhub_budget_denials_total", key="alice", limit="searchesPerDay")
    assert post(gw, {"query": "one"}).status_code == 200
    assert post(gw, {"query": "two"}).status_code == 200
    r = post(gw, {"query": "three"})
    assert r.status_code == 429
    err = r.json()["error"]
    assert err["code"] == "budget_exhausted" and err["type"] == "rate_limit_error"
    assert err["message"].startswith("search budget for this key is exhausted until ")
    assert err["message"].endswith("T00:00:00Z (searchesPerDay)")
    assert 0 < int(r.headers["retry-after"]) <= 86400
    assert ALICE not in r.text
    assert len(search_fakes.calls("serper")) == 2  # the refused search reached no engine
    assert post(gw, {"query": "three"}, key=BOB).status_code == 200  # another key has its own allowance
    assert metric(gw, "searchhub_budget_denials_total", key="alice", limit="searchesPerDay") == denials + 1


def test_searches_per_minute(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, search_fakes, api_keys=keys(searchesPerMinute=1, searchesPerDay=5)))
    assert post(gw, {"query": "one"}).status_code == 200
    r = post(gw, {"query": "two"})
    assert r.status_code == 429 and "(searchesPerMinute)" in r.json()["error"]["message"]
    assert 0 < int(r.headers["retry-after"]) <= 60


def test_max_cost_per_day_counts_engine_prices_not_cache_hits(gateway, fake_model, search_fakes) -> None:
    cfg = search_config(fake_model.url, search_fakes, api_keys=keys(maxCostPerDay=0.01))
    gw = gateway(cfg)
    assert post(gw, {"query": "one"}).status_code == 200
    assert post(gw, {"query": "one"}).json()["cached"] is True  # free: does not count
    assert post(gw, {"query": "two"}).status_code == 200  # 0.01 spent now
    r = post(gw, {"query": "three"})
    assert r.status_code == 429 and "(maxCostPerDay)" in r.json()["error"]["message"]


def test_budget_windows_renew_and_refusals_are_given_back() -> None:
    asyncio.run(_budget_windows())


async def _budget_windows() -> None:
    now = [1_700_000_000.0]
    budget = Budget(MemoryStore(), clock=lambda: now[0])
    key = ApiKey(key="k", name="k", searches_per_day=2, searches_per_minute=1)
    assert await budget.take_search(key) is None
    denial = await budget.take_search(key)
    assert denial is not None and denial.limit == "searchesPerMinute"
    assert denial.retry_after == 60 - int(now[0]) % 60
    now[0] += 60
    assert await budget.take_search(key) is None  # the minute refusal did not use up the day
    now[0] += 60
    denial = await budget.take_search(key)
    assert denial is not None and denial.limit == "searchesPerDay"
    now[0] = (now[0] // 86400 + 1) * 86400  # the next UTC day
    assert await budget.take_search(key) is None
    assert await budget.take_search(None) is None
    assert await budget.take_search(ApiKey(key="u", name="u")) is None


def test_budget_is_shared_by_two_replicas_on_redis(gateway, fake_model, search_fakes, redis_server) -> None:
    cfg = search_config(fake_model.url, search_fakes, api_keys=keys(searchesPerDay=2), cacheTtlMs=0)
    cfg["state"] = {"backend": "redis", "url": redis_server.url, "keyPrefix": f"t{uuid.uuid4().hex[:8]}:"}
    a, b = gateway(cfg, name="a.json"), gateway(cfg, name="b.json")
    assert post(a, {"query": "one"}).status_code == 200
    assert post(b, {"query": "two"}).status_code == 200
    assert post(a, {"query": "three"}).status_code == 429
    assert post(b, {"query": "four"}).status_code == 429
    assert post(b, {"query": "four"}, key=BOB).status_code == 200
    assert len(search_fakes.calls("serper")) == 3


# ---------------------------------------------------------------- cost


def test_cost_counter_moves_by_the_configured_price(gateway, fake_model, search_fakes, caplog) -> None:
    gw = gateway(search_config(fake_model.url, search_fakes, api_keys=keys()))
    before = metric(gw, "searchhub_search_cost_total", key="alice", engine="serper")
    with caplog.at_level(logging.INFO, logger="searchhub.http"):
        post(gw, {"query": "priced one"})
        post(gw, {"query": "priced two"})
        post(gw, {"query": "priced two"})  # a cache hit costs nothing
        post(gw, {"query": "free", "engine": "searxng"})  # no price configured
    after = metric(gw, "searchhub_search_cost_total", key="alice", engine="serper")
    assert after - before == pytest.approx(2 * PRICE)
    lines = [r.getMessage() for r in caplog.records if r.name == "searchhub.http"]
    assert any("POST /v1/search 200" in m and "key=alice" in m and "search_cost=0.005" in m for m in lines), lines
    assert not any(ALICE in m for m in lines)


def test_model_engine_cost_from_reported_tokens(gateway, fake_model, search_models) -> None:
    cfg = base_config(fake_model.url)
    cfg["providers"]["glm"] = {"type": "glm", "baseURL": search_models.glm_base(search_models.server, "a"),
                               "apiKey": GLM_KEY}
    cfg["virtualrouter"]["routing"]["web_search"] = [{"targets": ["glm.glm-4.6"]}]
    cfg["webSearch"] = {"engines": [{"id": "glm", "providerKey": "glm.glm-4.6", "costPerCall": 0.01,
                                     "costPerMillionInputTokens": 1.0, "costPerMillionOutputTokens": 2.0}]}
    gw = gateway(cfg)
    before = metric(gw, "searchhub_search_cost_total", key="anonymous", engine="glm")
    r = post(gw, {"query": "rust"}, key=None)
    assert r.status_code == 200, r.text
    expected = 0.01 + 2200 * 1.0 / 1e6 + 31 * 2.0 / 1e6  # the fake GLM reports 2200 prompt, 31 completion tokens
    assert r.json()["cost"] == pytest.approx(expected)
    assert metric(gw, "searchhub_search_cost_total", key="anonymous", engine="glm") - before == pytest.approx(expected)
