"""LLM search backends (GLM, Gemini) reached through the web_search route: the request each target
gets, normalization, failover with cooldowns, and failures as values."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest

from hub.routing.router import Cooldowns
from hub.search.base import SearchRequest

from .fakes.search_models import GEMINI_KEY, GLM_KEY
from .fakes.search_providers import Reply, config_with, search_service


@pytest.fixture
def fake(search_models):
    """The shared fake search models (tests/conftest.py), reset for this test."""
    return search_models


def providers(fake, **keys) -> dict:
    """glm-a, glm-b: GLM instances a and b; gem: Gemini instance g."""
    return {
        "glma": {"type": "glm", "baseURL": fake.glm_base(fake.server, "a"), "apiKey": keys.get("glma", GLM_KEY)},
        "glmb": {"type": "glm", "baseURL": fake.glm_base(fake.server, "b"), "apiKey": keys.get("glmb", GLM_KEY)},
        "gem": {"type": "gemini", "baseURL": fake.gemini_base(fake.server, "g"), "apiKey": keys.get("gem", GEMINI_KEY)},
    }


def config(fake, engines: list[dict], pools: list[list[str]], **ws) -> dict:
    return config_with(engines, providers=providers(fake), search_targets=pools, **ws)


GLM = {"id": "glm", "providerKey": "glma.glm-4.6"}
GOOGLE = {"id": "google", "providerKey": "gem.gemini-2.5-flash"}


def one(cfg: dict, cooldowns: Cooldowns | None = None, **kw):
    async def go():
        async with search_service(cfg, cooldowns=cooldowns) as svc:
            return await svc.search(SearchRequest("latest stable rust release", **kw))

    return asyncio.run(go())


# ---------------------------------------------------------------- GLM


def test_glm_request(fake):
    cfg = config(fake, [{**GLM, "options": {"searchEngine": "search_pro"}}], [["glma.glm-4.6"]])
    r = one(cfg, count=7, recency="oneWeek")
    assert r.ok, r.error
    (req,) = fake.calls("a")
    assert (req.method, req.path) == ("POST", "/a/api/paas/v4/chat/completions")
    assert req.headers["authorization"] == f"Bearer {GLM_KEY}"
    assert req.json == {
        "model": "glm-4.6",
        "messages": [{"role": "user", "content": "latest stable rust release"}],
        "tools": [{"type": "web_search", "web_search": {
            "enable": True, "search_engine": "search_pro", "search_result": True, "count": 7,
            "search_recency_filter": "oneWeek"}}],
        "stream": False,
    }


def test_glm_defaults_and_domain_filter(fake):
    cfg = config(fake, [GLM], [["glma.glm-4.6"]])
    assert one(cfg, allowed_domains=["rust-lang.org"]).ok
    tool = fake.calls("a")[0].json["tools"][0]["web_search"]
    assert tool["search_engine"] == "search_std"
    assert tool["search_recency_filter"] == "noLimit"
    assert tool["count"] == 5  # webSearch.maxResults
    assert tool["search_domain_filter"] == "rust-lang.org"


def test_glm_result_is_normalized(fake):
    r = one(config(fake, [GLM], [["glma.glm-4.6"]]), count=6)
    assert r.engine == "glm"
    assert [h.url for h in r.hits] == [
        "https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/",
        "https://doc.rust-lang.org/stable/releases.html",
        "https://en.wikipedia.org/wiki/Rust_(programming_language)",
        "https://news.example.com/rust/roundup",
    ]
    assert r.hits[0].source == "blog.rust-lang.org" and r.hits[0].published == "2025-10-30"
    # [ref_n] markers become our [n]; ref_4 (the javascript: link) was dropped with its hit.
    assert r.summary == "Rust 1.91.0 is the latest stable release [1], see the notes [2] and ."


def test_glm_answer_without_search_results_is_no_results(fake):
    fake.script("a", Reply(body={"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]}))
    r = one(config(fake, [GLM], [["glma.glm-4.6"]]))
    assert r.error_code == "unavailable" and r.error.startswith("no results")


# ---------------------------------------------------------------- Gemini


def test_gemini_request(fake):
    r = one(config(fake, [GOOGLE], [["gem.gemini-2.5-flash"]]))
    assert r.ok, r.error
    (req,) = fake.calls("g")
    assert (req.method, req.path) == ("POST", "/g/v1beta/models/gemini-2.5-flash:generateContent")
    assert req.headers["x-goog-api-key"] == GEMINI_KEY
    assert "authorization" not in req.headers
    assert req.json["tools"] == [{"google_search": {}}]  # and no other tool
    assert req.json["contents"] == [{"role": "user", "parts": [{"text": "latest stable rust release"}]}]


def test_gemini_recency_is_a_time_range_filter(fake):
    assert one(config(fake, [GOOGLE], [["gem.gemini-2.5-flash"]]), recency="oneMonth").ok
    window = fake.calls("g")[0].json["tools"][0]["google_search"]["timeRangeFilter"]
    start = datetime.strptime(window["startTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    end = datetime.strptime(window["endTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs(end - start - timedelta(days=31)) < timedelta(seconds=5)


def test_gemini_openai_style_base_url_still_reaches_generate_content(fake):
    cfg = config(fake, [GOOGLE], [["gem.gemini-2.5-flash"]])
    cfg["providers"]["gem"]["baseURL"] += "/v1beta/openai"
    assert one(cfg).ok
    assert fake.calls("g")[0].path == "/g/v1beta/models/gemini-2.5-flash:generateContent"


def test_gemini_result_is_normalized(fake):
    r = one(config(fake, [GOOGLE], [["gem.gemini-2.5-flash"]]))
    assert [(h.title, h.url) for h in r.hits] == [
        ("rust-lang.org", "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbF9"),
        ("wikipedia.org", "https://vertexaisearch.cloud.google.com/grounding-api-redirect/XyZ1"),
    ]
    assert r.hits[0].snippet == "Rust 1.91.0 is the latest stable release. It shipped on October 30, 2025."
    assert r.hits[1].snippet == "It shipped on October 30, 2025."
    assert r.summary == ("Rust 1.91.0 is the latest stable release. It shipped on October 30, 2025.\n\n"
                         "Google searched for: latest stable rust release")


def test_gemini_blocked_prompt(fake):
    fake.script("g", Reply(body={"promptFeedback": {"blockReason": "SAFETY"}}))
    r = one(config(fake, [GOOGLE], [["gem.gemini-2.5-flash"]]))
    assert r.error_code == "unavailable" and "blocked: SAFETY" in r.error


def test_gemini_rate_limit(fake):
    fake.script("g", Reply(status=429, body={"error": {"code": 429, "message": "Resource has been exhausted",
                                                       "status": "RESOURCE_EXHAUSTED"}}))
    r = one(config(fake, [GOOGLE], [["gem.gemini-2.5-flash"]]))
    assert r.error_code == "too_many_requests"
    assert "Resource has been exhausted" in r.error


# ---------------------------------------------------------------- the route: failover, cooldowns


def test_failover_to_the_next_target_and_cooldown(fake):
    fake.script("a", Reply(status=429, body={"error": {"code": "1302", "message": "rate limit reached"}}))
    cfg = config(fake, [GLM], [["glma.glm-4.6", "glmb.glm-4.6"]])
    cooldowns = Cooldowns()
    r = one(cfg, cooldowns)
    assert r.ok and r.engine == "glm"
    assert len(fake.calls("a")) == 1 and len(fake.calls("b")) == 1
    assert cooldowns.remaining("glma.glm-4.6") > 0 and not cooldowns.remaining("glmb.glm-4.6")


def test_each_target_gets_its_own_wire_format(fake):
    """A GLM engine whose pool also holds a Gemini target: the Gemini target gets generateContent."""
    fake.script("a", Reply(status=500, body={"error": {"code": "500", "message": "internal"}}))
    cfg = config(fake, [GLM], [["glma.glm-4.6", "gem.gemini-2.5-flash"]])
    r = one(cfg)
    assert r.ok and r.engine == "glm"
    (req,) = fake.calls("g")
    assert req.json["tools"] == [{"google_search": {}}]
    assert r.hits[0].url.startswith("https://vertexaisearch.cloud.google.com/")


def test_a_rejected_key_fails_over_too(fake):
    cfg = config(fake, [GLM], [["glma.glm-4.6", "glmb.glm-4.6"]])
    cfg["providers"]["glma"]["apiKey"] = "revoked-key-0000"
    r = one(cfg)
    assert r.ok and len(fake.calls("b")) == 1


def test_every_target_failing(fake):
    fake.script("a", Reply(status=429, body={"error": {"code": "1302", "message": "slow down"}}))
    fake.script("b", Reply(status=429, body={"error": {"code": "1302", "message": "slow down"}}))
    r = one(config(fake, [GLM], [["glma.glm-4.6", "glmb.glm-4.6"]]))
    assert r.error_code == "too_many_requests"
    assert r.error.startswith("no search backend answered (")
    assert "glma.glm-4.6: rate limited" in r.error and "glmb.glm-4.6: rate limited" in r.error
    fake.reset()
    fake.script("a", Reply(status=429, body={}))
    fake.script("b", Reply(status=503, body={}))
    assert one(config(fake, [GLM], [["glma.glm-4.6", "glmb.glm-4.6"]])).error_code == "unavailable"


def test_malformed_body_fails_over(fake):
    fake.script("a", Reply(raw=b"<html>502 Bad Gateway</html>"))
    r = one(config(fake, [GLM], [["glma.glm-4.6", "glmb.glm-4.6"]]))
    assert r.ok and len(fake.calls("b")) == 1
    fake.reset()
    fake.script("a", Reply(raw=b'{"choices": "nope"}'))
    r = one(config(fake, [GLM], [["glma.glm-4.6"]]))
    assert r.error_code == "unavailable" and "malformed response" in r.error


def test_timeout_covers_the_whole_failover(fake):
    fake.script("a", Reply(delay=1.0))
    cfg = config(fake, [{**GLM, "timeoutMs": 300}], [["glma.glm-4.6", "glmb.glm-4.6"]])
    started = time.monotonic()
    r = one(cfg)
    assert time.monotonic() - started < 0.9
    assert r.error_code == "unavailable" and "timed out" in r.error


def test_glm_sogou_engine_gets_a_count_it_accepts(fake):
    cfg = config(fake, [{**GLM, "options": {"searchEngine": "search_pro_sogou"}}], [["glma.glm-4.6"]])
    r = one(cfg, count=3)
    assert fake.calls("a")[0].json["tools"][0]["web_search"]["count"] == 10
    assert len(r.hits) == 3
