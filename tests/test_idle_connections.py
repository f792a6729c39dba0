"""Idle upstream connections close on a timer, with no further traffic (issue 27, item 6): after a
burst of concurrent streams through the gateway, the upstream sees every connection it accepted
closed within the idle time (hub/upstream/transport.py, KEEPALIVE_S, shortened here) + 1 s, none of
them before it, and later requests open new connections and are answered. For the lean client
(hub/backends/h1.py, plain-HTTP upstreams), for aiohttp (SEARCHHUB_LEAN_HTTP=0) and for aiohttp's
SOCKS5 connector (a provider's own `proxy`, tests/fakes/forward_proxy.py). The upstream is
tests/fakes/raw_http.py, which counts the connections it accepted and has not seen end. The lean
client is also driven directly on real sockets: one timer for its pool, each connection closed at
its own idle deadline, and closing the client leaves no timer holding it."""

from __future__ import annotations

import asyncio
import gc
import json
import time
import weakref

import httpx
import pytest
from yarl import URL

from hub.upstream import transport
from hub.upstream.h1 import H1Client, Target

from .fakes.forward_proxy import ForwardProxy
from .fakes.raw_http import CHAT, RawUpstream, Request, framed, sse
from .helpers import base_config

IDLE = 0.5  # the gateway's idle time in these tests (KEEPALIVE_S is 4 s)
HOLD = 0.3  # the upstream holds every answer this long, so a burst's streams overlap
BURST = 50
SLACK = 0.05  # timers may fire a clock tick early; the upstream's clock is the same process's


def answer(req: Request) -> list:
    if json.loads(req.body or b"{}").get("stream"):
        return [HOLD, *framed(sse(["fine"]), "chunked", ctype="text/event-stream", chunk=4096)]
    return framed(json.dumps(CHAT).encode(), "length")


def wait_closed(up: RawUpstream, by: float) -> None:
    """Until the upstream sees no connection open, or the deadline (time.monotonic) passes."""
    while up.open_now and time.monotonic() < by:
        time.sleep(0.01)


async def _one_stream(client: httpx.AsyncClient) -> str:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True, "web_search": False}
    async with client.stream("POST", "/v1/chat/completions", json=body) as r:
        assert r.status_code == 200
        return (await r.aread()).decode()


def burst(url: str, n: int) -> list[str]:
    async def go() -> list[str]:
        limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
        async with httpx.AsyncClient(base_url=url, timeout=20, limits=limits) as client:
            return await asyncio.wait_for(asyncio.gather(*(_one_stream(client) for _ in range(n))), 30)

    return asyncio.run(go())


def chat(url: str, *, stream: bool) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream, "web_search": False}
    return httpx.post(url + "/v1/chat/completions", json=body, timeout=10)


@pytest.fixture
def upstream():
    up = RawUpstream(answer).start()
    yield up
    up.stop()


@pytest.fixture
def socks():
    p = ForwardProxy().start()
    yield p
    p.stop()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("client", ["lean", "aiohttp", "socks5"])
