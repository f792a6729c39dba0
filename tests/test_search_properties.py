"""Property tests: any provider payload becomes a valid, bounded result or a structured error, and
the sanitizer's guarantees hold for any input. Never an exception."""

from __future__ import annotations

import asyncio
import json
import unicodedata

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from hub.search import Hit, SearchRequest, SearchResult, sanitize
from hub.search.base import RECENCY, EngineError, Parsed, RawHit
from hub.search.registry import API_ENGINES, MODEL_ENGINES
from hub.search.render import tool_text
from hub.search.sanitize import bound, clean_text, clean_url, domain_matches, fit, host_of, size

from .fakes.search_providers import config_with, search_service

CODES = {"unavailable", "too_many_requests", "invalid_tool_input", "query_too_long"}
FIELDS = [
    "organic", "answerBox", "knowledgeGraph", "web", "results", "title", "link", "url", "snippet", "description",
    "content", "date", "page_age", "age", "profile", "name", "meta_url", "hostname", "extra_snippets",
    "highlights", "text", "summary", "publishedDate", "published_date", "answer", "answers",
    "unresponsive_engines", "choices", "message", "web_search", "media", "refer", "publish_date", "candidates",
    "parts", "thought", "groundingMetadata", "groundingChunks", "uri", "domain", "groundingSupports", "segment",
    "groundingChunkIndices", "webSearchQueries", "promptFeedback", "blockReason",
]
URLS = [
    "https://a.example/x", "https://a.example/x/", "HTTPS://A.EXAMPLE/x", "http://www.a.example/x",
    "https://sub.b.example/p?q=1#frag", "javascript:alert(1)", "ftp://a.example/f", "https://", "http://[::1",
    "https://ex ample.com/", "//a.example/x", "https://user:pw@c.example:99999/", "data:text/html,<b>x</b>",
    "https://\u202ea.example/", "https://d.example/" + "x" * 3000,
]
NASTY = [
    "<strong>bold</strong> &amp; &lt;i&gt;encoded&lt;/i&gt;", "a < b > c", "\x00\x07\x1b[31mred\x7f",
    "bidi\u202egnp.exe", "zero\u200bwidth\ufeff", "tag\U000e0041chars", "lone \ud800 surrogate", "&#0;&#x1;&#xd800;",
    "<script>alert(1)</script>", "<<b>b>", "line\nbreak\r\n\tand\u2028more", "ref [ref_1] and [ref_9]", "🦀" * 50,
    "x" * 6000,
]

texts = st.one_of(st.text(max_size=60), st.sampled_from(NASTY), st.sampled_from(URLS))
leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), texts)
keys = st.one_of(st.sampled_from(FIELDS), st.text(max_size=6))
payloads = st.recursive(leaves, lambda inner: st.lists(inner, max_size=6) | st.dictionaries(keys, inner, max_size=8),
                        max_leaves=60)
# Each provider's response shape, for payloads that get past the first checks; any value may
# still be junk of another type.
S, U, N = "text", "url", "int"
SHAPES: dict[str, dict] = {
    "serper": {"organic": [{"title": S, "link": U, "snippet": S, "date": S}],
               "answerBox": {"title": S, "answer": S, "snippet": S, "link": U}, "knowledgeGraph": {"description": S}},
    "brave": {"web": {"results": [{"title": S, "url": U, "description": S, "page_age": S, "age": S,
                                   "extra_snippets": [S], "profile": {"name": S}, "meta_url": {"hostname": S}}]}},
    "exa": {"results": [{"title": S, "url": U, "text": S, "highlights": [S], "summary": S, "publishedDate": S}]},
    "tavily": {"answer": S, "results": [{"title": S, "url": U, "content": S, "published_date": S}]},
    "searxng": {"results": [{"title": S, "url": U, "content": S, "publishedDate": S}], "answers": [S],
                "unresponsive_engines": [[S]]},
    "glm": {"choices": [{"message": {"content": S}}],
            "web_search": [{"title": S, "content": S, "link": U, "media": S, "publish_date": S, "refer": S}]},
    "gemini": {"candidates": [{"content": {"parts": [{"text": S, "thought": N}]}, "groundingMetadata": {
        "groundingChunks": [{"web": {"uri": U, "title": S, "domain": S}}],
        "groundingSupports": [{"segment": {"text": S}, "groundingChunkIndices": [N]}], "webSearchQueries": [S]}}],
        "promptFeedback": {"blockReason": S}},
}


