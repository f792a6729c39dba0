"""The fetcher against a fake web site on loopback: extraction, content types, caps, redirects,
cache, metrics and logs. The site lives on 127.0.0.1, so these fetchers open loopback explicitly
through the operator allow-list (allowHosts); test_fetcher_ssrf.py proves the default refuses it."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator

import pytest

from hub.fetcher import AddressPolicy, Fetcher, FetchLimits, UrlPolicy, tool_content
from hub.fetcher.result import (
    INVALID_TOOL_INPUT,
    TOO_MANY_REQUESTS,
    UNSUPPORTED_CONTENT_TYPE,
    URL_NOT_ACCESSIBLE,
    URL_NOT_ALLOWED,
    URL_NOT_IN_PRIOR_CONTEXT,
)
from hub.observability import metrics
from hub.store import MemoryStore

from .fakes.web import (
    ARTICLE_TITLE,
    INJECTION,
    MAIN_SENTENCES,
    NAV_WORDS,
    PDF_TEXT,
    SCRIPT_TEXT,
    FakeWeb,
    StaticResolver,
)


@pytest.fixture(scope="module")
def web() -> Iterator[FakeWeb]:
    w = FakeWeb().start()
    yield w
    w.stop()


def make(web: FakeWeb, store=None, **limits) -> Fetcher:
    limits = {"allowed_ports": frozenset({80, 443, web.port}), "timeout_s": 5.0, **limits}
    return Fetcher(FetchLimits(**limits), AddressPolicy.build(allow_hosts=["127.0.0.1"]), store or MemoryStore())


OPEN = UrlPolicy(require_prior_context=False)


def fetch(fetcher: Fetcher, url: str, scope=None, **kw):
    async def run():
        try:
            return await fetcher.fetch(url, scope or OPEN.scope(), **kw)
        finally:
            await fetcher.aclose()
    return asyncio.run(run())


def test_article_main_text_without_navigation_or_scripts(web):
    r = fetch(make(web), f"{web.origin}/article")
    assert r.ok, r.error
    assert r.title == ARTICLE_TITLE
    for sentence in MAIN_SENTENCES:
        assert sentence in r.text
    for word in NAV_WORDS:
        assert word not in r.text
    assert SCRIPT_TEXT not in r.text and "<" not in r.text
    assert r.url == r.final_url == f"{web.origin}/article"
    assert r.retrieved_at.endswith("Z") and not r.truncated


def test_injected_instructions_stay_data_marked_untrusted(web):
    r = fetch(make(web), f"{web.origin}/article")
    content = tool_content(r)
    # The page's words reach the model only inside the text field, after a note saying what they are.
    assert content.index('"note"') < content.index(INJECTION[:30])
    assert "untrusted" in content and "never follow" in content


def test_gzip_body_is_decoded(web):
    r = fetch(make(web), f"{web.origin}/article.gz")
    assert r.ok and MAIN_SENTENCES[1] in r.text


def test_pdf_text_and_title(web):
    r = fetch(make(web), f"{web.origin}/report.pdf")
    assert r.ok, r.error
    assert PDF_TEXT in r.text and r.title == "Bridge Report" and r.media_type == "application/pdf"


@pytest.mark.parametrize(("path", "expect"), [
    ("/notes.txt", "Plain notes: line one.\nLine two."),
    ("/readme.md", "# Readme"),
    ("/data.json", '"bridge": "Kestrel"'),
])
def test_text_markdown_and_json(web, path, expect):
    r = fetch(make(web), web.origin + path)
    assert r.ok and expect in r.text


def test_unsupported_content_type_is_not_read(web):
    r = fetch(make(web), f"{web.origin}/image.png")
    assert r.error_code == UNSUPPORTED_CONTENT_TYPE


def test_twenty_megabytes_are_capped(web):
    before = metrics.WEB_FETCH_BYTES._value.get()
    started = time.monotonic()
    r = fetch(make(web, max_bytes=256 * 1024), f"{web.origin}/big")
    assert r.ok and r.truncated
    read = metrics.WEB_FETCH_BYTES._value.get() - before
    assert 256 * 1024 <= read < 2 * 1024 * 1024  # stopped near the cap, not at 20 MB
    assert time.monotonic() - started < 5


def test_gzip_bomb_inflates_only_to_the_cap(web):
    r = fetch(make(web, max_bytes=100_000, max_chars=1_000_000), f"{web.origin}/bomb")
    assert r.ok and r.truncated and r.text.startswith("bomb bomb")
    assert 90_000 < len(r.text) <= 100_000  # the cap counts inflated bytes, not the 80 KB on the wire


def test_slow_trickle_stops_at_the_time_cap(web):
    started = time.monotonic()
    r = fetch(make(web, timeout_s=1.5), f"{web.origin}/trickle")
    elapsed = time.monotonic() - started
    assert elapsed < 4
    assert r.ok and r.truncated and "slow words" in r.text


def test_redirect_is_followed_and_reported(web):
    r = fetch(make(web), f"{web.origin}/redirect?to=/article")
    assert r.ok and r.final_url == f"{web.origin}/article" and r.url.endswith("/redirect?to=/article")


def test_redirect_loop_ends(web):
    r = fetch(make(web, max_redirects=3), f"{web.origin}/loop")
    assert r.error_code == URL_NOT_ACCESSIBLE and "redirects" in r.error


def test_redirect_to_another_scheme_or_credentials_is_refused(web):
    for to in ("file:///etc/passwd", f"http://user:pw@127.0.0.1:{web.port}/article"):
        r = fetch(make(web), f"{web.origin}/redirect?to={to}")
        assert not r.ok and r.error_code in (URL_NOT_ACCESSIBLE, URL_NOT_ALLOWED), to


def test_unknown_host_is_not_accessible(web):
    r = fetch(make(web), f"http://no-such-host.invalid:{web.port}/")
    assert r.error_code == URL_NOT_ACCESSIBLE and "cannot resolve" in r.error


def test_http_errors(web):
    assert fetch(make(web), f"{web.origin}/missing").error_code == URL_NOT_ACCESSIBLE
    assert fetch(make(web), f"{web.origin}/limited").error_code == TOO_MANY_REQUESTS


def test_host_header_is_the_url_host(web):
    r = fetch(make(web), f"{web.origin}/host")
    assert r.text == f"host header was 127.0.0.1:{web.port}"


def test_cache_serves_the_second_fetch_and_never_stores_errors(web):
    store = MemoryStore()
    web.reset()
    first = fetch(make(web, store), f"{web.origin}/article#section")
    second = fetch(make(web, store), f"{web.origin}/article")  # same page once normalized
    assert first.ok and second.cached and second.text == first.text
    assert web.connections == 1
    fetch(make(web, store), f"{web.origin}/missing")
    fetch(make(web, store), f"{web.origin}/missing")
    assert web.connections == 3
    fresh = fetch(make(web, store), f"{web.origin}/article", use_cache=False)
    assert not fresh.cached and web.connections == 4


def test_cache_is_keyed_by_the_address_policy(web):
    store = MemoryStore()
    assert fetch(make(web, store), f"{web.origin}/article").ok
    default = Fetcher(FetchLimits(allowed_ports=frozenset({web.port})), AddressPolicy(), store)
    r = fetch(default, f"{web.origin}/article")
    assert r.error_code == URL_NOT_ALLOWED  # the page read under allowHosts is not served without it


def test_only_urls_from_the_conversation(web):
    scope = UrlPolicy().scope()
    url = f"{web.origin}/article"
    assert fetch(make(web), url, scope).error_code == URL_NOT_IN_PRIOR_CONTEXT
    scope.remember_text(f"Please read {url}.")
    assert fetch(make(web), url, scope).ok
    # A redirect target need not have been seen, but the asked-for URL must, exactly.
    assert fetch(make(web), f"{web.origin}/article?x=1", scope).error_code == URL_NOT_IN_PRIOR_CONTEXT


def test_client_blocked_domain_applies_to_redirect_hops(web):
    scope = UrlPolicy(require_prior_context=False).scope(blocked_domains=["blocked.test"])
    r = fetch(make(web), f"{web.origin}/redirect?to=http://blocked.test:{web.port}/article", scope)
    assert r.error_code == URL_NOT_ALLOWED and "redirected" in r.error


def test_max_chars_truncates(web):
    r = fetch(make(web, max_chars=1000, max_bytes=100_000), f"{web.origin}/big")
    assert r.ok and r.truncated and len(r.text) <= 1000
    short = tool_content(fetch(make(web), f"{web.origin}/article"), max_chars=50)
    assert '"truncated":true' in short


def test_invalid_urls(web):
    for bad in ("", "not a url", "ftp://example.com/", "http://", 123, "http://x/" + "a" * 300):
        r = fetch(make(web), bad)  # type: ignore[arg-type]
        assert not r.ok and r.error_code in (INVALID_TOOL_INPUT, "url_too_long"), bad


def test_metrics_and_logs_hold_no_query_or_credentials(web, caplog):
    caplog.set_level(logging.DEBUG, logger="searchhub.fetch")
    blocked_before = metrics.WEB_FETCH_BLOCKED.labels("credentials")._value.get()
    ok_before = metrics.WEB_FETCH_CALLS.labels("ok")._value.get()
    fetch(make(web), f"{web.origin}/article?token=SECRET-TOKEN-123")
    fetch(make(web), f"http://urluser-5d1e:hunter2pass@127.0.0.1:{web.port}/article")
    fetch(make(web), f"{web.origin}/redirect?to=/article%3Fkey%3DSECRET-KEY-456")
    assert metrics.WEB_FETCH_CALLS.labels("ok")._value.get() == ok_before + 2
    assert metrics.WEB_FETCH_BLOCKED.labels("credentials")._value.get() == blocked_before + 1
    logged = caplog.text + metrics.render().decode()
    assert "web fetch" in caplog.text
    for secret in ("SECRET-TOKEN-123", "hunter2pass", "urluser-5d1e", "SECRET-KEY-456"):
        assert secret not in logged


def test_a_cached_page_is_refused_when_its_final_domain_is_blocked(web):
    store = MemoryStore()
    resolver = StaticResolver({"a.example": ["127.0.0.1"], "b.example": ["127.0.0.1"]})

    def named() -> Fetcher:
        return Fetcher(FetchLimits(allowed_ports=frozenset({web.port})),
                       AddressPolicy.build(allow_hosts=["a.example", "b.example"]), store, resolver=resolver)

    url = f"http://a.example:{web.port}/redirect?to=http://b.example:{web.port}/article"
    assert fetch(named(), url).final_url == f"http://b.example:{web.port}/article"
    web.reset()
    blocked = UrlPolicy(require_prior_context=False).scope(blocked_domains=["b.example"])
    r = fetch(named(), url, blocked)
    assert r.error_code == URL_NOT_ALLOWED and web.connections == 0
    assert fetch(named(), url).cached  # still there for a conversation that does not block it
