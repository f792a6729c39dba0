"""SearchService: argument checks, engine choice, cache, fallback, metrics, and keys never leaking."""

from __future__ import annotations

import asyncio
import json
import logging

import msgspec
import pytest

from hub.observability import metrics
from hub.search import SearchRequest
from hub.search.cache import PREFIX, cache_key
from hub.search.render import tool_text
from hub.store.base import StoreUnavailable
from hub.store.memory import MemoryStore

from .fakes.search_models import GLM_KEY
from .fakes.search_providers import KEYS, Reply, config_with, search_service

CANARY = "sk-CANARY-7f3a9c1e5b2d4f60"


@pytest.fixture
def fake(search_fakes):
    """The shared fake search providers (tests/conftest.py), reset for this test."""
    return search_fakes


def engine(fake, kind: str, id: str | None = None, **extra) -> dict:
    e = {"id": id or kind, "type": kind, "baseURL": fake.base_url(fake.server, kind)}
    if kind in KEYS:
        e["apiKey"] = KEYS[kind]
    return {**e, **extra}


def run(cfg: dict, *searches: dict, store=None) -> list:
    async def go():
        async with search_service(cfg, store=store) as svc:
            return [await svc.search(SearchRequest(**s)) for s in searches]

    return asyncio.run(go())


def one(cfg: dict, query: str = "latest stable rust release", **kw):
    return run(cfg, {"query": query, **kw})[0]


def with_service(cfg: dict, fn):
    async def go():
        async with search_service(cfg) as svc:
            return fn(svc)

    return asyncio.run(go())


# ---------------------------------------------------------------- engine choice and arguments


def test_unknown_engine_lists_the_valid_ones(fake):
    cfg = config_with([engine(fake, "serper", default=True), engine(fake, "brave")])
    r = one(cfg, engine="bing")
    assert r.error_code == "invalid_tool_input"
    assert r.error == "unknown engine 'bing'; valid engines: serper, brave"
    assert r.to_payload() == {"error": r.error, "engine": "bing"}
    assert not fake.calls("serper") and not fake.calls("brave")


def test_no_engine_id_uses_the_default_or_the_only_one(fake):
    assert one(config_with([engine(fake, "serper"), engine(fake, "brave", default=True)])).engine == "brave"
    assert one(config_with([engine(fake, "tavily")])).engine == "tavily"
    r = one(config_with([engine(fake, "serper"), engine(fake, "brave")]))
    assert r.error_code == "invalid_tool_input" and r.error == "choose an engine: serper, brave"


def test_engine_ids_match_case_insensitively(fake):
    assert one(config_with([engine(fake, "serper", id="Google")]), engine="google").engine == "Google"


def test_choose_engine_and_google_only(fake):
    cfg = config_with([engine(fake, "brave", default=True), engine(fake, "serper"), engine(fake, "tavily", id="web")])

    def check(svc):
        assert svc.choose_engine(None) == ("brave", "default")
        assert svc.choose_engine("  ") == ("brave", "default")
        assert svc.choose_engine("web") == ("web", "model")
        assert svc.choose_engine("WEB ") == ("web", "model")  # as configured, whatever the case
        assert svc.choose_engine("nope") == ("nope", "model")  # search() answers it with the error
        assert [e.id for e in svc.engines()] == ["brave", "serper", "web"]
        assert [e.id for e in svc.engines(google_only=True)] == ["serper"]  # serper is Google-backed
        # Google-preferred intent: the first Google-backed engine, as the default is not; a named engine wins
        assert svc.choose_engine(None, google=True) == ("serper", "google")
        assert svc.choose_engine("web", google=True) == ("web", "model")
        # a hosted tool's engine (OpenRouter's) goes before the intent's, resolved the same way
        assert svc.choose_engine(None, preferred="Web", google=True) == ("web", "google")
        assert svc.choose_engine(None, preferred="bing")[0] == "bing"  # unknown: search() answers the error

    with_service(cfg, check)
    no_google = config_with([engine(fake, "brave"), engine(fake, "tavily")])
    with_service(no_google, lambda svc: [e.id for e in svc.engines(google_only=True)] == ["brave", "tavily"] or 1 / 0)
    # without a default, an unnamed engine is None, for search() to ask for one
    with_service(no_google, lambda svc: svc.choose_engine(None) == (None, "default") or 1 / 0)
    google_default = config_with([engine(fake, "brave"), engine(fake, "serper", default=True)])
    with_service(google_default, lambda svc: svc.choose_engine(None, google=True) == ("serper", "default") or 1 / 0)


