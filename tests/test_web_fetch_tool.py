"""The web_fetch tool's pure parts: argument repair, its offer per policy, the rendering the model
reads (budget fitting, find), its hosted shapes, the replay of Anthropic blocks, and the passages
(find_in_page spans, char_location sentences) under hypothesis."""

from __future__ import annotations

import functools
import json

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.config import FetchOffer, WebFetchConfig
from hub.fetcher import build
from hub.fetcher.result import FetchResult, failure
from hub.store.memory import MemoryStore
from hub.tools import ArgumentError, HostedFetch, ToolRequest
from hub.tools.base import HostedSearch
from hub.tools.kinds.web_fetch import WebFetch, fetch_args, replay, web_fetch_tool
from hub.tools.passages import MAX_CITED, excerpts, find, locate

PAGE = ("The Kestrel Bridge reopened in March. Engineers replaced the girders with weathering steel. "
        "The new deck carries a protected cycle lane.")


@functools.cache
def tool(**offer) -> WebFetch:
    """Built once per offer: building a fetcher makes an SSL context, which is slow."""
    config = WebFetchConfig(offer=FetchOffer(**offer), per_backend={"cloud": FetchOffer(enabled=False)})
    fetcher, policy = build(config, MemoryStore())
    return WebFetch(config, fetcher, policy)


def done(url: str = "https://example.com/a", text: str = PAGE) -> FetchResult:
    return FetchResult(url=url, final_url=url + "/", title="Kestrel", text=text, retrieved_at="2026-11-23T10:00:00Z")


# --- arguments ----------------------------------------------------------------------------------


@pytest.mark.parametrize("raw, url, max_chars, find_text", [
    ('{"url": "https://a.example/x"}', "https://a.example/x", None, None),
    ({"link": " https://a.example/x ", "max_chars": "5000"}, "https://a.example/x", 5000, None),
    ("https://a.example/x", "https://a.example/x", None, None),
    ('"https://a.example/x"', "https://a.example/x", None, None),
    ({"arguments": {"url": "https://a.example/x", "find": "  bridge   deck "}}, "https://a.example/x", None, "bridge deck"),
    ({"url": ["https://a.example/x"], "max_chars": 5}, "https://a.example/x", 200, None),
    ({"url": "https://a.example/x", "max_chars": True}, "https://a.example/x", None, None),
    ('```json\n{"uri": "https://a.example/x", "limit": 1e3}\n```', "https://a.example/x", 1000, None),
])
def test_arguments_are_repaired(raw, url, max_chars, find_text) -> None:
    args = fetch_args(raw)
    assert (args.url, args.max_chars, args.find) == (url, max_chars, find_text)


@pytest.mark.parametrize("raw", [None, "", "{}", '{"url": ""}', '{"url": 7}', "[1, 2]", '{"url": "x"', 42])
def test_unusable_arguments_say_what_to_send(raw) -> None:
    with pytest.raises(ArgumentError) as e:
        fetch_args(raw)
    assert "web_fetch" in str(e.value)


@given(st.one_of(st.text(max_size=300), st.dictionaries(st.text(max_size=10), st.text(max_size=40), max_size=4),
                 st.integers(), st.none(), st.lists(st.text(max_size=5), max_size=3)))
def test_arguments_never_raise_anything_but_argument_error(raw) -> None:
    try:
        args = fetch_args(raw)
    except ArgumentError:
        return
    assert isinstance(args.url, str) and args.url == args.url.strip() and args.url
    assert args.max_chars is None or args.max_chars >= 200
    assert args.find is None or 0 < len(args.find) <= 200


def test_schema_is_a_valid_function_tool() -> None:
    schema = web_fetch_tool()
    jsonschema.Draft202012Validator.check_schema(schema["function"]["parameters"])
    assert schema["function"]["name"] == "web_fetch" and schema["function"]["parameters"]["required"] == ["url"]


# --- offer and limits ---------------------------------------------------------------------------


@pytest.mark.parametrize("policy, implicit, hosted_search_only, hosted_fetch", [
    ("always", True, False, True), ("hosted", False, False, True), ("never", False, False, False)])
def test_offered_by_policy(policy, implicit, hosted_search_only, hosted_fetch) -> None:
    t = tool(inject_policy=policy)
    assert t.offered(ToolRequest(provider="local")) is implicit
    assert t.offered(ToolRequest(hosted={"web_search": HostedSearch()}, provider="local")) is hosted_search_only
    assert t.offered(ToolRequest(hosted={"web_fetch": HostedFetch()}, provider="local")) is hosted_fetch
    assert t.offered(ToolRequest(hosted={"web_fetch": HostedFetch()}, provider="cloud")) is False  # off for that backend


def test_max_uses_is_the_smaller_of_the_operator_cap_and_the_clients() -> None:
    t = tool(max_fetches_per_turn=3)
    assert t.max_uses(ToolRequest()) == 3
    assert t.max_uses(ToolRequest(hosted={"web_fetch": HostedFetch(max_uses=1)})) == 1
    assert t.max_uses(ToolRequest(hosted={"web_fetch": HostedFetch(max_uses=9)})) == 3


def test_max_content_tokens_caps_the_text() -> None:
    t = tool()
    call = t.call("c", {"url": "https://example.com/a"}, ToolRequest(hosted={"web_fetch": HostedFetch(max_content_tokens=60)}))
    call.result = done(text="word " * 1000)
    payload = json.loads(t.render(call, 1).text)
    assert len(payload["text"]) <= 240 and payload["truncated"] is True
    assert call.hosted_content()["content"]["source"]["data"] == payload["text"]  # the client sees what the model read


# --- rendering ----------------------------------------------------------------------------------


