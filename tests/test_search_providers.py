"""The API search engines against fake Serper, Brave, Exa, Tavily and SearXNG on the real wire."""

from __future__ import annotations

import asyncio
import socket
import time
from datetime import UTC, datetime, timedelta

import pytest

from hub.search import SearchRequest, SearchResult
from hub.search.render import tool_text

from .fakes.search_providers import KEYS, Reply, config_with, search_service

KINDS = ["serper", "brave", "exa", "tavily", "searxng"]


@pytest.fixture
def fake(search_fakes):
    """The shared fake search providers (tests/conftest.py), reset for this test."""
    return search_fakes


def engine(fake, kind: str, **extra) -> dict:
    e = {"id": kind, "type": kind, "baseURL": fake.base_url(fake.server, kind)}
    if kind in KEYS:
        e["apiKey"] = KEYS[kind]
    return {**e, **extra}


def search(fake, kind: str, query: str = "latest stable rust release", *, engine_extra=None, ws=None,
           **kw) -> SearchResult:
    async def go():
        async with search_service(config_with([engine(fake, kind, **(engine_extra or {}))], **(ws or {}))) as svc:
            return await svc.search(SearchRequest(query, **kw))

    return asyncio.run(go())


def sent(fake, kind: str):
    calls = fake.calls(kind)
    assert len(calls) == 1
    return calls[0]


def searched(fake, kind: str, **kw):
    """The one request a successful search with `kind` sent."""
    r = search(fake, kind, **kw)
    assert r.ok, r.error
    return sent(fake, kind)


# ---------------------------------------------------------------- requests on the wire


def test_serper_request(fake):
    req = searched(fake, "serper", count=4, recency="oneDay", user_location={"country": "de"})
    assert (req.method, req.path) == ("POST", "/serper/search")
    assert req.headers["x-api-key"] == KEYS["serper"]
    assert req.headers["content-type"] == "application/json"
    assert req.json == {"q": "latest stable rust release", "num": 4, "tbs": "qdr:d", "gl": "de"}


def test_brave_request(fake):
    req = searched(fake, "brave", count=3, recency="oneMonth", user_location={"country": "gb"})
    assert (req.method, req.path) == ("GET", "/brave/res/v1/web/search")
    assert req.headers["x-subscription-token"] == KEYS["brave"]
    assert req.headers["accept"] == "application/json"
    assert req.params == {"q": "latest stable rust release", "count": "3", "freshness": "pm", "country": "GB"}


def test_exa_request(fake):
    req = searched(fake, "exa", count=2, recency="oneWeek", allowed_domains=["rust-lang.org"])
    assert (req.method, req.path) == ("POST", "/exa/search")
    assert req.headers["x-api-key"] == KEYS["exa"]
    body = dict(req.json)
    start = datetime.strptime(body.pop("startPublishedDate"), "%Y-%m-%dT%H:%M:%S.000Z").replace(tzinfo=UTC)
    assert abs(start - (datetime.now(UTC) - timedelta(days=7))) < timedelta(minutes=1)
    assert body == {"query": "latest stable rust release", "numResults": 2, "type": "auto",
                    "contents": {"text": {"maxCharacters": 1000}}, "includeDomains": ["rust-lang.org"]}


def test_tavily_request(fake):
    r = search(fake, "tavily", count=3, recency="oneYear", blocked_domains=["wikipedia.org"])
    assert r.ok, r.error
    req = sent(fake, "tavily")
    assert (req.method, req.path) == ("POST", "/tavily/search")
    assert req.headers["authorization"] == f"Bearer {KEYS['tavily']}"
    assert "api_key" not in req.json
    assert req.json == {"query": "latest stable rust release", "max_results": 3, "search_depth": "basic",
                        "topic": "general", "include_answer": True, "time_range": "year",
                        "exclude_domains": ["wikipedia.org"]}
    assert r.summary == "The latest stable Rust release is 1.91.0."


def test_searxng_request_is_keyless(fake):
    req = searched(fake, "searxng", recency="oneWeek", count=10)
    assert (req.method, req.path) == ("GET", "/searxng/search")
    assert "authorization" not in req.headers
    assert req.params == {"q": "latest stable rust release", "format": "json", "time_range": "week"}


@pytest.mark.parametrize("kind", KINDS)
def test_no_limit_sends_no_recency(fake, kind):
    assert search(fake, kind, recency="noLimit").ok
    req = sent(fake, kind)
    wire = {**req.params, **(req.json or {})}
    for name in ("tbs", "freshness", "startPublishedDate", "time_range"):
        assert name not in wire