@pytest.mark.parametrize(("query", "code", "message"), [
    ("x" * 501, "query_too_long", "query is longer than 500 characters"),
    ("  \n ", "invalid_tool_input", "query is empty"),
])
def test_bad_queries(fake, query, code, message):
    r = one(config_with([engine(fake, "serper")]), query)
    assert (r.error_code, r.error) == (code, message)
    assert not fake.calls("serper")


def test_a_500_character_query_is_fine(fake):
    assert one(config_with([engine(fake, "serper")]), "x" * 500).ok


def test_bad_recency(fake):
    cfg = config_with([engine(fake, "serper")])
    assert one(cfg, recency="lastWeek").error_code == "invalid_tool_input"
    assert not fake.calls("serper")


def test_count_defaults_and_clamps(fake):
    cfg = config_with([engine(fake, "serper")], maxResults=3)
    one(cfg)
    assert fake.calls("serper")[-1].json["num"] == 3  # webSearch.maxResults
    one(cfg, count=7)
    assert fake.calls("serper")[-1].json["num"] == 7
    one(config_with([engine(fake, "serper", maxResults=4)]), count=10)
    assert fake.calls("serper")[-1].json["num"] == 4  # the engine's maxResults is its ceiling
    one(cfg, count=0)
    assert fake.calls("serper")[-1].json["num"] == 3


def test_tool_content_is_numbered_and_marked_untrusted(fake):
    r = one(config_with([engine(fake, "brave")]), count=10)
    content = json.loads(tool_text(r)[0])
    assert "untrusted" in content["note"] and "[n]" in content["note"]
    assert [h["n"] for h in content["results"]] == [1, 2, 3, 4]
    assert set(content["results"][0]) >= {"n", "title", "url", "snippet"}


# ---------------------------------------------------------------- cache


def test_same_search_is_answered_from_the_cache(fake):
    store = MemoryStore()
    cfg = config_with([engine(fake, "serper")])
    first, second = run(cfg, {"query": "Rust  release", "recency": "oneWeek"},
                        {"query": "rust release ", "recency": "oneWeek"}, store=store)
    assert len(fake.calls("serper")) == 1
    assert not first.cached and second.cached
    assert second.hits == first.hits and second.summary == first.summary
    assert second.query == "rust release"
    # a new process-level service (same store) still hits the cache; other parameters miss it
    (third,) = run(cfg, {"query": "rust release", "recency": "oneWeek"}, store=store)
    assert third.cached and len(fake.calls("serper")) == 1
    run(cfg, {"query": "rust release", "recency": "oneDay"}, {"query": "rust release", "recency": "oneWeek",
        "count": 3}, {"query": "rust release", "recency": "oneWeek", "allowed_domains": ["rust-lang.org"]},
        store=store)
    assert len(fake.calls("serper")) == 4


def test_cache_values_are_small_and_namespaced(fake):
    store = MemoryStore()
    cfg = config_with([engine(fake, "serper")])
    r = run(cfg, {"query": "rust"}, store=store)[0]
    key = cache_key("serper", SearchRequest("rust", 5))
    assert key.startswith(PREFIX) and PREFIX.startswith("cache:")
    raw = asyncio.run(store.get(key))
    assert raw is not None and len(raw) < len(tool_text(r)[0].encode())
    assert msgspec.json.decode(raw)[0] == "serper"


def test_errors_are_never_cached(fake):
    store = MemoryStore()
    fake.script("serper", Reply(status=429, body={"message": "slow down"}))
    first, second = run(config_with([engine(fake, "serper")]), {"query": "q"}, {"query": "q"}, store=store)
    assert not first.ok and second.ok and not second.cached
    assert len(fake.calls("serper")) == 2


def test_cache_can_be_turned_off(fake):
    run(config_with([engine(fake, "serper")], cacheTtlMs=0), {"query": "q"}, {"query": "q"})
    assert len(fake.calls("serper")) == 2


class BrokenStore(MemoryStore):
    async def get(self, key):
        raise StoreUnavailable("down")

    async def set(self, key, value, ttl):
        raise StoreUnavailable("down")


def test_a_failing_store_is_a_cache_miss(fake):
    a, b = run(config_with([engine(fake, "serper")]), {"query": "q"}, {"query": "q"}, store=BrokenStore())
    assert a.ok and b.ok and not b.cached


# ---------------------------------------------------------------- fallback


def test_fallback_tries_the_default_then_the_others(fake):
    fake.script("serper", Reply(status=429, body={"message": "Too many requests"}))
    fake.script("tavily", Reply(status=500, body={"detail": {"error": "boom"}}))
    engines = [engine(fake, "serper"), engine(fake, "brave"), engine(fake, "tavily", default=True)]
    r = one(config_with(engines, fallback=True), engine="serper")
    assert r.ok and r.engine == "brave"
    order = [name for name in ("serper", "tavily", "brave") if fake.calls(name)]
    assert order == ["serper", "tavily", "brave"]


