"""hub/search/fetch.py's query encoding is httpx's, byte for byte: an engine's request reaches the
service the same whether it goes over the lean client (which builds no httpx objects) or httpx."""

from __future__ import annotations

import httpx
from hypothesis import given
from hypothesis import strategies as st

from hub.search.fetch import query_string

values = st.one_of(st.text(), st.integers(), st.floats(allow_nan=False), st.booleans(), st.none())
params = st.dictionaries(st.text(min_size=1), st.one_of(values, st.lists(values, max_size=3),
                                                         st.tuples(values, values)), max_size=6)


@given(params)
def test_the_query_string_is_httpx_s(p) -> None:
    assert query_string(p) == str(httpx.QueryParams(p))


def test_a_searxng_query() -> None:
    assert query_string({"q": "Qué pasó? a&b=c", "format": "json", "safesearch": 0, "x": True}) == \
        "q=Qu%C3%A9+pas%C3%B3%3F+a%26b%3Dc&format=json&safesearch=0&x=true"
    assert query_string({"q": "topic 7 news", "format": "json"}) == "q=topic+7+news&format=json"


@given(st.dictionaries(st.text(alphabet="ab AZ09_.~-%+&=/", min_size=1), st.text(alphabet="ab AZ09_.~-%+&=/é"),
                       max_size=4))
def test_plain_and_escaped_characters_mixed(p) -> None:
    assert query_string(p) == str(httpx.QueryParams(p))
