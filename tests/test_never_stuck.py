"""Never stuck (issue 27, items 1 and 2), from outside: HTTP on loopback, a raw-socket upstream.

1. A client that leaves before the first token releases its concurrency slot at once and closes the
   upstream request, on every model endpoint, streaming or not: with `maxConcurrency` full of clients
   that hung up, the next request is served, not refused with 503.
2. Every attempt's first content has a deadline (`firstTokenTimeoutMs`): an upstream that only sends
   keep-alive comments (`: ping`) is a failed attempt once it passes; the next target answers, or with
   none left the client gets a 504 in its protocol's shape, and a stream that already sent its 200 (a
   search round's second model call) ends with its protocol's error event. Traced as failed.
"""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from .fakes.broken_stream import ANSWERS
from .fakes.raw_http import CHAT, RawUpstream, chat_chunk, sse
from .fakes.search_providers import Reply
from .helpers import base_config, searxng_engine

pytestmark = pytest.mark.timeout(90)
HI = [{"role": "user", "content": "hello there"}]
HANG = "hang on"  # a request with this text gets an upstream that never brings content
SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
PING_S = 0.05
PINGS_FOR_S = 15.0  # an upstream's pings end (and it closes) after this: every test stays bounded
ADMIN = "admin-key-for-never-stuck-01"


def pings() -> list:
    """An answer whose 200 is out and which then only pings; the pings' writes fail (and the
    upstream counts the connection closed) soon after the gateway closes its end."""
    return [SSE_HEAD, *[b": ping\n\n", PING_S] * int(PINGS_FOR_S / PING_S), None]


def slow_json() -> list:
    """A non-streamed answer whose head is out and whose body never completes (a space at a time)."""
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100000\r\nconnection: close\r\n\r\n"
    return [head, *[b" ", PING_S] * int(PINGS_FOR_S / PING_S), None]


def chat_answer(req) -> list:
    """An OpenAI-compatible server: stalls a request that says HANG, answers any other."""
    body = json.loads(req.body)
    if HANG in json.dumps(body.get("messages")):
        return pings() if body.get("stream") else slow_json()
    if body.get("stream"):
        return [SSE_HEAD + sse(["fine"]), None]
    data = json.dumps(CHAT).encode()
    return [b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
            % len(data) + data, None]


def native_answer(req) -> list:
    """A commercial provider's own protocol (Anthropic Messages at /v1/messages, OpenAI Responses at
    /v1/responses): stalls a request that says HANG, answers any other."""
    body = json.loads(req.body)
    anthropic = req.path.endswith("/messages")
    if HANG in json.dumps(body):
        return pings() if body.get("stream") else slow_json()
    if body.get("stream"):
        return [ANSWERS["anthropic_ok" if anthropic else "responses_ok"], None]
    data = json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                       "content": [{"type": "text", "text": "fine"}], "stop_reason": "end_turn",
                       "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1}} if anthropic else
                      {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "m",
                       "output": [{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                                   "content": [{"type": "output_text", "text": "fine", "annotations": []}]}]}).encode()
    return [b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
            % len(data) + data, None]


def request_body(path: str, text: str, stream: bool) -> dict:
    if path == "/v1/responses":
        return {"model": "d", "stream": stream, "input": text}
    body = {"model": "d", "stream": stream, "messages": [{"role": "user", "content": text}]}
    if path == "/v1/messages":
        body["max_tokens"] = 50
    return body


def send_and_abandon(gw_url: str, path: str, body: dict) -> socket.socket:
    """A client that sends its request on a raw socket (closed by the caller, with no goodbye)."""
    port = int(gw_url.rsplit(":", 1)[1])
    data = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
              f"content-length: {len(data)}\r\n\r\n".encode() + data)
    return s


def wait_for(what, timeout: float, step: float = 0.02) -> float:
    """Seconds until what() held; fails after `timeout`."""
    started = time.monotonic()
    while not what():
        assert time.monotonic() - started < timeout, f"not within {timeout} s"
        time.sleep(step)
    return time.monotonic() - started


def in_flight(gw) -> dict:
    return httpx.get(gw.url + "/health", timeout=5).json()["inFlight"]