@pytest.mark.parametrize(
    ("kind", "where", "name", "expected"),
    [
        ("serper", "json", "tbs", {"oneDay": "qdr:d", "oneWeek": "qdr:w", "oneMonth": "qdr:m", "oneYear": "qdr:y"}),
        ("brave", "params", "freshness", {"oneDay": "pd", "oneWeek": "pw", "oneMonth": "pm", "oneYear": "py"}),
        ("tavily", "json", "time_range", {"oneDay": "day", "oneWeek": "week", "oneMonth": "month", "oneYear": "year"}),
        ("searxng", "params", "time_range", {"oneDay": "day", "oneWeek": "week", "oneMonth": "month", "oneYear": "year"}),
    ],
)
def test_recency_mapping(fake, kind, where, name, expected):
    for recency, value in expected.items():
        fake.reset()
        assert search(fake, kind, recency=recency).ok
        assert getattr(sent(fake, kind), where)[name] == value


def test_count_is_clamped_to_the_provider_limit(fake):
    search(fake, "brave", count=50)
    assert sent(fake, "brave").params["count"] == "20"
    fake.reset()
    search(fake, "tavily", count=50)
    assert sent(fake, "tavily").json["max_results"] == 20


def test_engine_options_are_defaults_the_search_overrides(fake):
    search(fake, "serper", engine_extra={"options": {"hl": "de", "num": 99}}, count=3)
    assert sent(fake, "serper").json == {"q": "latest stable rust release", "num": 3, "hl": "de"}


def test_domain_filters_become_site_operators_and_apply_on_our_side(fake):
    r = search(fake, "serper", count=10, allowed_domains=["rust-lang.org", "https://en.wikipedia.org/x"])
    assert sent(fake, "serper").json["q"] == "latest stable rust release (site:rust-lang.org OR site:en.wikipedia.org)"
    # The fake ignores site: like a sloppy provider; our filter still holds (subdomains match).
    hosts = {h.url.split("/")[2] for h in r.hits}
    assert hosts == {"blog.rust-lang.org", "doc.rust-lang.org", "en.wikipedia.org"}
    fake.reset()
    r = search(fake, "brave", count=10, blocked_domains=["rust-lang.org"])
    assert sent(fake, "brave").params["q"] == "latest stable rust release -site:rust-lang.org"
    assert all("rust-lang.org" not in h.url for h in r.hits) and r.hits


# ---------------------------------------------------------------- normalized, sanitized results


def test_brave_result_is_normalized_and_sanitized(fake):
    r = search(fake, "brave", count=10)
    assert r.ok and not r.cached
    urls = [h.url for h in r.hits]
    assert urls == [
        "https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/",  # its slash-less duplicate is gone
        "https://doc.rust-lang.org/stable/releases.html",
        "https://en.wikipedia.org/wiki/Rust_(programming_language)",  # javascript: is gone
        "https://news.example.com/rust/roundup",
    ]
    first = r.hits[0]
    assert first.snippet == "The Rust team is happy to announce a new version of Rust, 1.91.0 & more."
    assert first.source == "blog.rust-lang.org" and first.published == "2025-10-30T00:00:00"
    assert "\u202e" not in r.hits[2].snippet and "\x00" not in r.hits[3].snippet
    payload = r.to_payload()
    assert payload["engine"] == "brave" and [h["n"] for h in payload["hits"]] == [1, 2, 3, 4]


def test_serper_answer_box_is_the_summary(fake):
    r = search(fake, "serper", count=3)
    assert r.summary == "1.91.0"
    assert r.hits[0].title == "Announcing Rust 1.91.0 | Rust Blog"


def test_result_char_cap_truncates_snippets(fake):
    long = "word " * 500
    fake.script("tavily", Reply(body={"query": "q", "results": [
        {"title": "T" * 1000, "url": "https://a.example/1", "content": long, "score": 1}]}))
    r = search(fake, "tavily", ws={"resultCharCap": 100})
    assert len(r.hits[0].snippet) <= 100 and r.hits[0].snippet.endswith("…")
    assert len(r.hits[0].title) <= 100


def test_whole_result_is_capped_in_bytes(fake):
    results = [{"title": f"t{i}", "url": f"https://a.example/{i}", "content": "x" * 900} for i in range(20)]
    fake.script("tavily", Reply(body={"query": "q", "results": results}))
    r = search(fake, "tavily", count=20, ws={"maxTotalResultBytes": 4096})
    assert r.ok and 1 <= len(r.hits) < 20
    assert len(tool_text(r)[0].encode()) <= 4096


# ---------------------------------------------------------------- failures are values