def test_a_bursts_connections_close_after_the_idle_time_without_traffic(gateway, upstream, socks, monkeypatch,
                                                                        client) -> None:
    monkeypatch.setattr(transport, "KEEPALIVE_S", IDLE)  # read when the gateway makes its client
    monkeypatch.setenv("SEARCHHUB_LEAN_HTTP", "0" if client == "aiohttp" else "1")
    cfg = base_config(upstream.url + "/v1")
    if client == "socks5":  # a provider's own SOCKS5 proxy: aiohttp-socks' connector, one tunnel per connection
        cfg["providers"]["local"]["proxy"] = socks.url("socks5")
    gw = gateway(cfg)

    start = time.monotonic()
    texts = burst(gw.url, BURST)
    end = time.monotonic()
    assert all('"fine"' in t and "[DONE]" in t for t in texts)
    assert upstream.most_open == BURST, "the burst's streams overlapped, one connection each"
    if client == "socks5":
        assert [p.kind for p in socks.passed] == ["socks5"] * BURST

    wait_closed(upstream, end + IDLE + 1.0)
    assert upstream.open_now == 0, f"{upstream.open_now} of {upstream.connections} connections still open " \
                                   f"{time.monotonic() - end:.2f} s after the burst (idle time {IDLE} s)"
    # kept alive until then: none closed before it had idled IDLE after its answer (HOLD after the start)
    assert min(upstream.closed_at.values()) >= start + HOLD + IDLE - SLACK

    # afterwards the gateway opens new connections and is answered, and those close in their turn
    before = upstream.connections
    r = chat(gw.url, stream=False)
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "fine", r.text
    r = chat(gw.url, stream=True)
    assert r.status_code == 200 and '"fine"' in r.text and "[DONE]" in r.text, r.text
    assert upstream.connections > before
    again = time.monotonic()
    wait_closed(upstream, again + IDLE + 1.0)
    assert upstream.open_now == 0, "the idle clock did not start again after the pool had emptied"


# ---------------------------------------------------------------- the lean client itself


def test_each_idle_connection_closes_at_its_own_deadline_on_one_timer(upstream) -> None:
    async def go() -> None:
        client = H1Client(keepalive_s=IDLE)
        target = Target(URL(upstream.url + "/v1/chat/completions"))
        body = json.dumps({"stream": True}).encode()

        async def one() -> None:
            resp = await client.request("POST", target, body, {}, 5, 5)
            assert b"[DONE]" in await resp.read()

        try:
            first = time.monotonic()
            await asyncio.wait_for(asyncio.gather(one(), one()), 10)  # two connections, idle after HOLD
            await asyncio.sleep(IDLE / 2)
            second = time.monotonic()
            await asyncio.wait_for(one(), 10)  # reuses the fresher one, idle again after HOLD
            second_done = time.monotonic()
            assert upstream.connections == 2
            loop = asyncio.get_running_loop()
            # asyncio's private heap of timer handles: if it ever goes, this check must fail, not pass
            assert isinstance(getattr(loop, "_scheduled", None), list), "cannot see the loop's timers"
            timers = [h for h in loop._scheduled
                      if not h.cancelled() and getattr(h._callback, "__self__", None) is client]
            assert len(timers) == 1, "one idle timer for the pool, not one per connection"
            deadline = time.monotonic() + IDLE + HOLD + 2
            while upstream.open_now and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            assert upstream.open_now == 0
            closed = sorted(upstream.closed_at.values())
            # the older one when its own idle time ran out, not when the fresher one's did
            assert first + HOLD + IDLE - SLACK <= closed[0] < second + HOLD + IDLE - SLACK
            assert second + HOLD + IDLE - SLACK <= closed[1] <= second_done + IDLE + 1.0
        finally:
            await client.aclose()

    asyncio.run(asyncio.wait_for(go(), 30))


def test_closing_the_client_stops_its_idle_timer(upstream) -> None:
    async def go() -> None:
        client = H1Client(keepalive_s=60)  # the timer would otherwise wait a minute
        target = Target(URL(upstream.url + "/v1/chat/completions"))
        resp = await client.request("POST", target, b"{}", {}, 5, 5)
        assert json.loads(await resp.read())["choices"][0]["message"]["content"] == "fine"
        assert upstream.open_now == 1  # idle in the pool, its timer armed
        ref = weakref.ref(client)
        await client.aclose()
        del client, resp
        deadline = time.monotonic() + 5
        while upstream.open_now and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert upstream.open_now == 0
        gc.collect()
        assert ref() is None, "something (a timer) still holds the closed client"

    started = time.monotonic()
    asyncio.run(asyncio.wait_for(go(), 20))
    assert time.monotonic() - started < 10  # no timer kept the loop running