def test_fallback_when_every_engine_fails(fake):
    fake.script("serper", Reply(status=429, body={"message": "Too many requests"}))
    fake.script("brave", Reply(body={"type": "search", "web": {"results": []}}))
    r = one(config_with([engine(fake, "serper"), engine(fake, "brave")], fallback=True), engine="serper")
    assert r.engine == "serper" and r.error_code == "too_many_requests"
    assert r.error.startswith("every engine failed: serper: rate limited")
    assert "brave: no results" in r.error


def test_no_fallback_unless_configured(fake):
    fake.script("serper", Reply(status=500, body={}))
    r = one(config_with([engine(fake, "serper"), engine(fake, "brave")]), engine="serper")
    assert not r.ok and not fake.calls("brave")


def test_bad_arguments_do_not_fall_back(fake):
    r = one(config_with([engine(fake, "serper"), engine(fake, "brave")], fallback=True), "x" * 600, engine="serper")
    assert r.error_code == "query_too_long" and not fake.calls("brave")


# ---------------------------------------------------------------- metrics


def test_metrics_are_recorded(fake):
    def value(name, **labels):
        return metrics.REGISTRY.get_sample_value(name, labels) or 0.0

    calls_ok = value("web_search_calls_total", provider="tavily", outcome="ok")
    calls_err = value("web_search_calls_total", provider="none", outcome="invalid_tool_input")
    hits = value("web_search_cache_total", outcome="hit")
    cfg = config_with([engine(fake, "tavily")])
    run(cfg, {"query": "m"}, {"query": "m"}, {"query": "m", "engine": "nope"})
    assert value("web_search_calls_total", provider="tavily", outcome="ok") == calls_ok + 2
    assert value("web_search_calls_total", provider="none", outcome="invalid_tool_input") == calls_err + 1
    assert value("web_search_cache_total", outcome="hit") == hits + 1
    assert value("web_search_call_duration_seconds_count", provider="tavily", outcome="ok") >= 2


# ---------------------------------------------------------------- keys never leak


def test_a_planted_key_never_shows(fake, search_models, caplog):
    models = search_models
    caplog.set_level(logging.DEBUG)
    echo = {"message": f"invalid key {CANARY}", "detail": f"key {CANARY} rejected", "statusCode": 401}
    fake.script("serper", Reply(status=401, body=echo))
    fake.script("brave", Reply(status=422, body={"type": "ErrorResponse", "error": {"detail": f"token {CANARY} bad"}}))
    fake.script("tavily", Reply(status=500, body={"detail": {"error": f"{CANARY[:-1]}{CANARY}"}}))
    models.script("a", Reply(status=401, body={"error": {"code": "1000", "message": f"bad key {CANARY}"}}))
    models.script("b", Reply(status=429, body={"error": {"code": "1302", "message": f"limit for {CANARY}"}}))
    engines = [
        engine(fake, "serper", apiKey=CANARY),
        engine(fake, "brave", apiKey=CANARY),
        engine(fake, "tavily", apiKey=CANARY),
        {"id": "glm", "providerKey": "glma.glm-4.6"},
    ]
    providers = {
        "glma": {"type": "glm", "baseURL": models.glm_base(models.server, "a"), "apiKey": CANARY},
        "glmb": {"type": "glm", "baseURL": models.glm_base(models.server, "b"), "apiKey": CANARY},
    }
    cfg = config_with(engines, providers=providers, search_targets=[["glma.glm-4.6", "glmb.glm-4.6"]], fallback=True)
    results = run(cfg, {"query": "q", "engine": "serper"}, {"query": "q", "engine": "glm"},
                  {"query": "q", "engine": "tavily"})
    assert all(not r.ok for r in results)
    assert any("bad key ****" in r.error for r in results)
    for r in results:
        for text in (r.error, tool_text(r)[0], json.dumps(r.to_payload()), repr(r)):
            assert CANARY not in text and CANARY[:12] not in text
    assert caplog.records
    for rec in caplog.records:
        assert CANARY not in rec.getMessage()
    assert CANARY not in caplog.text
    # the keys did go out, to the fakes
    assert fake.calls("serper")[0].headers["x-api-key"] == CANARY
    assert models.calls("a")[0].headers["authorization"] == f"Bearer {CANARY}"
    assert GLM_KEY  # the normal key is unrelated to the canary