def shaped(template) -> st.SearchStrategy:
    """Mostly the template's shape; sometimes a field missing or of another type."""
    if isinstance(template, dict):
        full = st.fixed_dictionaries({k: shaped(v) for k, v in template.items()})
        sparse = st.fixed_dictionaries({}, optional={k: shaped(v) | leaves for k, v in template.items()})
        return st.one_of(full, full, sparse)
    if isinstance(template, list):
        return st.lists(shaped(template[0]), max_size=8)
    if template == U:
        return st.one_of(st.sampled_from(URLS[:5]), st.sampled_from(URLS), texts)
    if template == N:
        return st.integers(-2, 6) | leaves
    return texts


requests = st.builds(
    SearchRequest,
    query=st.one_of(st.text(max_size=80), st.sampled_from(NASTY)),
    count=st.integers(1, 50),
    recency=st.sampled_from([None, *RECENCY]),
    allowed_domains=st.sampled_from([(), (), (), ("a.example",), ("example",), ("b.example", "c.example")]),
    blocked_domains=st.sampled_from([(), (), ("d.example",), ("a.example",)]),
)


def assert_valid(result: SearchResult, req: SearchRequest, char_cap: int, max_bytes: int) -> None:
    assert isinstance(result, SearchResult)
    content = tool_text(result)[0]
    decoded = json.loads(content)
    if not result.ok:
        assert result.error_code in CODES and isinstance(result.error, str) and result.error
        assert set(decoded) == {"error", "engine"}
        return
    assert len(content.encode()) <= max_bytes
    assert 1 <= len(result.hits) <= req.count
    assert [h["n"] for h in decoded["results"]] == list(range(1, len(result.hits) + 1))
    seen = set()
    for hit in result.hits:
        assert clean_url(hit.url) == hit.url and hit.url.lower().startswith(("http://", "https://"))
        host = host_of(hit.url)
        if req.allowed_domains:
            assert domain_matches(host, req.allowed_domains)
        assert not domain_matches(host, req.blocked_domains)
        key = (host.removeprefix("www."), hit.url.split("#")[0].rstrip("/").split("://", 1)[1].lower())
        assert key not in seen
        seen.add(key)
        assert len(hit.title) <= min(char_cap, 300) and len(hit.snippet) <= char_cap
        for text in (hit.title, hit.snippet, hit.source or "", hit.published or ""):
            assert_plain(text)
    for text in (result.summary or "", result.query):
        assert_plain(text, newlines=True)


def assert_plain(text: str, newlines: bool = False) -> None:
    for ch in text:
        cat = unicodedata.category(ch)
        assert cat not in ("Cc", "Cs", "Cf") or (newlines and ch == "\n"), repr(ch)


# The engines with a payload shape here (tests/test_search_parser_properties.py covers every engine).
ENGINES = {kind: cls for kind, cls in {**API_ENGINES, **MODEL_ENGINES}.items() if kind in SHAPES}


@pytest.mark.parametrize("kind", sorted(ENGINES))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), req=requests, char_cap=st.integers(100, 4000), max_bytes=st.integers(1024, 40000))
def test_any_payload_gives_a_bounded_result_or_an_error(kind, data, req, char_cap, max_bytes):
    payload = data.draw(shaped(SHAPES[kind]) | payloads, label="payload")
    try:
        parsed = ENGINES[kind].parse(payload)
    except EngineError as e:
        assert e.message and e.code in CODES
        return
    assert isinstance(parsed, Parsed)
    result = bound(kind, req, parsed, char_cap=char_cap, max_bytes=max_bytes)
    event("ok" if result.ok else "error")
    assert_valid(result, req, char_cap, max_bytes)


hit_fields = st.tuples(texts, st.one_of(st.sampled_from(URLS), texts), texts, st.one_of(st.none(), texts),
                       st.one_of(st.none(), texts), st.one_of(st.none(), st.sampled_from(["ref_1", "ref_9", "x"])))


@settings(max_examples=200, deadline=None)
@given(hits=st.lists(hit_fields, max_size=60), summary=st.one_of(st.none(), texts), req=requests,
       char_cap=st.integers(100, 20000), max_bytes=st.integers(1024, 40000))
