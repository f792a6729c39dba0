"""The multi engine: several engines at once, merged by URL with reciprocal-rank fusion, failures of
some members reported beside the hits of the others."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.config import ConfigError, parse
from hub.runtime import PLUGINS
from hub.search.base import Hit, SearchRequest
from hub.search.engines.multi import RRF_K, fuse
from hub.search.render import tool_text
from hub.search.sanitize import dedup_key

from .fakes.search_providers import CORPUS, KEYS, Reply, config_with, search_service


@pytest.fixture
def fake(search_fakes):
    return search_fakes


def member(fake, kind: str) -> dict:
    e = {"id": kind, "type": kind, "baseURL": fake.base_url(fake.server, kind)}
    if kind in KEYS:
        e["apiKey"] = KEYS[kind]
    return e


def multi_config(fake, kinds=("serper", "brave", "searxng"), **extra) -> dict:
    engines = [member(fake, k) for k in kinds]
    engines.append({"id": "all", "type": "multi", "engines": list(kinds), "default": True, **extra})
    return config_with(engines)


def run(cfg: dict, **kw):
    async def go():
        async with search_service(cfg) as svc:
            started = time.monotonic()
            r = await svc.search(SearchRequest("latest stable rust release", **kw))
            return r, time.monotonic() - started

    return asyncio.run(go())


def test_members_are_merged_by_url(fake):
    r, _ = run(multi_config(fake), count=10)
    assert r.ok, r.error
    assert r.engine == "all"
    assert [len(fake.calls(k)) for k in ("serper", "brave", "searxng")] == [1, 1, 1]
    urls = [h.url for h in r.hits]
    assert len({dedup_key(u) for u in urls}) == len(urls)  # one hit per page
    assert urls[0] == CORPUS[0][1]  # ranked first by every engine
    assert "failed_engines" not in r.to_payload()


def test_a_failing_member_is_reported_and_the_others_answer(fake):
    fake.script("brave", Reply(status=500, body={"error": {"detail": "backend down"}}))
    r, _ = run(multi_config(fake))
    assert r.ok
    payload = json.loads(tool_text(r)[0])
    assert payload["failed_engines"] == [{"engine": "brave",
                                          "error": "the search service failed (HTTP 500: backend down)"}]
    assert payload["results"]


def test_every_member_failing_is_a_failure(fake):
    for kind in ("serper", "brave"):
        fake.script(kind, Reply(status=429, body={"message": "slow down"}))
    r, _ = run(multi_config(fake, kinds=("serper", "brave")))
    assert not r.ok and r.error_code == "too_many_requests"
    assert r.error.startswith("every engine failed: serper: ") and "brave: " in r.error


def test_members_run_concurrently(fake):
    for kind in ("serper", "brave", "searxng"):
        fake.script(kind, Reply(delay=0.6))
    r, elapsed = run(multi_config(fake))
    assert r.ok and elapsed < 1.2


def test_partial_results_are_not_cached(fake):
    fake.script("brave", Reply(status=500, body={}))

    async def go():
        async with search_service(multi_config(fake)) as svc:
            first = await svc.search(SearchRequest("latest stable rust release"))
            second = await svc.search(SearchRequest("latest stable rust release"))
            third = await svc.search(SearchRequest("latest stable rust release"))
            return first, second, third

    first, second, third = asyncio.run(go())
    assert first.engine_errors and not second.engine_errors and not second.cached
    assert third.cached  # the complete result is


@pytest.mark.parametrize(("engines", "message"), [
    ([{"id": "all", "type": "multi"}], "needs the ids of the engines"),
    ([{"id": "all", "type": "multi", "engines": ["nope"]}], "unknown engine 'nope'"),
    ([{"id": "a", "type": "multi", "engines": ["b"]}, {"id": "b", "type": "multi", "engines": ["a"]}],
     "is a multi engine itself"),
    ([{"id": "s", "type": "searxng", "baseURL": "http://127.0.0.1:1"},
      {"id": "all", "type": "multi", "engines": ["s", "s"]}], "listed twice"),
    ([{"id": "s", "type": "searxng", "baseURL": "http://127.0.0.1:1", "engines": ["x"]}], "only a multi engine"),
])
def test_config_errors(engines, message):
    with pytest.raises(ConfigError, match=message):
        parse(json.dumps(config_with(engines)), env={}, plugins=PLUGINS)


def hit(url: str) -> Hit:
    return Hit(url, url, "")


def test_fusion_scores():
    a = [hit("https://x.example/1"), hit("https://x.example/2"), hit("https://x.example/3")]
    b = [hit("https://x.example/3"), hit("https://www.x.example/2/")]
    fused = [h.url for h in fuse([a, b])]
    # 3: 1/63 + 1/61 > 2: 1/62 + 1/62 > 1: 1/61 alone; page 2 listed under two spellings is one page
    assert fused == ["https://x.example/3", "https://x.example/2", "https://x.example/1"]
    assert 1 / (RRF_K + 3) + 1 / (RRF_K + 1) > 2 / (RRF_K + 2) > 1 / (RRF_K + 1)


urls = st.sampled_from([f"https://{h}.example/{p}" for h in "abc" for p in ("", "x", "x/")])


@given(st.lists(st.lists(urls, max_size=6), max_size=4))
def test_fusion_keeps_every_page_once(rankings):
    fused = fuse([[hit(u) for u in r] for r in rankings])
    keys = [dedup_key(h.url) for h in fused]
    assert len(keys) == len(set(keys))
    assert set(keys) == {dedup_key(u) for r in rankings for u in r}
