"""Never stuck (issue 27, item 1), from outside: HTTP on loopback, a raw-socket upstream.

1. A client that leaves before the first token releases its concurrency slot at once and closes the
   upstream request, on every model endpoint, streaming or not: with `maxConcurrency` full of clients
   that hung up, the next request is served, not refused with 503.
"""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from .fakes.broken_stream import ANSWERS
from .fakes.raw_http import CHAT, RawUpstream, sse
from .helpers import base_config

pytestmark = pytest.mark.timeout(90)
HI = [{"role": "user", "content": "hello there"}]
HANG = "hang on"  # a request with this text gets an upstream that never brings content
SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
PING_S = 0.05
PINGS_FOR_S = 15.0  # an upstream's pings end (and it closes) after this: every test stays bounded


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
