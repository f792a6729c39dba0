"""Large answers through the lean HTTP/1.1 client (hub/backends/h1.py), from outside (issue 25): a
non-streamed answer of megabytes -- a long completion, a search service's big JSON -- arrives whole
and frees its concurrency slot; a streamed answer whose client stops reading holds the upstream back
and completes when the client reads on; an upstream that stalls mid-body times out, whatever was
already buffered. Every upstream is a raw socket server on loopback (tests/fakes/raw_http.py)
writing its answer byte for byte; the gateway is driven over HTTP."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import pytest
from yarl import URL

from hub.upstream import h1
from hub.upstream.h1 import H1Client, Target

from .fakes.raw_http import CHAT, RawUpstream, chat_chunk, framed
from .helpers import base_config

MB = 1024 * 1024


def chat(gw, *, stream: bool = False, timeout: float = 15) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream, "web_search": False}
    return httpx.post(gw.url + "/v1/chat/completions", json=body, timeout=timeout)


def long_text(size: int) -> str:
    """`size` characters that differ along the way (a piece lost or repeated shows)."""
    words = "".join(f"w{i:07d} " for i in range(size // 9 + 1))
    return words[:size]


def completion(text: str) -> bytes:
    doc = json.loads(json.dumps(CHAT))
    doc["choices"][0]["message"]["content"] = text
    return json.dumps(doc).encode()


def chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


# ---------------------------------------------------------------- through the gateway


@pytest.mark.parametrize("framing", ["length", "chunked", "eof"])
def test_a_5_mb_completion_arrives_whole_and_frees_its_slot(gateway, raw, framing) -> None:
    text = long_text(5 * MB)
    answer = framed(completion(text), framing, chunk=64 * 1024)
    up = raw(lambda req: answer)
    cfg = base_config(up.url + "/v1")
    cfg["providers"]["local"].update(maxConcurrency=1, timeoutMs=5000)
    gw = gateway(cfg)
    for _ in range(2):  # the second needs the provider's one slot: the first gave it back
        t0 = time.monotonic()
        r = chat(gw)
        took = time.monotonic() - t0
        assert r.status_code == 200, r.text[:500]
        assert r.json()["choices"][0]["message"]["content"] == text
        assert took < 10
    assert len(up.requests) == 2


def test_an_answer_just_over_the_high_water_mark_leaves_its_connection_usable(gateway, raw) -> None:
    """The read that completes the body is the one that crosses HIGH_WATER: the connection must go
    back to the pool reading, or the next request on it waits for ever."""
    base = len(completion(""))
    text = long_text(h1.HIGH_WATER + 1 - base)
    body = completion(text)
    assert len(body) == h1.HIGH_WATER + 1
    up = raw(lambda req: framed(body, "length"))
    cfg = base_config(up.url + "/v1")
    cfg["providers"]["local"].update(maxConcurrency=1, timeoutMs=3000)
    gw = gateway(cfg)
    for _ in range(3):
        r = chat(gw, timeout=10)
        assert r.status_code == 200, r.text[:500]
        assert r.json()["choices"][0]["message"]["content"] == text
    assert up.connections == 1  # kept alive and reused


@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_a_3_mb_search_answer_is_parsed_whole(gateway, raw, framing) -> None:
    results = [{"url": f"https://site{i}.example.org/page", "title": f"Result {i}", "content": long_text(64_000),
                "engine": "duckduckgo", "engines": ["duckduckgo"], "score": 50.0 - i, "category": "general"}
               for i in range(50)]
    doc = {"query": "large answers", "number_of_results": 50, "results": results, "answers": [],
           "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []}
    body = json.dumps(doc).encode()
    assert len(body) >= 3 * MB
    answer = framed(body, framing, chunk=64 * 1024)
    up = raw(lambda req: answer if req.path.startswith("/search?") else framed(b"{}", "length", status=404))
    cfg = base_config(up.url + "/v1")
    cfg["webSearch"] = {"engines": [{"id": "searxng", "type": "searxng", "baseURL": up.url, "default": True,
                                     "timeoutMs": 8000}], "cacheTtlMs": 0}
    gw = gateway(cfg)
    for n in range(2):
        t0 = time.monotonic()
        r = httpx.post(gw.url + "/v1/search", json={"query": f"large answers {n}", "count": 10}, timeout=15)
        took = time.monotonic() - t0
        assert r.status_code == 200, r.text[:500]
        hits = r.json()["hits"]  # as many as fit webSearch's maxTotalResultBytes, in order
        assert len(hits) >= 3
        assert [h["url"] for h in hits] == [f"https://site{i}.example.org/page" for i in range(len(hits))]
        assert hits[0]["snippet"].startswith("w0000000 w0000001 ")
        assert took < 6
    assert len(up.requests) == 2 and up.connections == 1


def test_a_stream_whose_client_stops_reading_holds_the_upstream_back_then_completes(gateway, raw) -> None:
    """The client reads a little, then nothing: the upstream's writes must come to a stop (the
    gateway pauses reading instead of buffering an endless stream), and once the client reads on,
    every chunk the upstream wrote arrives, then the end."""
    piece = "y" * 16384
    cap = 16_000  # 256 MB: far beyond every buffer on the way
    finish = threading.Event()
    sent = {"pieces": 0}

    def answer(req):
        yield (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
               + chunked(chat_chunk({"role": "assistant", "content": ""})))
        while not finish.is_set() and sent["pieces"] < cap:
            sent["pieces"] += 1
            yield chunked(chat_chunk({"content": piece}))
        yield chunked(chat_chunk({}, "stop") + b"data: [DONE]\n\n") + b"0\r\n\r\n"

    up = raw(answer)
    gw = gateway(base_config(up.url + "/v1"))
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True, "web_search": False}
    with httpx.Client(timeout=20) as client, client.stream("POST", gw.url + "/v1/chat/completions", json=body) as r:
        assert r.status_code == 200
        parts = r.iter_raw()
        got = [next(parts)]
        # the client reads nothing more: the upstream's writes stop
        deadline = time.monotonic() + 10
        last, since = up.written, time.monotonic()
        while time.monotonic() - since < 0.6:
            assert time.monotonic() < deadline, "the upstream never stopped writing"
            time.sleep(0.05)
            if up.written != last:
                last, since = up.written, time.monotonic()
        held = sent["pieces"]
        assert held < cap, "the gateway took the whole stream while its client read nothing"
        finish.set()
        got.extend(parts)  # the client reads on: the rest arrives
    text = b"".join(got).decode()
    assert text.rstrip().endswith("data: [DONE]")
    content = []
    for line in text.splitlines():
        if line.startswith("data: {"):
            c = json.loads(line[6:])
            assert "error" not in c, c
            content.append(c["choices"][0]["delta"].get("content") or "")
    assert "".join(content) == piece * sent["pieces"]
    assert sent["pieces"] >= held


def test_an_upstream_that_stalls_mid_body_after_a_megabyte_times_out(gateway, raw) -> None:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % (4 * MB)
    up = raw(lambda req: [head + b'{"id": "' + b"x" * MB, 10.0])
    cfg = base_config(up.url + "/v1")
    cfg["providers"]["local"].update(timeoutMs=400, maxConcurrency=1)
    gw = gateway(cfg)
    for _ in range(2):  # the slot is free again after the timeout
        t0 = time.monotonic()
        r = chat(gw)
        took = time.monotonic() - t0
        assert r.status_code == 504, r.text[:500]
        assert r.json()["error"]["code"] == "upstream_unavailable"
        assert "timed out" in r.json()["error"]["message"]
        assert 0.35 < took < 4
    t0 = time.monotonic()
    r = httpx.post(gw.url + "/v1/messages", json={"model": "m", "max_tokens": 50, "web_search": False,
                                                  "messages": [{"role": "user", "content": "hi"}]}, timeout=15)
    assert r.status_code == 504, r.text[:500]
    err = r.json()
    assert err["type"] == "error" and err["error"]["type"] == "timeout_error" and "timed out" in err["error"]["message"]
    assert time.monotonic() - t0 < 4


def test_a_stream_that_stalls_after_a_megabyte_ends_with_a_timeout_error(gateway, raw) -> None:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    events = chat_chunk({"role": "assistant", "content": ""}) + b"".join(
        chat_chunk({"content": "z" * 16384}) for _ in range(64))
    up = raw(lambda req: [head + chunked(events), 10.0])
    cfg = base_config(up.url + "/v1")
    cfg["providers"]["local"]["timeoutMs"] = 400
    gw = gateway(cfg)
    t0 = time.monotonic()
    r = chat(gw, stream=True)
    took = time.monotonic() - t0
    assert r.status_code == 200
    data = [line for line in r.text.splitlines() if line.startswith("data: ")]
    assert len(r.text) > MB
    last = json.loads(data[-1][6:])
    assert "timed out" in last["error"]["message"], data[-1]
    assert 0.35 < took < 4


# ---------------------------------------------------------------- the client on its own


def target(up: RawUpstream, path: str) -> Target:
    t = Target.of(URL(up.url + path, encoded=True))
    assert t is not None
    return t


def test_a_whole_body_read_resumes_a_paused_answer_and_never_pauses() -> None:
    body = bytes(range(256)) * (20 * 4096)  # 20 MiB

    async def main():
        up = await RawUpstream(lambda req: framed(body, "length")).serve()
        client = H1Client()
        resp = await client.request("GET", target(up, "/big"), None, {}, 1, 2)
        await asyncio.sleep(0.2)  # nobody reads yet: reading pauses at HIGH_WATER
        conn = resp._conn
        assert conn is not None and conn.paused
        async with asyncio.timeout(10):
            got = await resp.read()
        resp.release()
        await client.aclose()
        await up.close()
        return got

    assert run(main()) == body


def test_an_answer_paused_by_its_last_read_leaves_a_connection_that_reads_the_next() -> None:
    body = b"z" * (h1.HIGH_WATER + 1)  # only the read that brings the last byte crosses HIGH_WATER

    async def main():
        up = await RawUpstream(lambda req: framed(body, "length") if req.path == "/big"
                               else framed(b"ok", "length")).serve()
        client = H1Client()
        resp = await client.request("GET", target(up, "/big"), None, {}, 1, 2)
        await asyncio.sleep(0.2)  # the whole answer is in before the consumer takes any of it
        got = b"".join([p async for p in resp.content.iter_any()])
        resp.release()
        async with asyncio.timeout(5):
            again = await client.request("GET", target(up, "/small"), None, {}, 1, 2)
            small = await again.read()
        again.release()
        await client.aclose()
        await up.close()
        return got, small, up.connections

    got, small, connections = run(main())
    assert got == body and small == b"ok" and connections == 1


def test_a_whole_body_read_waits_on_the_read_clock() -> None:
    head = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % (8 * MB)

    async def main():
        up = await RawUpstream(lambda req: [head + b"a" * (2 * MB), 10.0]).serve()
        client = H1Client()
        resp = await client.request("GET", target(up, "/stall"), None, {}, 1, 0.3)
        await asyncio.sleep(0.5)  # paused meanwhile: that is no stall of the upstream's
        t0 = time.monotonic()
        with pytest.raises(h1.ReadTimedOut):
            async with asyncio.timeout(5):
                await resp.read()
        took = time.monotonic() - t0
        resp.release()
        await client.aclose()
        await up.close()
        return took

    assert 0.25 < run(main()) < 2


def run(coro):
    return asyncio.run(coro)
