"""hub/search/fetch.py's query encoding is httpx's, byte for byte: an engine's request reaches the
service the same whether it goes over the lean client (which builds no httpx objects) or httpx."""

from __future__ import annotations

import httpx
from hypothesis import given
from hypothesis import strategies as st

from hub.search.fetch import query_string, with_query

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


def test_a_query_follows_the_url_s_own() -> None:
    """An engine URL with a query of its own keeps it, and the parameters follow (httpx's `params=`
    would replace it, token and all)."""
    q = query_string({"q": "a b&c", "n": 3})
    assert with_query("http://s.test/search", q) == "http://s.test/search?q=a+b%26c&n=3"
    assert with_query("http://s.test/search?token=a%2Bb", q) == "http://s.test/search?token=a%2Bb&q=a+b%26c&n=3"
    assert with_query("http://s.test/search?", q) == "http://s.test/search?q=a+b%26c&n=3"
    assert with_query("http://s.test/search?k=1&", q) == "http://s.test/search?k=1&q=a+b%26c&n=3"
    assert with_query("http://s.test/search?k=1", "") == "http://s.test/search?k=1"


def test_an_engine_url_with_a_query_reaches_the_service_whole(tmp_path) -> None:
    """Over the wire: the service sees the URL's own query and the engine's parameters after it."""
    import asyncio

    from hub.search.fetch import Outgoing, fetch
    from hub.upstream.http import make_client

    seen: list[bytes] = []

    async def main() -> None:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen.append(await reader.readuntil(b"\r\n"))
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = make_client(env={})
        try:
            got = await fetch(client, Outgoing("GET", f"http://127.0.0.1:{port}/search?token=a%2Bb",
                                               params={"q": "rust 1.91", "format": "json"}), timeout=5)
        finally:
            await client.aclose()
            server.close()
        assert got.status_code == 200 and got.content == b"{}"

    asyncio.run(main())
    assert seen == [b"GET /search?token=a%2Bb&q=rust+1.91&format=json HTTP/1.1\r\n"]
