"""Ollama's web API (`POST /api/web_search`, `POST /api/web_fetch`; hub/protocols/ollama/)
over HTTP on loopback, with httpx and with Ollama's own Python client library (`ollama`), whose
`web_search()` and `web_fetch()` post to https://ollama.com whatever `host` says: an httpx request hook
sends those two calls to the gateway, as docs/mcp.md tells users to. Searches go to the fake SearXNG,
pages come from the fake site on 127.0.0.1 (opened through webFetch.allowHosts / allowPorts)."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import httpx
import msgspec
import ollama
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hub.fetcher.cache import FetchCache, cache_key
from hub.fetcher.extract import MAX_LINKS, links_of
from hub.fetcher.result import UNSUPPORTED_CONTENT_TYPE, URL_NOT_ACCESSIBLE, URL_NOT_ALLOWED, FetchResult
from hub.protocols import ollama as protocol
from hub.search.base import Hit, SearchRequest, SearchResult
from hub.store import MemoryStore

from .fakes.search_providers import Reply
from .fakes.web import ARTICLE_TITLE, DEEP_FACT, MAIN_SENTENCES, NAV_WORDS, SCRIPT_TEXT, FakeWeb
from .helpers import base_config, searxng_engine
from .test_read_pages import QUESTION, teasers
from .test_search_api import metric
from .test_traces import ADMIN, wait_trace

KEY, OTHER = "sk-ollama-client-7f3a", "sk-ollama-other-19c2"


def config(model_url: str, fakes, web: FakeWeb | None, *, read: dict | None = None, keys: list | None = None,
           web_fetch: dict | None = None) -> dict:
    """SearXNG on the fake providers, reading off unless `read` says otherwise, the fake site opened
    (unless web is None: the default address policy), API keys and an admin key."""
    opened = {"allowHosts": ["127.0.0.1"], "allowPorts": [80, 443, web.port]} if web is not None else {}
    cfg = base_config(model_url,
                      webSearch={"engines": [searxng_engine(fakes)], "cacheTtlMs": 0,
                                 "readPages": read if read is not None else {"enabled": False}},
                      webFetch={"cacheTtlMs": 0, **opened, **(web_fetch or {})})
    cfg["server"].update({"apiKeys": keys if keys is not None else [{"key": KEY, "name": "ollama"}, OTHER],
                          "adminKeys": [ADMIN]})
    return cfg


def post(gw, path: str, body, key: str | None = KEY, raw: bytes | None = None) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    if raw is not None:
        return httpx.post(gw.url + path, content=raw, headers={**headers, "content-type": "application/json"},
                          timeout=30)
    return httpx.post(gw.url + path, json=body, headers=headers, timeout=30)


def assert_ollama_error(r: httpx.Response, status: int, needle: str = "") -> str:
    """An error in Ollama's shape: `{"error": "<message>"}` and nothing else."""
    assert r.status_code == status, r.text
    doc = r.json()
    assert set(doc) == {"error"} and isinstance(doc["error"], str) and doc["error"], doc
    assert needle in doc["error"], doc["error"]
    return doc["error"]


def to_gateway(url: str):
    """The hook docs/mcp.md gives users: Ollama's web calls go to searchhub instead of ollama.com."""
    def hook(request: httpx.Request) -> None:
        if request.url.host == "ollama.com" and request.url.path.startswith("/api/web_"):
            request.url = httpx.URL(url.rstrip("/") + request.url.raw_path.decode())
            request.headers["host"] = request.url.netloc.decode()
    return hook


def ollama_client(gw, key: str | None = KEY, **kw) -> ollama.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else None
    return ollama.Client(host=gw.url, headers=headers, event_hooks={"request": [to_gateway(gw.url)]}, **kw)


# ---------------------------------------------------------------- /api/web_search


