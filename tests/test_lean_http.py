"""The lean HTTP/1.1 client (hub/backends/h1.py) that carries plain-HTTP upstream calls: against a raw
upstream that writes its answers byte for byte (tests/fakes/raw_http.py) -- every framing, split
writes, compression, interim answers, garbage, stalls and hang-ups -- through the gateway over HTTP,
and the client itself on real sockets (pooling, limits, flow control, cancellation, a property over
framings and splits)."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from yarl import URL

from hub.upstream import h1
from hub.upstream.h1 import H1Client, Target

from .fakes.raw_http import CHAT, RawUpstream, chat_chunk, framed, sse
from .helpers import base_config

CHAT_BYTES = json.dumps(CHAT).encode()


def chat(gw, *, stream: bool = False, timeout: float = 10) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream, "web_search": False}
    return httpx.post(gw.url + "/v1/chat/completions", json=body, timeout=timeout)


def streamed_text(r: httpx.Response) -> str:
    out = []
    for line in r.text.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            c = json.loads(line[6:])
            if c.get("choices"):
                out.append(c["choices"][0]["delta"].get("content") or "")
    return "".join(out)


# ---------------------------------------------------------------- through the gateway


@pytest.mark.parametrize("framing", ["length", "chunked", "eof", "close"])
@pytest.mark.parametrize("encoding", [None, "gzip", "deflate"])
def test_every_framing_and_encoding_answers(gateway, raw, framing, encoding) -> None:
    up = raw(lambda req: framed(CHAT_BYTES, framing, encoding=encoding))
    gw = gateway(base_config(up.url + "/v1"))
    for _ in range(3):
        r = chat(gw)
        assert r.status_code == 200, r.text
        assert r.json()["choices"][0]["message"]["content"] == "fine"
    assert up.requests[0].headers["accept-encoding"] == "identity"
    # a connection whose answer ended with it is never reused; the others carry every request
    assert up.connections == (3 if framing in ("eof", "close") else 1)


@pytest.mark.parametrize("framing", ["length", "chunked", "eof"])
def test_a_stream_written_a_few_bytes_at_a_time_arrives_whole(gateway, raw, framing) -> None:
    words = [f"w{i} " for i in range(30)]
    payload = sse(words)

    def answer(req):
        whole = framed(payload, framing, ctype="text/event-stream", chunk=5)[0]
        head, _, rest = whole.partition(b"\r\n\r\n")
        steps: list = [head + b"\r\n\r\n"]
        for i in range(0, len(rest), 11):
            steps += [rest[i:i + 11], 0.0005]
        return steps + ([None] if framing == "eof" else [])

    up = raw(answer)
    gw = gateway(base_config(up.url + "/v1"))
    r = chat(gw, stream=True)
    assert r.status_code == 200, r.text
    assert streamed_text(r) == "".join(words)
    assert r.text.rstrip().endswith("data: [DONE]")


def test_an_interim_100_continue_is_skipped(gateway, raw) -> None:
    up = raw(lambda req: [b"HTTP/1.1 100 Continue\r\n\r\n", *framed(CHAT_BYTES, "length")])
    gw = gateway(base_config(up.url + "/v1"))
    r = chat(gw)
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "fine", r.text


@pytest.mark.parametrize("garbage", [
    b"this is not http\r\n\r\n",
    b"HTTP/1.1 2x0 OK\r\ncontent-length: 2\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nnope\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\ncontent-encoding: br\r\n\r\n0123456789",
    b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\ncontent-encoding: gzip\r\n\r\n0123456789",
])
def test_a_malformed_answer_is_a_502_and_the_gateway_carries_on(gateway, raw, garbage) -> None:
    state = {"n": 0}

    def answer(req):
        state["n"] += 1
        return [garbage] if state["n"] == 1 else framed(CHAT_BYTES, "length")

    up = raw(answer)
    cfg = base_config(up.url + "/v1")
    cfg["virtualrouter"]["cooldownMs"] = 0
    gw = gateway(cfg)
    r = chat(gw)
    assert r.status_code == 502, r.text
    assert r.json()["error"]["code"] == "upstream_unavailable"
    assert "upstream connection failed" in r.json()["error"]["message"]
    ok = chat(gw)
    assert ok.status_code == 200, ok.text
    assert up.connections == 2  # the broken connection was not reused


def test_an_upstream_that_stops_sending_times_out_with_504(gateway, raw) -> None:
    up = raw(lambda req: [b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{\"id\":", 5.0])
    cfg = base_config(up.url + "/v1")
    cfg["providers"]["local"]["timeoutMs"] = 300
    gw = gateway(cfg)
    t0 = time.monotonic()
    r = chat(gw)
    took = time.monotonic() - t0
    assert r.status_code == 504, r.text
    assert "timed out" in r.json()["error"]["message"]
    assert 0.25 < took < 2.0


def test_a_stream_cut_mid_answer_ends_with_an_error_event(gateway, raw) -> None:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    first = chat_chunk({"role": "assistant", "content": "par"})
    up = raw(lambda req: [head + b"%x\r\n%s\r\n" % (len(first), first), 0.05, None])
    gw = gateway(base_config(up.url + "/v1"))
    r = chat(gw, stream=True)
    assert r.status_code == 200
    data = [line for line in r.text.splitlines() if line.startswith("data: ")]
    assert '"par"' in r.text
    assert '"error"' in data[-1] and data[-1] != "data: [DONE]"


def test_bytes_after_the_answer_retire_the_connection(gateway, raw) -> None:
    up = raw(lambda req: [framed(CHAT_BYTES, "length")[0] + b"HTTP/1.1 200 OK\r\n\r\nstray"])
    gw = gateway(base_config(up.url + "/v1"))
    for _ in range(3):
        r = chat(gw)
        assert r.status_code == 200, r.text
    assert up.connections >= 2  # a connection that sent bytes nobody asked for is dropped


def test_the_aiohttp_path_still_serves_when_the_lean_client_is_off(gateway, raw, monkeypatch) -> None:
    monkeypatch.setenv("SEARCHHUB_LEAN_HTTP", "0")
    up = raw(lambda req: framed(CHAT_BYTES, "chunked"))
    gw = gateway(base_config(up.url + "/v1"))
    r = chat(gw)
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "fine", r.text
    assert "gzip" in up.requests[0].headers["accept-encoding"]  # aiohttp's own request


# ---------------------------------------------------------------- the client on its own


def run(coro):
    return asyncio.run(coro)


def target(up: RawUpstream, path: str = "/v1/chat/completions") -> Target:
    t = Target.of(URL(up.url + path, encoded=True))
    assert t is not None
    return t


def test_targets_are_plain_http_only() -> None:
    assert Target.of(URL("https://api.example.com/v1")) is None
    assert Target.of(URL("http://user:pw@host/v1")) is None
    t = Target.of(URL("http://[::1]:8080/v1/x?a=1", encoded=True))
    assert t is not None and t.key == ("::1", 8080) and t.host_header == "[::1]:8080" and t.path_qs == "/v1/x?a=1"
    t = Target.of(URL("http://example.com/"))
    assert t is not None and t.key == ("example.com", 80) and t.host_header == "example.com"


def test_a_header_with_a_line_break_is_refused_before_anything_is_sent() -> None:
    async def main():
        up = await RawUpstream(lambda req: framed(b"{}", "length")).serve()
        client = H1Client()
        with pytest.raises(ValueError):
            await client.request("POST", target(up), b"{}", {"x-a": "1\r\nx-injected: yes"}, 1, 1)
        await client.aclose()
        await up.close()
        return up

    up = run(main())
    assert up.requests == []


def test_connections_are_reused_limited_and_idled_out() -> None:
    async def main():
        up = await RawUpstream(lambda req: [0.02, *framed(b"ok", "length")]).serve()
        client = H1Client(max_connections=2, keepalive_s=0.2)
        t = target(up)

        async def one() -> bytes:
            resp = await client.request("GET", t, None, {}, 1, 5)
            try:
                return await resp.read()
            finally:
                resp.release()

        assert await asyncio.gather(*(one() for _ in range(6))) == [b"ok"] * 6
        assert up.most_open == 2 and up.connections == 2  # at most two, and reused
        await one()
        assert up.connections == 2
        await asyncio.sleep(0.3)  # past keepalive_s: the idle connections are not used again
        await one()
        assert up.connections == 3
        await client.aclose()
        await up.close()

    run(main())


def test_a_cancelled_request_closes_its_connection() -> None:
    async def main():
        up = await RawUpstream(lambda req: [1.0, *framed(b"late", "length")] if req.path == "/slow"
                               else framed(b"ok", "length")).serve()
        client = H1Client()
        slow = asyncio.ensure_future(client.request("GET", target(up, "/slow"), None, {}, 1, 5))
        await asyncio.sleep(0.1)
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        resp = await client.request("GET", target(up, "/fast"), None, {}, 1, 5)
        assert await resp.read() == b"ok"
        assert up.connections == 2  # the cancelled one was not handed out again
        await asyncio.sleep(1.2)  # the fake notices once its sleep ends and it writes
        assert up.closed_by_client == 1 and up.open_now == 1
        await client.aclose()
        await up.close()

    run(main())


def test_a_refused_connection_and_a_silent_server_raise_the_clients_errors() -> None:
    async def main():
        up = await RawUpstream(lambda req: [5.0]).serve()
        client = H1Client()
        with pytest.raises(h1.ReadTimedOut):
            await client.request("GET", target(up), None, {}, 1, 0.2)
        port = up.port
        await up.close()
        await asyncio.sleep(0.05)
        dead = Target.of(URL(f"http://127.0.0.1:{port}/"))
        with pytest.raises(h1.ConnectFailed):
            await client.request("GET", dead, None, {}, 1, 1)
        await client.aclose()

    run(main())


def test_a_slow_reader_pauses_the_upstream_and_gets_every_byte() -> None:
    body = bytes(range(256)) * 8192  # 2 MiB

    async def main():
        up = await RawUpstream(lambda req: framed(body, "chunked", chunk=65536)).serve()
        client = H1Client()
        resp = await client.request("GET", target(up), None, {}, 1, 5)
        got, most = [], 0
        async for part in resp.content.iter_any():
            most = max(most, len(part))
            got.append(part)
            await asyncio.sleep(0.002)
        resp.release()
        await client.aclose()
        await up.close()
        return b"".join(got), most

    data, most = run(main())
    assert data == body
    assert most <= h1.HIGH_WATER + 256 * 1024  # reading paused instead of buffering it all


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.binary(max_size=3000), framing=st.sampled_from(["length", "chunked", "eof", "close"]),
       encoding=st.sampled_from([None, "gzip", "deflate"]), chunk=st.integers(1, 300),
       cuts=st.lists(st.integers(1, 400), max_size=12), streamed=st.booleans())
def test_any_framing_split_anywhere_reads_back_the_body(body, framing, encoding, chunk, cuts, streamed) -> None:
    """Property: however the answer is framed, compressed and split into writes, the client reads
    exactly the body, by `read()` or piece by piece."""

    def answer(req):
        steps = framed(body, framing, encoding=encoding, chunk=chunk)
        whole, tail = steps[0], steps[1:]
        out: list = []
        i = 0
        for c in cuts:
            if i >= len(whole):
                break
            out += [whole[i:i + c], 0.0]
            i += c
        return [*out, whole[i:], *tail]

    async def main():
        up = await RawUpstream(answer).serve()
        client = H1Client()
        got = []
        for _ in range(2):  # the second request reuses the connection unless the answer ended it
            resp = await client.request("POST", target(up), b"{}", {"content-type": "application/json"}, 1, 5)
            assert resp.status == 200
            if streamed:
                got.append(b"".join([p async for p in resp.content.iter_any()]))
            else:
                got.append(await resp.read())
            resp.release()
        await client.aclose()
        await up.close()
        return got, up.connections

    got, connections = run(main())
    assert got == [body, body]
    assert connections == (2 if framing in ("eof", "close") else 1)


def test_the_read_clock_follows_each_requests_timeout_on_a_kept_connection() -> None:
    """One timer per connection stays armed between requests: a shorter timeout on the next request
    still fires in time, and a clock left from a short one never cuts a longer one short."""

    async def main():
        up = await RawUpstream(lambda req: [{"/fast": 0.0, "/slow": 0.4, "/stall": 5.0}[req.path],
                                            *framed(b"ok", "length")]).serve()
        client = H1Client()

        async def get(path: str, read_s: float) -> bytes:
            resp = await client.request("GET", target(up, path), None, {}, 1, read_s)
            try:
                return await resp.read()
            finally:
                resp.release()

        assert await get("/fast", 0.2) == b"ok"
        await asyncio.sleep(0.3)  # the short clock comes due while the connection idles
        assert await get("/slow", 5) == b"ok"  # a 0.4 s answer under a 5 s clock
        assert await get("/fast", 5) == b"ok"
        t0 = time.monotonic()
        with pytest.raises(h1.ReadTimedOut):
            await get("/stall", 0.2)  # the clock armed for 5 s is brought forward
        took = time.monotonic() - t0
        assert up.connections == 1  # all on the kept-alive connection until the timeout
        await client.aclose()
        await up.close()
        return took

    took = run(main())
    assert 0.15 < took < 1.0
