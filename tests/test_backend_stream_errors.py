"""A backend's error inside a stream reaches the client as the error it is (issue 27, item 8), from
outside: HTTP on loopback, a raw-socket upstream that answers 200 and then says "error" the ways
llama.cpp-family servers do besides an error object in a `data:` line (tests/test_stream_failover.py
covers that one): llama.cpp's `error: {…}` line, and an `event: error` whose data is a bare
`{"message": …}`.

Before any content a context overflow is the protocol's 400 (what Claude Code compacts on), not
"upstream stream ended before any content"; after content the stream ends with the protocol's error
event carrying the backend's own message, scrubbed. Either way the trace lists it as failed.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest

from .fakes.raw_http import chat_chunk
from .helpers import base_config

pytestmark = pytest.mark.timeout(60)
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
OVERFLOW = {"code": 400, "message": "request (3031 tokens) exceeds the available context size (2048 tokens), "
            "try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 3031, "n_ctx": 2048}
ERROR_FORMS = {
    "error_line": b"error: " + json.dumps(OVERFLOW).encode() + b"\n\n",  # llama.cpp's server
    "error_event": b"event: error\ndata: " + json.dumps({"message": OVERFLOW["message"]}).encode() + b"\n\n",
}
FIRST_WORD = chat_chunk({"role": "assistant", "content": "Hello"})
ADMIN = "admin-key-for-stream-errors-01"
PATHS = ["/v1/chat/completions", "/v1/responses", "/v1/messages"]


def body_for(path: str) -> dict:
    if path == "/v1/responses":
        return {"model": "d", "stream": True, "input": "hello there"}
    body = {"model": "d", "stream": True, "messages": [{"role": "user", "content": "hello there"}]}
    if path == "/v1/messages":
        body["max_tokens"] = 50
    return body


def gateway_for(gateway, raw, answer: bytes, then: bytes = b"", provider_type: str = "vllm"):
    """A gateway in front of an upstream that answers 200 with `answer`, and `then` a moment later."""
    up = raw(lambda req: [HEAD + answer, *([0.1, then] if then else []), None])
    cfg = base_config(up.url + "/v1")
    cfg["providers"]["local"]["type"] = provider_type
    cfg["server"]["adminKeys"] = [ADMIN]
    return gateway(cfg)


def failed_traces(gw) -> list[dict]:
    deadline = time.monotonic() + 5
    while True:
        r = httpx.get(gw.url + "/admin/traces", params={"errors": "1"}, timeout=10,
                      headers={"authorization": f"Bearer {ADMIN}"})
        assert r.status_code == 200, r.text
        if r.json()["data"] or time.monotonic() > deadline:
            return r.json()["data"]
        time.sleep(0.05)


@pytest.mark.parametrize("form", list(ERROR_FORMS))
@pytest.mark.parametrize("path", PATHS)
def test_an_overflow_said_in_the_stream_before_content_is_the_400(gateway, raw, path, form) -> None:
    gw = gateway_for(gateway, raw, ERROR_FORMS[form])
    r = httpx.post(gw.url + path, json=body_for(path), timeout=20)
    assert r.status_code == 400, r.text
    body = r.json()
    if path == "/v1/messages":
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
        assert body["error"]["message"].startswith("prompt is too long")
    else:
        assert "exceeds the available context size" in body["error"]["message"]
    rows = failed_traces(gw)
    assert len(rows) == 1 and rows[0]["status"] == 400, rows


@pytest.mark.parametrize("form", list(ERROR_FORMS))
@pytest.mark.parametrize("path", PATHS)
def test_an_error_said_in_the_stream_after_content_is_the_protocols_error_event(gateway, raw, path, form) -> None:
    gw = gateway_for(gateway, raw, FIRST_WORD, ERROR_FORMS[form])
    with httpx.stream("POST", gw.url + path, json=body_for(path), timeout=20) as r:
        assert r.status_code == 200
        lines = [line for line in r.iter_lines() if line]
    assert "Hello" in "".join(lines)
    last = json.loads(lines[-1].removeprefix("data: "))
    if path == "/v1/chat/completions":
        error = last["error"]
        assert error["code"] == "context_length_exceeded" and error["type"] == "invalid_request_error"
    elif path == "/v1/responses":
        assert last["type"] == "response.failed"
        error = last["response"]["error"]
    else:
        assert lines[-2] == "event: error"
        error = last["error"]
        assert error["type"] == "invalid_request_error"
    assert "exceeds the available context size" in error["message"]
    rows = failed_traces(gw)
    assert len(rows) == 1 and rows[0]["status"] == 200, rows
    assert "exceeds the available context size" in rows[0]["error"]


def test_a_backends_own_message_after_content_is_scrubbed(gateway, raw) -> None:
    said = b'error: {"code": 500, "message": "slot 0 crashed; key sk-live-abcdefghijklmnop", "type": "server_error"}\n\n'
    gw = gateway_for(gateway, raw, FIRST_WORD, said)
    with httpx.stream("POST", gw.url + "/v1/chat/completions", json=body_for("/v1/chat/completions"),
                      timeout=20) as r:
        lines = [line for line in r.iter_lines() if line]
    error = json.loads(lines[-1].removeprefix("data: "))["error"]
    assert "slot 0 crashed" in error["message"] and "abcdefghijklmnop" not in error["message"]
    assert error["type"] == "server_error"


def test_a_silent_llama_cpp_python_stream_says_where_to_look(gateway, raw) -> None:
    """llama-cpp-python answers 200 and ends the stream without a word when the prompt is over its
    n_ctx (tests/test_real_llamacpp_errors.py shows it on the real server): nothing in the stream says
    why, so the client is told where the reason is."""
    gw = gateway_for(gateway, raw, b"", provider_type="llamacpp")
    r = httpx.post(gw.url + "/v1/chat/completions", json=body_for("/v1/chat/completions"), timeout=20)
    assert r.status_code == 502
    assert "llama-cpp-python ends a stream without any event" in r.json()["error"]["message"]