def test_web_search_answers_titles_urls_and_the_snippets(gateway, fake_model, search_fakes) -> None:
    gw = gateway(config(fake_model.url, search_fakes, None))
    r = post(gw, "/api/web_search", {"query": "latest stable rust release"})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert set(r.json()) == {"results"} and 1 < len(results) <= protocol.DEFAULT_RESULTS
    assert all(set(x) == {"title", "url", "content"} and x["title"] and x["content"] for x in results)
    assert all(x["url"].startswith("https://") for x in results)  # the engine's javascript: hit never shows
    assert results[0]["url"] == "https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/"
    # the same hits, snippets and order as /v1/search gives for the same search
    hits = post(gw, "/v1/search", {"query": "latest stable rust release", "count": 5}).json()["hits"]
    assert [(h["title"], h["url"], h["snippet"]) for h in hits] == [(x["title"], x["url"], x["content"])
                                                                     for x in results]
    assert "<strong>" not in results[0]["content"]  # sanitized like every result
    assert len(post(gw, "/api/web_search", {"query": "rust", "max_results": 2}).json()["results"]) == 2


def test_web_search_content_is_the_passage_read_from_the_page(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site, read={}))
    search_fakes.script("searxng", teasers(site, "/deep", "/article"))
    r = post(gw, "/api/web_search", {"query": QUESTION, "max_results": 2})
    assert r.status_code == 200, r.text
    deep, article = r.json()["results"]
    assert deep["url"] == site.origin + "/deep" and deep["title"] == "Page /deep"
    assert DEEP_FACT in deep["content"] and "The harbour museum keeps records." != deep["content"]
    assert article["content"] and article["content"] != "The harbour museum keeps records."
    assert {"/deep", "/article"} <= {path for path, _ in site.requests}