def test_bound_holds_for_any_raw_hits(hits, summary, req, char_cap, max_bytes):
    parsed = Parsed([RawHit(*h) for h in hits], summary)
    assert_valid(bound("e", req, parsed, char_cap=char_cap, max_bytes=max_bytes), req, char_cap, max_bytes)


big_text = st.text(min_size=0, max_size=3000) | st.sampled_from(["é" * 4000, '"\\' * 2000, "🦀" * 2000])


@settings(max_examples=150, deadline=None)
@given(
    hits=st.lists(st.builds(Hit, title=big_text, url=st.just("https://a.example/" + "p" * 200), snippet=big_text,
                            source=st.one_of(st.none(), big_text), published=st.one_of(st.none(), big_text)),
                  min_size=1, max_size=30),
    summary=st.one_of(st.none(), big_text), query=st.text(max_size=500), max_bytes=st.integers(1024, 50000),
)
def test_fit_caps_the_tool_content(hits, summary, query, max_bytes):
    result = fit(SearchResult("engine", query, tuple(hits), summary), max_bytes)
    if result.ok:
        assert size(result) <= max_bytes and result.hits
    else:
        assert result.error_code == "unavailable"


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(texts, st.text(), st.text(alphabet=" ab.\t", max_size=30), leaves), cap=st.integers(1, 5000))
def test_clean_text_is_plain_and_capped(value, cap):
    out = clean_text(value, cap)
    assert len(out) <= cap and "\n" not in out and out == out.strip()
    assert "  " not in out and "\t" not in out  # whitespace collapsed
    assert_plain(out)


words = st.text(alphabet=st.characters(whitelist_categories=("L", "N")), min_size=1, max_size=8)


@given(parts=st.lists(st.tuples(st.sampled_from(["b", "strong", "a href='x'", "span class=\"c\"", "em"]), words),
                      min_size=1, max_size=8))
def test_well_formed_markup_is_removed_exactly(parts):
    html = " ".join(f"<{tag}>{w}</{tag.split()[0]}>" for tag, w in parts)
    assert clean_text(html, 10_000) == " ".join(w for _, w in parts)


@given(value=st.one_of(st.sampled_from(URLS), st.text(), leaves))
def test_clean_url_only_keeps_http_urls(value):
    url = clean_url(value)
    assert url is None or (url.lower().startswith(("http://", "https://")) and not any(c.isspace() for c in url))
    assert url is None or not sanitize._INVISIBLE.search(url)


@given(st.one_of(st.text(alphabet=st.characters(max_codepoint=0x7F)), st.text()))
def test_printable_ascii_has_nothing_the_url_check_refuses(s):
    """The lemma behind _checked_url's fast path: printable ASCII without a space has no
    invisible character and no whitespace, so the two regexes may be skipped for it."""
    if s.isascii() and s.isprintable() and " " not in s:
        assert not sanitize._INVISIBLE.search(s) and not sanitize._ANY_SPACE.search(s)


# ---------------------------------------------------------------- the service takes any arguments


@pytest.fixture
def searxng(search_fakes):
    """The shared fake providers (tests/conftest.py), reset once for the test, not per example."""
    return search_fakes


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.one_of(st.text(max_size=600), st.sampled_from(NASTY)),
       engine=st.one_of(st.none(), st.sampled_from(["s", "S", " s ", "x", "", " "]), texts),
       count=st.one_of(st.none(), st.integers()), recency=st.one_of(st.sampled_from([None, *RECENCY]), texts),
       domains=st.lists(st.one_of(texts, st.sampled_from(URLS)), max_size=3),
       location=st.one_of(st.none(), st.dictionaries(st.sampled_from(["country", "city"]), leaves)))
def test_the_service_answers_any_request_with_a_result(searxng, query, engine, count, recency, domains, location):
    """Any request of SearchRequest's types (what the doors decode or repair into), whatever is in it."""
    cfg = config_with([{"id": "s", "type": "searxng", "baseURL": searxng.base_url(searxng.server, "searxng")}],
                      cacheTtlMs=0)
    req = SearchRequest(query, count, recency, tuple(domains), tuple(domains[:1]), location, engine=engine)

    async def go():
        async with search_service(cfg) as svc:
            return await svc.search(req)

    result = asyncio.run(go())
    assert isinstance(result, SearchResult)
    json.loads(tool_text(result)[0])
    assert result.ok or result.error_code in CODES