@pytest.mark.parametrize(
    ("kind", "status", "body", "code", "words"),
    [
        ("serper", 429, {"message": "Too many requests", "statusCode": 429}, "too_many_requests", "rate limited"),
        ("serper", 403, {"message": "Not enough credits", "statusCode": 403}, "unavailable", "Not enough credits"),
        ("brave", 429, {"type": "ErrorResponse", "error": {"status": 429, "code": "RATE_LIMITED",
                                                            "detail": "Request rate limit exceeded"}},
         "too_many_requests", "Request rate limit exceeded"),
        ("brave", 402, {"type": "ErrorResponse", "error": {"status": 402, "code": "CREDIT_EXHAUSTED",
                                                            "detail": "Credits exhausted"}}, "unavailable", "quota"),
        ("exa", 500, {"requestId": "r", "error": "Internal error"}, "unavailable", "HTTP 500"),
        ("tavily", 432, {"detail": {"error": "Plan limit exceeded"}}, "unavailable", "Plan limit exceeded"),
        ("searxng", 429, None, "too_many_requests", "HTTP 429"),
    ],
)
def test_http_errors(fake, kind, status, body, code, words):
    fake.script(kind, Reply(status=status, body=body, raw=b"Too Many Requests" if body is None else None,
                            headers={"retry-after": "2"} if status == 429 else {}))
    r = search(fake, kind)
    assert not r.ok and r.error_code == code
    assert words in r.error
    assert r.to_payload() == {"error": r.error, "engine": kind}


@pytest.mark.parametrize(("kind", "words"), [
    ("serper", "HTTP 403"), ("brave", "subscription token is invalid"), ("exa", "Invalid API key"),
    ("tavily", "invalid API key"),
])
def test_bad_key(fake, kind, words):
    r = search(fake, kind, engine_extra={"apiKey": "wrong-key-123456"})
    assert r.error_code == "unavailable" and words in r.error
    assert "wrong-key-123456" not in r.error


@pytest.mark.parametrize("kind", KINDS)
def test_malformed_json(fake, kind):
    fake.script(kind, Reply(raw=b'{"results": [ oops'))
    r = search(fake, kind)
    assert r.error_code == "unavailable" and "malformed JSON" in r.error


@pytest.mark.parametrize(("kind", "body"), [
    ("serper", {"organic": "nope"}), ("brave", {"web": {"results": {"a": 1}}}), ("exa", {"results": 3}),
    ("tavily", {"results": "x"}), ("searxng", ["not", "an", "object"]),
])
def test_wrong_shape(fake, kind, body):
    fake.script(kind, Reply(body=body))
    r = search(fake, kind)
    assert r.error_code == "unavailable" and "malformed response" in r.error


@pytest.mark.parametrize(("kind", "body"), [
    ("serper", {"searchParameters": {}, "organic": []}), ("brave", {"type": "search", "query": {}}),
    ("exa", {"requestId": "r", "results": []}), ("tavily", {"query": "q", "results": []}),
    ("searxng", {"query": "q", "results": [], "unresponsive_engines": []}),
])
def test_empty_results_are_an_error(fake, kind, body):
    fake.script(kind, Reply(body=body))
    r = search(fake, kind)
    assert not r.ok and r.error_code == "unavailable" and r.error.startswith("no results")


def test_searxng_with_every_engine_down(fake):
    fake.script("searxng", Reply(body={"query": "q", "number_of_results": 0, "results": [], "answers": [],
                                       "unresponsive_engines": [["google", "timeout"], ["brave", "Suspended: too many requests"]]}))
    r = search(fake, "searxng")
    assert r.error == "every SearXNG engine failed (google: timeout, brave: Suspended: too many requests)"


def test_searxng_without_json_format(fake):
    fake.script("searxng", Reply(status=403, raw=b"<html>403 Forbidden</html>"))
    r = search(fake, "searxng")
    assert "enable 'json'" in r.error and r.error_code == "unavailable"


def test_timeout(fake):
    fake.script("exa", Reply(delay=1.0))
    started = time.monotonic()
    r = search(fake, "exa", engine_extra={"timeoutMs": 200})
    assert time.monotonic() - started < 0.9
    assert r.error_code == "unavailable" and "timed out after 0.2 s" in r.error


def test_webSearch_timeout_applies_without_an_engine_timeout(fake):
    fake.script("serper", Reply(delay=1.0))
    r = search(fake, "serper", ws={"timeoutMs": 250})
    assert "timed out after 0.25 s" in r.error


def test_unreachable_service():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the search: nothing listens there

    async def go():
        cfg = config_with([{"id": "s", "type": "searxng", "baseURL": f"http://127.0.0.1:{port}"}])
        async with search_service(cfg) as svc:
            return await svc.search(SearchRequest("q"))

    r = asyncio.run(go())
    assert r.error_code == "unavailable" and "cannot reach" in r.error
