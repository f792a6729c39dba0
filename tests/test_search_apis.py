"""The API engines Bocha, Zhipu, Baidu, Ollama, Jina, Perplexity, Firecrawl and Linkup against fakes on
the real wire (tests/fakes/search_apis.py): the request each sends, normalized and sanitized hits, and
each service's failures as structured errors."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hub.search import SearchRequest, SearchResult
from hub.search.render import tool_text

from .fakes.search_apis import KEYS
from .fakes.search_providers import Reply, config_with, search_service
from .helpers import hermetic

ROOT = Path(__file__).resolve().parent.parent
KINDS = list(KEYS)
CHINESE = ("bocha", "zhipu", "baidu")
ZH_QUERY = "今天的新闻"


@pytest.fixture
def fake(search_apis):
    return search_apis


def engine(fake, kind: str, **extra) -> dict:
    return {"id": kind, "type": kind, "apiKey": KEYS[kind], "baseURL": fake.base_url(fake.server, kind), **extra}


def search(fake, kind: str, query: str = "latest stable rust release", *, engine_extra=None, **kw) -> SearchResult:
    async def go():
        async with search_service(config_with([engine(fake, kind, **(engine_extra or {}))])) as svc:
            return await svc.search(SearchRequest(query, **kw))

    return asyncio.run(go())


def sent(fake, kind: str):
    calls = fake.calls(kind)
    assert len(calls) == 1, calls
    return calls[0]


# ---------------------------------------------------------------- requests on the wire


def test_bocha_request(fake):
    r = search(fake, "bocha", ZH_QUERY, count=3, recency="oneWeek", allowed_domains=["gov.cn", "cctv.com"],
               blocked_domains=["thepaper.cn"])
    assert r.ok, r.error
    req = sent(fake, "bocha")
    assert (req.method, req.path) == ("POST", "/bocha/v1/web-search")
    assert req.headers["authorization"] == f"Bearer {KEYS['bocha']}"
    assert req.json == {"query": ZH_QUERY, "count": 3, "freshness": "oneWeek", "include": "gov.cn|cctv.com",
                        "exclude": "thepaper.cn", "summary": True}


def test_zhipu_request_is_one_call_without_chat(fake):
    long_query = "今" * 80
    r = search(fake, "zhipu", long_query, count=4, recency="oneDay", allowed_domains=["gov.cn"],
               engine_extra={"options": {"search_engine": "search_pro"}})
    assert r.ok, r.error
    req = sent(fake, "zhipu")
    assert (req.method, req.path) == ("POST", "/zhipu/api/paas/v4/web_search")
    assert req.headers["authorization"] == f"Bearer {KEYS['zhipu']}"
    assert req.json == {"search_query": "今" * 70, "count": 4, "search_recency_filter": "oneDay",
                        "search_domain_filter": "gov.cn", "search_engine": "search_pro"}


def test_zhipu_sogou_count_is_a_multiple_of_ten(fake):
    assert search(fake, "zhipu", ZH_QUERY, count=3, engine_extra={"options": {"search_engine": "search_pro_sogou"}}).ok
    assert sent(fake, "zhipu").json["count"] == 10


def test_baidu_request(fake):
    query = "北京有哪些旅游景区" * 10  # 90 CJK characters = 180 units: cut to 72 units (36 characters)
    r = search(fake, "baidu", query, count=7, recency="oneMonth", allowed_domains=["gov.cn"])
    assert r.ok, r.error
    req = sent(fake, "baidu")
    assert (req.method, req.path) == ("POST", "/baidu/v2/ai_search/web_search")
    assert req.headers["authorization"] == f"Bearer {KEYS['baidu']}"
    assert req.json == {"messages": [{"role": "user", "content": query[:36]}],
                        "resource_type_filter": [{"type": "web", "top_k": 7}], "search_recency_filter": "month",
                        "search_filter": {"match": {"site": ["gov.cn"]}},
                        "search_source": "baidu_search_v2"}


def test_ollama_request(fake):
    assert search(fake, "ollama", count=25).ok  # clamped to Ollama's maximum of 10
    req = sent(fake, "ollama")
    assert (req.method, req.path) == ("POST", "/ollama/api/web_search")
    assert req.headers["authorization"] == f"Bearer {KEYS['ollama']}"
    assert req.json == {"query": "latest stable rust release", "max_results": 10}


def test_jina_request_asks_for_serp_only(fake):
    r = search(fake, "jina", count=3, user_location={"country": "DE"}, allowed_domains=["rust-lang.org"])
    assert r.ok, r.error
    req = sent(fake, "jina")
    assert (req.method, req.path) == ("GET", "/jina/")
    assert req.headers["authorization"] == f"Bearer {KEYS['jina']}"
    assert req.headers["accept"] == "application/json"
    assert req.headers["x-respond-with"] == "no-content"
    assert req.headers["x-site"] == "rust-lang.org"
    assert req.params == {"q": "latest stable rust release", "num": "3", "gl": "de"}


def test_perplexity_request(fake):
    r = search(fake, "perplexity", count=4, recency="oneYear", user_location={"country": "us"},
               blocked_domains=["wikipedia.org"])
    assert r.ok, r.error
    req = sent(fake, "perplexity")
    assert (req.method, req.path) == ("POST", "/perplexity/search")
    assert req.json == {"query": "latest stable rust release", "max_results": 4, "search_recency_filter": "year",
                        "country": "US", "search_domain_filter": ["-wikipedia.org"]}


def test_firecrawl_request_sends_only_v2_fields(fake):
    r = search(fake, "firecrawl", count=3, recency="oneWeek", user_location={"country": "GB"},
               allowed_domains=["rust-lang.org"], blocked_domains=["wikipedia.org"])
    assert r.ok, r.error
    req = sent(fake, "firecrawl")
    assert (req.method, req.path) == ("POST", "/firecrawl/v2/search")
    # include and exclude are mutually exclusive on Firecrawl: the blocked domain is applied by us
    assert req.json == {"query": "latest stable rust release", "limit": 3, "tbs": "qdr:w", "country": "gb",
                        "includeDomains": ["rust-lang.org"]}


def test_linkup_request(fake):
    r = search(fake, "linkup", count=2, recency="oneMonth", blocked_domains=["wikipedia.org"])
    assert r.ok, r.error
    req = sent(fake, "linkup")
    body = dict(req.json)
    start = datetime.fromisoformat(body.pop("fromDate")).date()
    assert abs((datetime.now(UTC).date() - start) - timedelta(days=31)) <= timedelta(days=1)
    assert body == {"q": "latest stable rust release", "maxResults": 2, "excludeDomains": ["wikipedia.org"],
                    "depth": "standard", "outputType": "searchResults"}


@pytest.mark.parametrize(
    ("kind", "name", "expected"),
    [
        ("bocha", "freshness", {"oneDay": "oneDay", "oneWeek": "oneWeek", "oneMonth": "oneMonth", "oneYear": "oneYear"}),
        ("zhipu", "search_recency_filter", {"oneDay": "oneDay", "oneWeek": "oneWeek", "oneMonth": "oneMonth",
                                            "oneYear": "oneYear"}),
        ("baidu", "search_recency_filter", {"oneDay": "week", "oneWeek": "week", "oneMonth": "month", "oneYear": "year"}),
        ("perplexity", "search_recency_filter", {"oneDay": "day", "oneWeek": "week", "oneMonth": "month",
                                                 "oneYear": "year"}),
        ("firecrawl", "tbs", {"oneDay": "qdr:d", "oneWeek": "qdr:w", "oneMonth": "qdr:m", "oneYear": "qdr:y"}),
    ],
)
def test_recency_mapping(fake, kind, name, expected):
    for recency, value in expected.items():
        fake.reset()
        search(fake, kind, ZH_QUERY, recency=recency)
        assert sent(fake, kind).json[name] == value, recency
    fake.reset()
    search(fake, kind, ZH_QUERY, recency="noLimit")
    assert sent(fake, kind).json.get(name) in (None, "noLimit")


def test_baidu_one_day_drops_older_dated_hits(fake):
    now = datetime.now(UTC) + timedelta(hours=8)  # Baidu's dates are Beijing time
    fresh = (now - timedelta(hours=2)).strftime("%Y-%m-%d %H:%M:%S")
    old = (now - timedelta(days=3)).strftime("%Y-%m-%d %H:%M")
    refs = [{"id": 1, "url": "https://a.example.cn/1", "title": "新", "date": fresh, "content": "x", "type": "web"},
            {"id": 2, "url": "https://a.example.cn/2", "title": "旧", "date": old, "content": "y", "type": "web"},
            {"id": 3, "url": "https://a.example.cn/3", "title": "无日期", "content": "z", "type": "web"}]
    fake.script("baidu", Reply(body={"request_id": "r", "references": refs}))
    r = search(fake, "baidu", ZH_QUERY, recency="oneDay")
    assert [h.title for h in r.hits] == ["新", "无日期"]


# ---------------------------------------------------------------- normalized, sanitized results


@pytest.mark.parametrize("kind", CHINESE)
def test_chinese_results_are_normalized_and_sanitized(fake, kind):
    r = search(fake, kind, ZH_QUERY, count=10)
    assert r.ok, r.error
    assert r.engine == kind and r.query == ZH_QUERY
    assert [h.url for h in r.hits] == [
        "https://www.gov.cn/yaowen/2025-11/22/content_1.htm",
        "https://tv.cctv.com/lm/xwlb/day/20251122.shtml",
        "https://www.thepaper.cn/newsDetail_forward_1",
    ]  # the duplicate (trailing slash), the javascript: link and Baidu's video are gone
    first = r.hits[0]
    assert first.title == "今日要闻：国务院常务会议召开"
    assert first.snippet.startswith("国务院总理主持召开国务院常务会议，部署<重点工作>。")
    assert "\u202e" not in r.hits[2].snippet and "\x00" not in r.hits[2].snippet
    assert first.published and first.published.startswith("2025-11-22")
    payload = json.loads(tool_text(r)[0])
    assert payload["results"][0]["n"] == 1 and "untrusted" in payload["note"]


@pytest.mark.parametrize("kind", ["ollama", "jina", "perplexity", "firecrawl", "linkup"])
def test_results_are_normalized(fake, kind):
    r = search(fake, kind, count=10)
    assert r.ok, r.error
    urls = [h.url for h in r.hits]
    assert urls[:2] == ["https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/",
                        "https://doc.rust-lang.org/stable/releases.html"]
    assert "javascript:alert(1)" not in urls
    assert "https://blog.rust-lang.org/2025/10/30/Rust-1.91.0" not in urls  # the duplicate
    assert "https://example.org/rust.png" not in urls  # Linkup's image result
    assert r.hits[0].snippet == "The Rust team is happy to announce a new version of Rust, 1.91.0 & more."
    assert not any("\u202e" in h.snippet or "\x00" in h.snippet for h in r.hits)


def test_firecrawl_news_results_follow_web_results(fake):
    r = search(fake, "firecrawl", count=10)
    assert r.hits[-1].url == "https://example-news.com/rust-191"


# ---------------------------------------------------------------- failures


@pytest.mark.parametrize("kind", KINDS)
def test_bad_key_is_an_unavailable_error_without_the_key(fake, kind):
    wrong = f"wrong-{kind}-key-5f0a8e2c3d94b17"
    r = search(fake, kind, ZH_QUERY, engine_extra={"apiKey": wrong})
    assert not r.ok and r.error_code == "unavailable"
    assert "HTTP 401" in r.error, r.error
    assert wrong not in r.error and wrong[:12] not in r.error


@pytest.mark.parametrize("kind", KINDS)
def test_rate_limit_is_too_many_requests(fake, kind):
    fake.script(kind, Reply(status=429, body={"code": "429", "message": "You have reached the request limit"}))
    r = search(fake, kind, ZH_QUERY)
    assert r.error_code == "too_many_requests", r.error


def test_bocha_403_is_an_empty_balance(fake):
    fake.script("bocha", Reply(status=403, body={"code": "403", "message": "You do not have enough money"}))
    r = search(fake, "bocha", ZH_QUERY)
    assert r.error_code == "unavailable" and "no balance left" in r.error and "enough money" in r.error


def test_baidu_error_inside_a_200_answer(fake):
    fake.script("baidu", Reply(body={"request_id": "r", "code": 216100, "message": "invalid query"}))
    r = search(fake, "baidu", ZH_QUERY)
    assert not r.ok and "216100" in r.error and "invalid query" in r.error


def test_baidu_rate_limit_inside_a_200_answer(fake):
    fake.script("baidu", Reply(body={"request_id": "r", "code": "RATE_LIMIT_SEARCH_QPS", "message": "qps exceeded"}))
    assert search(fake, "baidu", ZH_QUERY).error_code == "too_many_requests"


def test_bocha_error_envelope_inside_a_200_answer(fake):
    fake.script("bocha", Reply(body={"code": "500", "message": "internal", "log_id": "x"}))
    r = search(fake, "bocha", ZH_QUERY)
    assert not r.ok and "internal" in r.error


def test_linkup_no_result_is_no_results_not_an_error_status(fake):
    fake.script("linkup", Reply(status=400, body={"error": {"code": "SEARCH_QUERY_NO_RESULT",
                                                             "message": "no result", "details": []}}))
    r = search(fake, "linkup")
    assert r.error_code == "unavailable" and r.error.startswith("no results")


def test_linkup_out_of_credits_is_not_a_rate_limit(fake):
    fake.script("linkup", Reply(status=429, body={"error": {"code": "INSUFFICIENT_FUNDS_CREDITS",
                                                             "message": "no credits", "details": []}}))
    r = search(fake, "linkup")
    assert r.error_code == "unavailable" and "out of credits" in r.error


@pytest.mark.parametrize("kind", KINDS)
def test_malformed_answers_are_errors(fake, kind):
    fake.script(kind, Reply(raw=b"{not json"))
    assert search(fake, kind, ZH_QUERY).error == "the search service sent malformed JSON"
    fake.reset()
    fake.script(kind, Reply(body=["a", "list"]))
    r = search(fake, kind, ZH_QUERY)
    assert not r.ok and r.error_code == "unavailable"


def test_missing_key_is_a_config_error():
    from hub.config import ConfigError, parse
    from hub.runtime import PLUGINS

    for kind in KINDS:
        with pytest.raises(ConfigError, match=f"of type {kind} needs an apiKey"):
            parse(json.dumps(config_with([{"id": kind, "type": kind}])), env={}, plugins=PLUGINS)


# ---------------------------------------------------------------- Jina's reader


# ---------------------------------------------------------------- `searchhub search "今天的新闻" --engine ...`


@pytest.mark.parametrize("kind", CHINESE)
def test_cli_searches_chinese_engines(fake, kind, tmp_path):
    path = tmp_path / "engines.json"
    path.write_text(json.dumps(hermetic(config_with([engine(fake, k) for k in CHINESE]))))
    env = {k: v for k, v in os.environ.items() if k != "SEARCHHUB_CONFIG"}
    p = subprocess.run([sys.executable, "-m", "hub", "search", ZH_QUERY, "--config", str(path), "--engine", kind,
                        "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    payload = json.loads(p.stdout)
    assert payload["engine"] == kind and payload["query"] == ZH_QUERY
    assert payload["hits"][0]["title"] == "今日要闻：国务院常务会议召开"
    assert len(fake.calls(kind)) == 1
    assert KEYS[kind] not in p.stdout + p.stderr
