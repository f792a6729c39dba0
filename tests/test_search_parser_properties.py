"""Every engine's parser takes any JSON a provider (or an attacker in its place) might send: it
returns raw hits or raises EngineError, never anything else; the sanitizer then bounds the result."""

from __future__ import annotations

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


def test_the_schema_lists_exactly_the_registered_engines():
    from hub.config import schema

    defs = schema()["$defs"]
    assert set(defs["engine"]["properties"]["type"]["enum"]) == set(API_ENGINES)
    assert set(MODEL_ENGINES) <= set(defs["provider"]["properties"]["type"]["enum"])


@given(st.text(max_size=300))
def test_baidu_query_fits_its_units(text):
    from hub.search.baidu import QUERY_UNITS, _wide, truncate_units

    cut = truncate_units(text)
    assert text.startswith(cut)
    assert sum(2 if _wide(c) else 1 for c in cut) <= QUERY_UNITS


@given(st.one_of(st.text(max_size=40), st.from_regex(r"\d{4}-\d{1,2}-\d{1,2}( \d{1,2}:\d{2}(:\d{2})?)?", fullmatch=True),
                 st.integers(), st.none()))
@example("0001-1-1")  # UTC+8 -> UTC would fall before datetime.min
def test_baidu_dates_parse_or_are_none(value):
    from hub.search.baidu import parse_date

    parsed = parse_date(value)
    assert parsed is None or parsed.tzinfo is not None