def leave_early_then_ask_again(gw, up: RawUpstream, path: str, stream: bool, clients: int) -> None:
    """`clients` requests that hang upstream and whose clients leave 200 ms after the upstream got
    them; then their slots are free and their upstream requests closed within a second, and a new
    request is served."""
    before = len(up.requests)
    socks = [send_and_abandon(gw.url, path, request_body(path, HANG, stream)) for _ in range(clients)]
    try:
        wait_for(lambda: len(up.requests) >= before + clients, 10)
        time.sleep(0.2)
        assert sum(in_flight(gw).values()) == clients  # the slots are taken: maxConcurrency is full
    finally:
        for s in socks:
            s.close()
    assert wait_for(lambda: not in_flight(gw), 1.0) < 1.0  # released at once, not at timeoutMs
    assert wait_for(lambda: up.open_now == 0, 1.0) < 1.0  # and the upstream requests closed
    r = httpx.post(gw.url + path, json=request_body(path, "hello there", stream), timeout=10)
    assert r.status_code == 200, r.text
    assert b"fine" in r.content or b"native answer" in r.content


PATHS = ["/v1/chat/completions", "/v1/responses", "/v1/messages"]


@pytest.mark.parametrize("path", PATHS)
def test_clients_leaving_before_the_first_token_free_their_slots(gateway, raw, path) -> None:
    up = raw(chat_answer)
    cfg = base_config(up.url + "/v1")
    cfg["providers"]["local"]["maxConcurrency"] = 2
    gw = gateway(cfg)
    leave_early_then_ask_again(gw, up, path, True, clients=2)


@pytest.mark.parametrize("path", PATHS)
def test_clients_leaving_an_unstreamed_request_free_their_slots(gateway, raw, path) -> None:
    """The same without streaming (this held before: the guard stays)."""
    up = raw(chat_answer)
    cfg = base_config(up.url + "/v1")
    cfg["providers"]["local"]["maxConcurrency"] = 2
    gw = gateway(cfg)
    leave_early_then_ask_again(gw, up, path, False, clients=2)


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(("kind", "path"), [("anthropic", "/v1/messages"), ("openai", "/v1/responses")])
def test_clients_leaving_a_passthrough_request_free_their_slots(gateway, raw, kind, path, stream) -> None:
    """A commercial target's own protocol, passed through untouched (hub/routing/passthrough.py)."""
    up = raw(native_answer)
    cfg = base_config(up.url + "/v1")
    cfg["providers"] = {"native": {"type": kind, "baseURL": up.url + ("" if kind == "anthropic" else "/v1"),
                                   "apiKey": "sk-never-stuck-native-1", "maxConcurrency": 1}}
    cfg["virtualrouter"]["routing"]["default"] = [{"id": "p", "priority": 100, "targets": ["native.m"]}]
    gw = gateway(cfg)
    leave_early_then_ask_again(gw, up, path, stream, clients=1)


# --- the first-content deadline -----------------------------------------------------------------------

DEADLINE_MS = 500


def pinger_config(up: RawUpstream, fallback_url: str | None) -> dict:
    cfg = base_config(fallback_url or up.url + "/v1")
    cfg["providers"]["pinger"] = {"type": "vllm", "baseURL": up.url + "/v1", "firstTokenTimeoutMs": DEADLINE_MS}
    pools = [{"id": "first", "priority": 100, "targets": ["pinger.m"]}]
    if fallback_url:
        pools.append({"id": "fallback", "priority": 50, "targets": ["local.m"]})
    cfg["virtualrouter"]["routing"]["default"] = pools
    cfg["server"]["adminKeys"] = [ADMIN]
    return cfg


def failed_traces(gw) -> list[dict]:
    deadline = time.monotonic() + 5
    while True:
        r = httpx.get(gw.url + "/admin/traces", params={"errors": "1"}, timeout=10,
                      headers={"authorization": f"Bearer {ADMIN}"})
        assert r.status_code == 200, r.text
        if r.json()["data"] or time.monotonic() > deadline:
            return r.json()["data"]
        time.sleep(0.05)


def sse_text(r: httpx.Response) -> str:
    return "".join(r.iter_text())