def test_render_numbers_the_page_and_marks_it_untrusted() -> None:
    t = tool()
    call = t.call("c", {"url": "https://example.com/a"}, ToolRequest())
    call.result = done()
    rendered = t.render(call, 4)
    payload = json.loads(rendered.text)
    assert payload["n"] == 4 and "untrusted" in payload["note"] and payload["text"] == PAGE
    (source,) = rendered.sources
    assert (source.n, source.url, source.title) == (4, "https://example.com/a/", "Kestrel")


@given(st.text(min_size=1, max_size=60).map(lambda s: (s * 100)[:3000]), st.integers(min_value=600, max_value=4000))
def test_render_fits_the_room_left_in_the_budget(text, room) -> None:
    t = tool()
    call = t.call("c", {"url": "https://example.com/a"}, ToolRequest())
    call.result = done(text=text)
    full = len(t.render(call, 1).text.encode())
    out = t.render(call, 1, room).text
    payload = json.loads(out)
    if full <= room:
        assert payload["text"] == text and payload["truncated"] is False
    else:
        assert len(out.encode()) <= room and payload["truncated"] is True and len(payload["text"]) < len(text)
    assert call.text == payload["text"]


def test_find_returns_only_the_passages() -> None:
    t = tool()
    call = t.call("c", {"url": "https://example.com/a", "find": "CYCLE lane"}, ToolRequest())
    call.result = done(text="x" * 2000 + PAGE + "y" * 2000)
    payload = json.loads(t.render(call, 1).text)
    assert "protected cycle lane" in payload["text"] and len(payload["text"]) < 1000
    assert call.action(done=True) == {"type": "find_in_page", "url": "https://example.com/a", "pattern": "CYCLE lane"}
    call = t.call("c", {"url": "https://example.com/a", "find": "tunnel"}, ToolRequest())
    call.result = done()
    assert json.loads(t.render(call, 1).text)["matches"] == 0


def test_errors_render_for_the_model_and_the_client() -> None:
    t = tool()
    call = t.call("c", {"url": "http://10.0.0.1/"}, ToolRequest())
    call.result = failure("http://10.0.0.1/", "the URL leads to a non-public network address", "url_not_allowed")
    assert json.loads(t.render(call, 1).text)["error_code"] == "url_not_allowed"
    assert call.hosted_content() == {"type": "web_fetch_tool_result_error", "error_code": "url_not_allowed"}
    assert call.action(done=True) == {"type": "open_page", "url": "http://10.0.0.1/"}
    assert not call.document and list(call.pages()) == []


def test_citation_needs_citations_enabled() -> None:
    t = tool()
    quiet = t.call("c", {"url": "https://example.com/a"}, ToolRequest(hosted={"web_fetch": HostedFetch()}))
    cited = t.call("d", {"url": "https://example.com/a"}, ToolRequest(hosted={"web_fetch": HostedFetch(citations=True)}))
    for call in (quiet, cited):
        call.result = done()
        t.render(call, 1)
    assert quiet.citation("steel girders", 0) is None
    c = cited.citation("They used weathering steel for the girders [1].", 2)
    assert c is not None and c["type"] == "char_location" and c["document_index"] == 2
    assert c["cited_text"] == "Engineers replaced the girders with weathering steel."
    assert PAGE[c["start_char_index"]:c["end_char_index"]] == c["cited_text"]


# --- replay -------------------------------------------------------------------------------------


def test_replay_of_a_fetched_document_and_of_an_error() -> None:
    content = {"type": "web_fetch_result", "url": "https://example.com/a", "retrieved_at": "2026-01-01T00:00:00Z",
               "content": {"type": "document", "title": "T",
                           "source": {"type": "text", "media_type": "text/plain", "data": PAGE}}}
    args, text = replay({"url": "https://example.com/a"}, content)
    assert args == {"url": "https://example.com/a"} and json.loads(text)["text"] == PAGE
    pdf = {**content, "content": {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                                                 "data": "JVBERi0x" * 10}}}
    assert "application/pdf document" in json.loads(replay({}, pdf)[1])["text"]
    args, text = replay({"url": "https://x.example/"}, {"type": "web_fetch_tool_result_error",
                                                        "error_code": "url_not_accessible"})
    assert json.loads(text)["error_code"] == "url_not_accessible"


@given(st.dictionaries(st.sampled_from(["url", "x"]), st.text(max_size=20) | st.integers(), max_size=2),
       st.recursive(st.none() | st.text(max_size=20) | st.integers(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["type", "url", "content", "source", "data", "title", "error_code"]), inner,
                        max_size=4), max_leaves=12))
def test_replay_takes_any_shape(shown, content) -> None:
    args, text = replay(shown, content)
    assert isinstance(args["url"], str) and isinstance(json.loads(text), dict)


# --- passages -----------------------------------------------------------------------------------


@given(st.text(max_size=2000), st.text(max_size=50))
def test_find_spans_are_ordered_disjoint_and_contain_the_pattern(text, pattern) -> None:
    spans = find(text, pattern, context=20, limit=5)
    assert len(spans) <= 5
    assert all(0 <= s < e <= len(text) for s, e in spans)
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))
    needle = " ".join(pattern.split()).casefold()
    if spans and needle and len(text.casefold()) == len(text):
        assert needle in text[spans[0][0]:spans[0][1]].casefold()
    excerpts(text, spans)


@given(st.text(max_size=2000), st.text(max_size=200))
def test_locate_gives_a_span_of_the_document(document, claim) -> None:
    span = locate(document, claim)
    if span is not None:
        start, end = span
        assert 0 <= start < end <= len(document) and end - start <= MAX_CITED
        assert not document[start].isspace() and not document[end - 1].isspace()
