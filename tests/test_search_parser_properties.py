"""Every engine's parser takes any JSON a provider (or an attacker in its place) might send: it
returns raw hits or raises EngineError, never anything else; the sanitizer then bounds the result."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hub.search.base import EngineError, Parsed, SearchRequest
from hub.search.model import cited_links
from hub.search.registry import API_ENGINES, MODEL_ENGINES
from hub.search.sanitize import bound

PARSERS = {f"api:{k}": c for k, c in API_ENGINES.items() if k not in ("ddgs", "multi")}
PARSERS.update({f"model:{k}": c for k, c in MODEL_ENGINES.items()})

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=30,
)
# Shapes close to the real ones, with hostile leaves, reach deeper than random JSON does.
keys = st.sampled_from(["code", "data", "webPages", "value", "search_result", "references", "results", "output",
                        "choices", "message", "content", "search_info", "search_results", "citations", "web",
                        "url", "link", "title", "name", "snippet", "type", "annotations", "action", "sources"])
shaped = st.recursive(
    st.none() | st.integers() | st.text(max_size=30) | st.sampled_from(["https://a.example/x", "javascript:x", "web",
                                                                        "url_citation", "output_text", "text",
                                                                        "web_search_tool_result", "message"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=6),
    max_leaves=40,
)


@pytest.mark.parametrize("name", sorted(PARSERS))
@settings(max_examples=60, deadline=None)
@given(data=json_values | shaped)
def test_parsers_return_hits_or_raise_engine_error(name, data):
    try:
        parsed = PARSERS[name].parse(data)
    except EngineError:
        return
    assert isinstance(parsed, Parsed)
    result = bound("e", SearchRequest("q", 5), parsed, char_cap=500, max_bytes=4096)
    assert result.ok or result.error
    assert all(h.url.startswith(("http://", "https://")) for h in result.hits)


@given(st.text(max_size=600))
def test_cited_links_are_http_urls(text):
    for hit in cited_links(text):
        assert hit.url.startswith(("http://", "https://"))
        assert not any(c.isspace() for c in hit.url)


def test_the_schema_needs_no_edit_for_a_new_engine():
    """An engine's `type` is any name in the schema (the loader checks it against the engines it is
    given); a model engine names a provider type, a commercial one (hub/config/settings.py)."""
    from hub.config import COMMERCIAL_TYPES, schema

    defs = schema()["$defs"]
    engine_type = defs["engine"]["properties"]["type"]
    assert engine_type.get("type") == "string" and "enum" not in engine_type
    assert set(MODEL_ENGINES) <= COMMERCIAL_TYPES


def test_the_config_is_given_every_registered_engine_kind():
    """The loader checks entries against ENGINE_KINDS, the service builds from the tables: one source."""
    from hub.search.registry import ENGINE_KINDS

    assert set(ENGINE_KINDS.api) == set(API_ENGINES)
    assert set(ENGINE_KINDS.model) == set(MODEL_ENGINES)
    assert all(ENGINE_KINDS.api[name] is vars(cls)["KIND"] for name, cls in API_ENGINES.items())
    assert all(ENGINE_KINDS.model[name] is vars(cls)["KIND"] for name, cls in MODEL_ENGINES.items())


@given(st.text(max_size=300))
def test_baidu_query_fits_its_units(text):
    from hub.search.engines.baidu import QUERY_UNITS, _wide, truncate_units

    cut = truncate_units(text)
    assert text.startswith(cut)
    assert sum(2 if _wide(c) else 1 for c in cut) <= QUERY_UNITS


@given(st.one_of(st.text(max_size=40), st.from_regex(r"\d{4}-\d{1,2}-\d{1,2}( \d{1,2}:\d{2}(:\d{2})?)?", fullmatch=True),
                 st.integers(), st.none()))
@example("0001-1-1")  # UTC+8 -> UTC would fall before datetime.min
def test_baidu_dates_parse_or_are_none(value):
    from hub.search.engines.baidu import parse_date

    parsed = parse_date(value)
    assert parsed is None or parsed.tzinfo is not None


# ---------------------------------------------------------------- one bad hit in an otherwise good answer

MARK = "\x01MARK\x01"  # where the bad bytes go; generated text never holds \x01 (see `texts`)
MARK_BYTES = b"\\u0001MARK\\u0001"  # how json.dumps writes it
# Bytes that can never appear in UTF-8, stray continuation bytes, and a truncated sequence.
invalid_bytes = st.sampled_from([b"\xff", b"\xfe", b"\xc0", b"\xc1", b"\xf5", b"\x80", b"\xbf", b"\xe2\x82",
                                 b"\xf0\x9f\x98", b"\xed\xa0\x80"])  # the last: a surrogate, UTF-8-encoded
lone_surrogates = st.one_of(
    st.integers(0xD800, 0xDBFF).map(lambda c: f"\\u{c:04x}".encode()),  # a high one, no low one after it
    st.integers(0xDC00, 0xDFFF).map(lambda c: f"\\u{c:04X}".encode()),  # a low one alone
)
texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01"), max_size=30)


def _answer(kind: str, hits: list[tuple[str, str, str]]) -> bytes:
    if kind == "searxng":
        doc = {"query": "q", "results": [{"url": u, "title": t, "content": s, "engine": "duckduckgo"}
                                         for t, u, s in hits], "answers": [], "unresponsive_engines": []}
    else:
        doc = {"searchParameters": {"q": "q"}, "organic": [{"title": t, "link": u, "snippet": s, "position": i}
                                                          for i, (t, u, s) in enumerate(hits, 1)]}
    return json.dumps(doc, ensure_ascii=False).encode()


def _dropped(engine: str, reason: str) -> float:
    from hub.observability.metrics import REGISTRY

    return REGISTRY.get_sample_value("searchhub_search_hits_dropped_total",
                                     {"engine": engine, "reason": reason}) or 0.0


@pytest.mark.parametrize("kind", ["searxng", "serper"])
@settings(max_examples=150, deadline=None)
@given(data=st.data(), n=st.integers(2, 8), field=st.sampled_from(["title", "snippet", "url"]),
       bad=st.one_of(invalid_bytes, lone_surrogates))
def test_one_bad_hit_does_not_sink_the_search(kind, data, n, field, bad):
    """An otherwise valid SearXNG or Serper answer with an invalid UTF-8 byte or an escaped lone
    surrogate in one hit's title, snippet or URL: decoded, parsed and bounded, the other hits all come
    back, the bad one is dropped when its URL is broken (and counted) or kept with its text repaired,
    and the result encodes as UTF-8 JSON."""
    from hub.search.fetch import decode_answer

    engine_cls = API_ENGINES[kind]
    hits = [(data.draw(texts), f"https://site{i}.example/{data.draw(st.from_regex(r'[a-z0-9/_-]{0,12}', fullmatch=True))}",
             data.draw(texts)) for i in range(n)]
    k = data.draw(st.integers(0, n - 1))
    title, url, snippet = hits[k]
    at = data.draw(st.integers(0, len({"title": title, "url": url, "snippet": snippet}[field])))
    if field == "title":
        hits[k] = (title[:at] + MARK + title[at:], url, snippet)
    elif field == "snippet":
        hits[k] = (title, url, snippet[:at] + MARK + snippet[at:])
    else:
        at = max(at, len("https://site0.example/") + len(str(k)) - 1)  # in the path: the host stays a host
        hits[k] = (title, url[:at] + MARK + url[at:], snippet)
    body = _answer(kind, hits)
    assert body.count(MARK_BYTES) == 1
    body = body.replace(MARK_BYTES, bad)

    name = f"prop-{kind}"
    before = _dropped(name, "encoding")
    result = bound(name, SearchRequest("q", n), engine_cls.parse(decode_answer(body)), char_cap=4000,
                   max_bytes=1 << 20)

    assert result.ok, result.error
    got = [h.url for h in result.hits]
    others = [u for i, (_, u, _) in enumerate(hits) if i != k]
    if field == "url":
        assert got == others
        assert _dropped(name, "encoding") == before + 1
    else:
        assert got == [u for _, u, _ in hits]
        assert _dropped(name, "encoding") == before
    for doc in (result.to_document(), result.to_payload()):
        encoded = json.dumps(doc, ensure_ascii=False).encode("utf-8")  # strict: a lone surrogate raises
        assert json.loads(encoded) == doc


@given(st.binary(max_size=200))
def test_any_bytes_decode_or_raise_engine_error(body):
    from hub.search.fetch import decode_answer

    try:
        decode_answer(body)
    except EngineError as e:
        assert e.message == "the search service sent malformed JSON"


def test_a_valid_answer_takes_the_strict_path_unchanged():
    from hub.search.fetch import decode_answer

    body = '{"results": [{"title": "Ünïcode ✓ 😀", "url": "https://a.example/ü"}], "n": 12345678901234567890}'
    assert decode_answer(body.encode()) == json.loads(body)