@pytest.mark.parametrize("path", PATHS)
def test_a_pings_only_upstream_fails_over_within_its_deadline(gateway, raw, fake_model, path) -> None:
    up = raw(lambda req: pings())
    fake_model.default = {"content": "fallback"}
    gw = gateway(pinger_config(up, fake_model.url))
    started = time.monotonic()
    with httpx.stream("POST", gw.url + path, json=request_body(path, "hello there", True), timeout=10) as r:
        assert r.status_code == 200
        text = sse_text(r)
    took = time.monotonic() - started
    assert "fallback" in text
    assert DEADLINE_MS / 1000 <= took < DEADLINE_MS / 1000 + 3, took
    assert len(up.requests) == 1 and len(fake_model.requests) == 1
    wait_for(lambda: up.open_now == 0, 2.0)  # the pinging request was closed


@pytest.mark.parametrize("path", PATHS)
def test_a_pings_only_upstream_with_no_target_left_is_a_504(gateway, raw, path) -> None:
    up = raw(lambda req: pings())
    gw = gateway(pinger_config(up, None))
    started = time.monotonic()
    r = httpx.post(gw.url + path, json=request_body(path, "hello there", True), timeout=10)
    assert time.monotonic() - started < DEADLINE_MS / 1000 + 3
    assert r.status_code == 504, r.text
    body = r.json()
    if path == "/v1/messages":
        assert body["type"] == "error" and body["error"]["type"] == "timeout_error"
        message = body["error"]["message"]
    else:
        assert body["error"]["type"] == "server_error"
        message = body["error"]["message"]
    assert f"no content within {DEADLINE_MS} ms" in message and "firstTokenTimeoutMs" in message
    rows = failed_traces(gw)
    assert len(rows) == 1 and rows[0]["status"] == 504, rows


def search_then_pings(req) -> list:
    """A model that asks for a web search, and after the results only pings."""
    body = json.loads(req.body)
    if any(m.get("role") == "tool" for m in body["messages"]):
        return pings()
    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "web_search", "arguments": json.dumps({"query": "rust release"})}}
    return [SSE_HEAD + chat_chunk({"role": "assistant", "content": ""}) + chat_chunk({"tool_calls": [call]})
            + chat_chunk({}, "tool_calls") + b"data: [DONE]\n\n", None]


@pytest.mark.parametrize("path", PATHS)
def test_a_deadline_missed_after_the_200_ends_the_stream_with_its_error_event(gateway, raw, search_fakes,
                                                                              path) -> None:
    up = raw(search_then_pings)
    cfg = pinger_config(up, None)
    cfg["webSearch"] = {"engines": [searxng_engine(search_fakes)], "cacheTtlMs": 0}
    gw = gateway(cfg)
    search_fakes.script("searxng", Reply())
    body = request_body(path, "search the web for the latest rust release", True)
    with httpx.stream("POST", gw.url + path, json=body, timeout=10) as r:
        assert r.status_code == 200
        lines = [line for line in sse_text(r).splitlines() if line]
    assert len(up.requests) == 2 and len(search_fakes.calls("searxng")) == 1
    last = json.loads(lines[-1].removeprefix("data: "))
    if path == "/v1/chat/completions":
        assert "[DONE]" not in lines[-1] and last["error"]["type"] == "server_error"
        message = last["error"]["message"]
    elif path == "/v1/responses":
        assert last["type"] == "response.failed"
        message = last["response"]["error"]["message"]
    else:
        assert lines[-2] == "event: error" and last["error"]["type"] == "timeout_error"
        message = last["error"]["message"]
    assert f"no content within {DEADLINE_MS} ms" in message
    rows = failed_traces(gw)
    assert len(rows) == 1 and rows[0]["status"] == 200 and "firstTokenTimeoutMs" in rows[0]["error"], rows
    wait_for(lambda: up.open_now == 0, 2.0)


def native_pings(req) -> list:
    """A commercial provider's own stream that opens and then only pings: Anthropic's `ping` events
    after `message_start`, SSE comments after `response.created` for Responses."""
    if req.path.endswith("/messages"):
        return [ANSWERS["anthropic_start_only"], *[b'event: ping\ndata: {"type": "ping"}\n\n', PING_S]
                * int(PINGS_FOR_S / PING_S), None]
    return [ANSWERS["responses_start_only"], *[b": keep-alive\n\n", PING_S] * int(PINGS_FOR_S / PING_S), None]


