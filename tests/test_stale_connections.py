"""An upstream that closes a kept-alive connection just as the gateway reuses it (its keep-alive ran
out): the request goes again on a new connection, answers 200 and cools nothing; a new
connection's failure, or one after a byte of the answer, is not retried. Both upstream clients: the
lean one that carries plain-HTTP calls (hub/backends/h1.py) and aiohttp (hub/upstream/transport.py),
which carries them with SEARCHHUB_LEAN_HTTP=0."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from .fakes.closing_upstream import ClosingUpstream
from .fakes.search_providers import KEYS
from .helpers import base_config


@pytest.fixture(autouse=True, params=["lean", "aiohttp"])
def upstream_client(request, monkeypatch) -> str:
    monkeypatch.setenv("SEARCHHUB_LEAN_HTTP", "1" if request.param == "lean" else "0")
    return request.param


@pytest.fixture
def upstream() -> Iterator[ClosingUpstream]:
    up = ClosingUpstream(serves=1).start()
    yield up
    up.stop()


def config(up: ClosingUpstream) -> dict:
    cfg = base_config(up.url + "/v1")
    cfg["webSearch"] = {"engines": [{"id": "serper", "type": "serper", "apiKey": KEYS["serper"],
                                     "baseURL": up.url + "/serper", "description": "Google results via Serper"}],
                        "cacheTtlMs": 0}
    return cfg


def chat(gw, *, stream: bool) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream, "web_search": False}
    return httpx.post(gw.url + "/v1/chat/completions", json=body, timeout=10)


def search(gw) -> httpx.Response:
    return httpx.post(gw.url + "/v1/search", json={"query": "latest rust release"}, timeout=10)


CALLS = {
    "chat": (lambda gw: chat(gw, stream=False), "/v1/chat/completions", lambda r: r.json()["choices"][0]["message"]["content"] == "fine"),
    "chat-stream": (lambda gw: chat(gw, stream=True), "/v1/chat/completions", lambda r: '"fine"' in r.text and "[DONE]" in r.text),
    "search": (search, "/serper/search", lambda r: r.json()["hits"][0]["url"] == "https://blog.rust-lang.org/"),
}


@pytest.mark.parametrize("kind", list(CALLS))
def test_a_connection_closed_as_it_is_reused_is_retried_on_a_new_one(gateway, upstream, kind) -> None:
    call, path, good = CALLS[kind]
    gw = gateway(config(upstream))
    first = call(gw)
    assert first.status_code == 200 and good(first), first.text
    again = call(gw)  # lands on the kept-alive connection, which the upstream closes
    assert again.status_code == 200 and good(again), again.text
    assert upstream.requests == [f"{path} answered", f"{path} closed", f"{path} answered"]
    assert upstream.connections == 2
    assert httpx.get(gw.url + "/health").json()["cooldowns"] == {}


def test_a_new_connection_closed_without_an_answer_is_not_retried(gateway) -> None:
    up = ClosingUpstream(serves=0).start()  # hangs up on every request: that is its answer to it
    try:
        gw = gateway(config(up))
        r = chat(gw, stream=False)
        assert r.status_code == 502, r.text
        assert up.requests == ["/v1/chat/completions closed"]
        assert "local.m" in httpx.get(gw.url + "/health").json()["cooldowns"]
    finally:
        up.stop()


def test_a_reused_connection_that_sent_part_of_an_answer_is_not_retried(gateway) -> None:
    up = ClosingUpstream(serves=1, head=b"HT").start()  # two bytes of a status line, then the close
    try:
        gw = gateway(config(up))
        assert chat(gw, stream=False).status_code == 200
        r = chat(gw, stream=False)
        assert r.status_code == 502, r.text
        assert up.requests == ["/v1/chat/completions answered", "/v1/chat/completions closed"]
    finally:
        up.stop()