def test_reading_off_gives_the_snippet_and_reads_nothing(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    search_fakes.script("searxng", teasers(site, "/deep"))
    (hit,) = post(gw, "/api/web_search", {"query": QUESTION}).json()["results"]
    assert hit["content"] == "The harbour museum keeps records." and DEEP_FACT not in hit["content"]
    assert site.connections == 0


def test_engines_down_are_502_and_rate_limits_503(gateway, fake_model, search_fakes) -> None:
    gw = gateway(config(fake_model.url, search_fakes, None))
    search_fakes.script("searxng", Reply(status=500, body={"message": "boom"}))
    assert_ollama_error(post(gw, "/api/web_search", {"query": "rust"}), 502, "search failed (engine searxng)")
    search_fakes.script("searxng", Reply(status=429, body={"message": "slow down"}))
    r = post(gw, "/api/web_search", {"query": "rust"})
    assert_ollama_error(r, 503)
    assert r.headers["retry-after"] == "5"


# ---------------------------------------------------------------- /api/web_fetch


def test_web_fetch_returns_the_title_main_text_and_links(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    r = post(gw, "/api/web_fetch", {"url": site.origin + "/article"})
    assert r.status_code == 200, r.text
    page = r.json()
    assert set(page) == {"title", "content", "links"} and page["title"].startswith(ARTICLE_TITLE)
    assert all(s in page["content"] for s in MAIN_SENTENCES)
    assert not any(w in page["content"] for w in NAV_WORDS) and SCRIPT_TEXT not in page["content"]
    # every link of the page, navigation included, absolute, each once, in document order
    assert page["links"][:3] == [site.origin + "/", site.origin + "/login", site.origin + "/news"]
    assert {site.origin + "/privacy", site.origin + "/cookies", site.origin + "/b"} <= set(page["links"])
    assert len(page["links"]) == len(set(page["links"])) == 11
    # a redirect: the links are the final page's; a text page has none
    moved = post(gw, "/api/web_fetch", {"url": site.origin + "/redirect?to=/article"}).json()
    assert moved["links"] == page["links"] and moved["content"] == page["content"]
    assert post(gw, "/api/web_fetch", {"url": site.origin + "/notes.txt"}).json() == {
        "title": "", "content": "Plain notes: line one.\nLine two.", "links": []}


def test_the_page_cache_keeps_the_links(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site, web_fetch={"cacheTtlMs": 60_000}))
    first = post(gw, "/api/web_fetch", {"url": site.origin + "/article"}).json()
    again = post(gw, "/api/web_fetch", {"url": site.origin + "/article"}).json()
    assert again == first and len(first["links"]) == 11
    assert [p for p, _ in site.requests].count("/article") == 1  # the second came from the cache


def test_a_cache_entry_from_before_links_reads_as_a_page_without_links() -> None:
    async def run() -> None:
        store = MemoryStore()
        cache = FetchCache(store, 60, "policy")
        old = msgspec.json.encode(["https://example.org/", "Old", "old text", "2026-01-01T00:00:00Z", False,
                                   "text/html"])  # the six fields an entry had before links
        await store.set(cache_key("https://example.org/", "policy"), old, 60)
        page = await cache.get("https://example.org/")
        assert page is not None and page.text == "old text" and page.links == () and page.cached
        await cache.put(FetchResult("https://example.org/a", "https://example.org/a", "New", "new text",
                                    links=("https://example.org/b",)))
        assert (await cache.get("https://example.org/a")).links == ("https://example.org/b",)
        raw = await store.get(cache_key("https://example.org/a", "policy"))
        assert msgspec.json.decode(raw)[:6] == ["https://example.org/a", "New", "new text", "", False,
                                                "text/plain"]  # an older reader still finds its six fields

    asyncio.run(run())


def test_a_private_address_is_refused_without_a_connection(gateway, fake_model, search_fakes, site) -> None:
    # the site's port is allowed, its address is not (the default address policy)
    gw = gateway(config(fake_model.url, search_fakes, None, web_fetch={"allowPorts": [80, 443, site.port]}))
    assert_ollama_error(post(gw, "/api/web_fetch", {"url": site.origin + "/article"}), 403, "non-public")
    assert_ollama_error(post(gw, "/api/web_fetch", {"url": "http://169.254.169.254/latest/meta-data/"}), 403)
    assert_ollama_error(post(gw, "/api/web_fetch", {"url": "http://2130706433/"}), 403)
    assert site.connections == 0


def test_fetch_failures_of_the_site(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    assert_ollama_error(post(gw, "/api/web_fetch", {"url": site.origin + "/missing"}), 502, "HTTP 404")
    assert_ollama_error(post(gw, "/api/web_fetch", {"url": site.origin + "/image.png"}), 422, "not supported")
    r = post(gw, "/api/web_fetch", {"url": site.origin + "/limited"})
    assert_ollama_error(r, 503, "rate limiting")
    assert r.headers["retry-after"] == "5"


def test_web_fetch_turned_off_is_an_ollama_shaped_404(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site, web_fetch={"enabled": False}))
    assert_ollama_error(post(gw, "/api/web_fetch", {"url": site.origin + "/article"}), 404, "turned off")
    assert site.connections == 0


# ---------------------------------------------------------------- keys, budgets, bad bodies


def test_keys_and_budgets(gateway, fake_model, search_fakes, site) -> None:
    keys = [{"key": KEY, "name": "ollama", "searchesPerDay": 1, "fetchesPerDay": 1}, OTHER]
    gw = gateway(config(fake_model.url, search_fakes, site, keys=keys))
    for path, body in (("/api/web_search", {"query": "rust"}), ("/api/web_fetch", {"url": site.origin + "/article"})):
        assert_ollama_error(post(gw, path, body, key=None), 401, "API key")
        assert_ollama_error(post(gw, path, body, key="sk-wrong"), 401, "API key")
    assert post(gw, "/api/web_search", {"query": "rust"}).status_code == 200
    r = post(gw, "/api/web_search", {"query": "rust"})
    assert_ollama_error(r, 429, "(searchesPerDay)")
    assert 0 < int(r.headers["retry-after"]) <= 86400
    assert post(gw, "/api/web_fetch", {"url": site.origin + "/article"}).status_code == 200
    r = post(gw, "/api/web_fetch", {"url": site.origin + "/notes.txt"})
    assert_ollama_error(r, 429, "(fetchesPerDay)")
    assert 0 < int(r.headers["retry-after"]) <= 86400
    assert [p for p, _ in site.requests] == ["/article"]  # the refused fetch never left
    # another key has its own allowance
    assert post(gw, "/api/web_search", {"query": "rust"}, key=OTHER).status_code == 200


def test_the_reading_takes_fetches_from_the_key(gateway, fake_model, search_fakes, site) -> None:
    keys = [{"key": KEY, "name": "ollama", "fetchesPerDay": 1}]
    gw = gateway(config(fake_model.url, search_fakes, site, read={}, keys=keys))
    search_fakes.script("searxng", teasers(site, "/deep", "/article"))
    results = post(gw, "/api/web_search", {"query": QUESTION}).json()["results"]
    assert sum(x["content"] != "The harbour museum keeps records." for x in results) == 1  # one page read
    assert len([p for p, _ in site.requests if p in ("/deep", "/article")]) == 1


@pytest.mark.parametrize(("path", "body", "raw", "needle"), [
    ("/api/web_search", None, b"{query", "not valid JSON"),
    ("/api/web_search", [], None, "JSON object"),
    ("/api/web_search", {}, None, "'query'"),
    ("/api/web_search", {"query": 7}, None, "'query'"),
    ("/api/web_search", {"query": "rust", "max_results": "many"}, None, "'max_results'"),
    ("/api/web_search", {"query": "rust", "max_results": True}, None, "'max_results'"),
    ("/api/web_search", {"query": "rust", "max_results": 0}, None, "at least 1"),
    ("/api/web_search", {"query": "   "}, None, "empty"),
    ("/api/web_search", {"query": "x" * 600}, None, "longer than 500"),
    ("/api/web_fetch", None, b"[1,", "not valid JSON"),
    ("/api/web_fetch", {}, None, "'url'"),
    ("/api/web_fetch", {"url": 5}, None, "'url'"),
    ("/api/web_fetch", {"url": "ftp://example.org/x"}, None, "http and https"),
    ("/api/web_fetch", {"url": "https://example.org/" + "a" * 300}, None, "longer than"),
])
def test_bad_bodies_are_ollama_shaped_400s(gateway, fake_model, search_fakes, site, path, body, raw, needle) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    assert_ollama_error(post(gw, path, body, raw=raw), 400, needle)
    assert not search_fakes.calls("searxng") and site.connections == 0


def test_other_api_paths_answer_in_ollama_shape(gateway, fake_model, search_fakes) -> None:
    gw = gateway(config(fake_model.url, search_fakes, None))
    assert_ollama_error(post(gw, "/api/nothing", {}), 404, "no such endpoint")
    r = httpx.get(gw.url + "/api/web_search", headers={"authorization": f"Bearer {KEY}"}, timeout=10)
    assert_ollama_error(r, 405, "not allowed")


def test_counted_and_traced_under_their_own_names(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    series = [("api/web_search", "200"), ("api/web_fetch", "200"), ("api/web_fetch", "403"), ("search", "200")]
    before = [metric(gw, "searchhub_requests_total", endpoint=e, status=s) for e, s in series]
    assert post(gw, "/api/web_search", {"query": "rust"}).status_code == 200
    assert post(gw, "/api/web_fetch", {"url": site.origin + "/article"}).status_code == 200
    assert post(gw, "/api/web_fetch", {"url": "http://10.0.0.1/"}).status_code == 403
    after = [metric(gw, "searchhub_requests_total", endpoint=e, status=s) for e, s in series]
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 1, 1, 0]  # /v1/search's count untouched
    deadline = time.monotonic() + 5
    while len(rows := wait_trace(gw)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    by_status = {(r["endpoint"], r["status"]): r for r in rows}
    assert by_status[("api/web_search", 200)]["key"] == "ollama"
    assert by_status[("api/web_fetch", 200)]["error"] is None
    refused = by_status[("api/web_fetch", 403)]
    assert refused["key"] == "ollama" and "non-public" in refused["error"]


# ---------------------------------------------------------------- Ollama's own client library


def test_ollama_client_web_search_and_web_fetch(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site, read={}))
    search_fakes.script("searxng", teasers(site, "/deep", "/article"))
    before = metric(gw, "searchhub_requests_total", endpoint="api/web_search", status="200")
    with ollama_client(gw) as client:
        found = client.web_search(QUESTION, max_results=2)
        assert [x.url for x in found.results] == [site.origin + "/deep", site.origin + "/article"]
        assert all(x.title for x in found.results) and DEEP_FACT in found.results[0].content
        page = client.web_fetch(site.origin + "/article")
        assert page.title.startswith(ARTICLE_TITLE) and all(s in page.content for s in MAIN_SENTENCES)
        assert site.origin + "/news" in page.links and all(u.startswith("http://") for u in page.links)
        # errors come back as the library's ResponseError, with Ollama's message and the status
        with pytest.raises(ollama.ResponseError) as refused:
            client.web_fetch("http://192.168.1.1/admin")
        assert refused.value.status_code == 403 and "non-public" in refused.value.error
        with pytest.raises(ollama.ResponseError) as bad:
            client.web_search("   ")
        assert bad.value.status_code == 400 and "empty" in bad.value.error
    with ollama_client(gw, key="sk-wrong") as stranger, pytest.raises(ollama.ResponseError) as denied:
        stranger.web_search("rust")
    assert denied.value.status_code == 401 and "API key" in denied.value.error
    assert metric(gw, "searchhub_requests_total", endpoint="api/web_search", status="200") == before + 1


def test_ollama_client_budget_exhausted_is_a_429(gateway, fake_model, search_fakes, monkeypatch) -> None:
    keys = [{"key": KEY, "name": "ollama", "searchesPerDay": 1}]
    gw = gateway(config(fake_model.url, search_fakes, None, keys=keys))
    monkeypatch.setenv("OLLAMA_API_KEY", KEY)  # the library's own way to send the key
    with ollama.Client(event_hooks={"request": [to_gateway(gw.url)]}) as client:
        assert client.web_search("latest stable rust release").results[0].title
        with pytest.raises(ollama.ResponseError) as spent:
            client.web_search("latest stable rust release")
    assert spent.value.status_code == 429 and "(searchesPerDay)" in spent.value.error


def test_ollama_async_client(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    sync_hook = to_gateway(gw.url)

    async def hook(request: httpx.Request) -> None:  # httpx's AsyncClient awaits its hooks
        sync_hook(request)

    async def run() -> None:
        async with ollama.AsyncClient(headers={"Authorization": f"Bearer {KEY}"},
                                      event_hooks={"request": [hook]}) as client:
            found, page = await asyncio.gather(client.web_search("rust", max_results=3),
                                               client.web_fetch(site.origin + "/article"))
        assert len(found.results) == 3 and found.results[0].url.startswith("https://")
        assert page.title.startswith(ARTICLE_TITLE) and len(page.links) == 11

    asyncio.run(run())


# ---------------------------------------------------------------- the pure parts


def test_the_protocol_functions() -> None:
    assert protocol.search_request({"query": "q"}) == SearchRequest("q", 5)
    assert protocol.search_request({"query": "q", "max_results": 50}).count == protocol.MAX_RESULTS
    assert protocol.search_request({"query": "q", "max_results": None}).count == 5
    result = SearchResult("searxng", "q", hits=(
        Hit("A", "https://a.example/", "teaser a", passages=("First passage.", "Second passage.")),
        Hit("B", "https://b.example/", "teaser b")))
    assert protocol.search_results(result) == {"results": [
        {"title": "A", "url": "https://a.example/", "content": "First passage.\n\nSecond passage."},
        {"title": "B", "url": "https://b.example/", "content": "teaser b"}]}
    assert len(protocol.search_results(result, 1)["results"]) == 1
    page = FetchResult("https://a.example/", "https://a.example/", None, "text", links=("https://a.example/x",))
    assert protocol.page(page) == {"title": "", "content": "text", "links": ["https://a.example/x"]}
    for code, status in ((URL_NOT_ALLOWED, 403), (UNSUPPORTED_CONTENT_TYPE, 422), (URL_NOT_ACCESSIBLE, 502),
                         (None, 502)):
        failed = FetchResult("https://a.example/", error="nope", error_code=code)
        assert protocol.fetch_failure(failed) == (status, "web fetch failed: nope")


def test_links_of_a_page() -> None:
    html = b"""<html><head><title>t</title></head><body>
    <a href="sub/page?x=1#frag">relative</a> <a href="/abs">absolute path</a> <a href="//other.example/p">scheme-relative</a>
    <a href="HTTPS://Example.ORG:443/Case">upper</a> <a href="https://example.org/Case#again">dup</a>
    <a href="javascript:alert(1)">js</a> <a href="data:text/html,hi">data</a> <a href="mailto:a@b.example">mail</a>
    <a href="tel:123">tel</a> <a href="ftp://files.example/x">ftp</a> <a href="#top">top</a> <a>no href</a>
    <a href="https://user:pw@creds.example/">creds</a> <a href="http://[::1">broken</a>
    <a href=" /spaced path\n">spaced</a> <area href="/map-area">
    </body></html>"""
    assert links_of(html, "https://site.example/dir/index.html") == (
        "https://site.example/dir/sub/page?x=1", "https://site.example/abs", "https://other.example/p",
        "https://example.org/Case", "https://site.example/spaced%20path", "https://site.example/map-area")
    based = b'<html><head><base href="https://cdn.example/base/"></head><body><a href="x">x</a></body></html>'
    assert links_of(based, "https://site.example/") == ("https://cdn.example/base/x",)
    many = b"<html><body>" + b"".join(b'<a href="/p%d">p</a>' % i for i in range(500)) + b"</body></html>"
    assert len(links_of(many, "http://h.example/")) == MAX_LINKS
    assert links_of(b"", "http://h.example/") == () and links_of(b"\x00\xff\xfe", "http://h.example/") == ()


# ---------------------------------------------------------------- hostile bodies


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20)
_url = st.sampled_from(["http://127.0.0.1:9/x", "https://nothing.invalid:8080/a", "javascript:alert(1)", "",
                        "http://169.254.169.254/", "file:///etc/passwd", "http://[::1]/", "https://example.org/"])
_body = st.fixed_dictionaries({}, optional={
    "query": st.text(max_size=80) | _json, "max_results": st.integers(-10, 10**12) | _json,
    "url": _url | st.text(max_size=60) | _json, "model": _json}) | _json


@pytest.fixture(scope="module")
def hostile_gateway(tmp_path_factory, _search_fakes_server, _fake_model_server):
    """One gateway for every example: webFetch allows only a domain that does not exist, so no
    example waits on the network; searches go to the fake SearXNG. Errors logged are collected."""
    from routes.app import create_app

    from .fakes.server import ServerThread
    from .helpers import hermetic

    errors: list[str] = []

    class Errors(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.ERROR or record.exc_info:
                errors.append(record.getMessage())

    handler = Errors()
    for name in ("searchhub", "uvicorn.error"):
        logging.getLogger(name).addHandler(handler)
    cfg = config(_fake_model_server.url, _search_fakes_server, None, web_fetch={"allowedDomains": ["nothing.invalid"]})
    path = tmp_path_factory.mktemp("ollama-hostile") / "engines.json"
    path.write_text(json.dumps(hermetic(cfg)))
    server = ServerThread(create_app(str(path))).start()
    yield server, errors
    server.stop()
    for name in ("searchhub", "uvicorn.error"):
        logging.getLogger(name).removeHandler(handler)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=_body, path=st.sampled_from(["/api/web_search", "/api/web_fetch"]))
def test_hostile_bodies_get_a_result_or_an_ollama_error(hostile_gateway, body, path) -> None:
    server, errors = hostile_gateway
    r = httpx.post(server.url + path, content=json.dumps(body).encode(),  # Infinity and NaN too: not JSON
                   headers={"authorization": f"Bearer {KEY}", "content-type": "application/json"}, timeout=30)
    assert r.status_code != 500 and r.status_code < 600, r.text
    doc = r.json()
    if r.status_code == 200:
        if path == "/api/web_search":
            assert set(doc) == {"results"} and len(doc["results"]) <= protocol.MAX_RESULTS
            assert all(set(x) == {"title", "url", "content"} and all(isinstance(v, str) for v in x.values())
                       for x in doc["results"])
        else:
            assert set(doc) == {"title", "content", "links"}
    else:
        assert 400 <= r.status_code < 600 and set(doc) == {"error"} and isinstance(doc["error"], str), doc
    assert not errors, errors