@pytest.mark.parametrize("fallback", [True, False])
@pytest.mark.parametrize(("kind", "path"), [("anthropic", "/v1/messages"), ("openai", "/v1/responses")])
def test_a_pinging_passthrough_stream_fails_over_within_its_deadline(gateway, raw, kind, path, fallback) -> None:
    pinger, other = raw(native_pings), raw(native_answer)
    suffix = "" if kind == "anthropic" else "/v1"
    cfg = base_config(other.url + "/v1")
    cfg["providers"] = {
        "first": {"type": kind, "baseURL": pinger.url + suffix, "apiKey": "sk-never-stuck-native-1",
                  "firstTokenTimeoutMs": DEADLINE_MS},
        "second": {"type": kind, "baseURL": other.url + suffix, "apiKey": "sk-never-stuck-native-2"}}
    pools = [{"id": "first", "priority": 100, "targets": ["first.m"]}]
    if fallback:
        pools.append({"id": "fallback", "priority": 50, "targets": ["second.m"]})
    cfg["virtualrouter"]["routing"]["default"] = pools
    gw = gateway(cfg)
    started = time.monotonic()
    r = httpx.post(gw.url + path, json=request_body(path, "hello there", True), timeout=10)
    took = time.monotonic() - started
    assert DEADLINE_MS / 1000 <= took < DEADLINE_MS / 1000 + 3, took
    if fallback:
        assert r.status_code == 200 and "native answer" in r.text
    else:
        assert r.status_code == 504, r.text
        if kind == "anthropic":
            assert r.json()["type"] == "error" and r.json()["error"]["type"] == "timeout_error"
        else:
            assert "firstTokenTimeoutMs" in r.json()["error"]["message"]
    wait_for(lambda: pinger.open_now == 0, 2.0)


def test_a_request_asked_whole_is_not_held_to_the_first_token_deadline(gateway, raw) -> None:
    """A family that cannot stream a request with tools is asked for the whole answer and streamed on
    (hub/backends/quirks.py): its first content is its end, which `timeoutMs` bounds, not the
    first-content deadline."""
    def slow_whole(req) -> list:
        assert json.loads(req.body).get("stream") is not True
        data = json.dumps(CHAT).encode()
        return [1.0, b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                     b"connection: close\r\n\r\n" % len(data) + data, None]

    up = raw(slow_whole)
    cfg = base_config(up.url + "/v1")
    cfg["providers"]["local"].update({"type": "llamacpp", "firstTokenTimeoutMs": 300})
    gw = gateway(cfg)
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    body = {"model": "d", "stream": True, "messages": HI, "tools": [tool], "tool_choice": "auto"}
    with httpx.stream("POST", gw.url + "/v1/chat/completions", json=body, timeout=10) as r:
        assert r.status_code == 200
        assert "fine" in sse_text(r)


@pytest.mark.parametrize("path", ["/v1/search", "/v1/search/open-webui"])
def test_a_client_leaving_a_search_stops_the_engines_call(gateway, raw, path) -> None:
    """POST /v1/search and Open WebUI's search are watched like the model endpoints: a client that
    hangs up while the engine is still answering closes the engine's request at once, not at the
    engine's timeoutMs (30 s here), and the next search is served."""
    stalls = {"on": True}

    def engine(req) -> list:
        if stalls["on"]:
            return slow_json()
        data = json.dumps({"results": [{"url": "https://example.com/a", "title": "A", "content": "a"}]}).encode()
        return [b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close"
                b"\r\n\r\n" % len(data) + data, None]

    up = raw(engine)
    cfg = base_config(up.url + "/v1")
    cfg["webSearch"] = {"engines": [{"id": "sx", "type": "searxng", "baseURL": up.url, "timeoutMs": 30000}],
                        "cacheTtlMs": 0, "readPages": {"enabled": False}}
    gw = gateway(cfg)
    before = len(up.requests)
    s = send_and_abandon(gw.url, path, {"query": "kestrel bridge"})
    try:
        wait_for(lambda: len(up.requests) > before, 10)
        time.sleep(0.2)
        assert up.open_now == 1  # the engine is still answering
    finally:
        s.close()
    assert wait_for(lambda: up.open_now == 0, 1.0) < 1.0  # closed with the client, not at timeoutMs
    stalls["on"] = False
    r = httpx.post(gw.url + path, json={"query": "kestrel bridge"}, timeout=10)
    assert r.status_code == 200, r.text
    assert "example.com/a" in r.text
