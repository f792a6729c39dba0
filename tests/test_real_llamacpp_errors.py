"""searchhub in front of a real llama-cpp-python server (tests/real_backends.py): how a context overflow
after the 200 reaches the client. llama-cpp-python (0.3.x) answers a streamed request 200 and ends the
stream without any event when the prompt is over its n_ctx; the reason ("Requested tokens (…) exceed
context window of …") reaches only its own log. Nothing in the stream says so, so it cannot be the
400 a backend that says it gets (tests/test_backend_stream_errors.py): it is a failed attempt whose
message says where the reason is, traced as failed."""

from __future__ import annotations

import time

import httpx
import pytest

from .real_backends import gemma_path, start_llama_cpp_python

pytestmark = [pytest.mark.real_backend, pytest.mark.timeout(600)]
ADMIN = "admin-key-for-real-llamacpp-errors-01"


def test_a_context_overflow_on_llama_cpp_python_says_where_to_look(gateway) -> None:
    server = start_llama_cpp_python(gemma_path())  # n_ctx 2048
    try:
        gw = gateway({
            "providers": {"local": {"type": "llamacpp", "baseURL": server.url, "timeoutMs": 600000}},
            "virtualrouter": {"routing": {"default": [{"targets": ["local.m"]}]}, "retries": 0},
            "server": {"adminKeys": [ADMIN]},
        })
        body = {"model": "default", "stream": True, "max_tokens": 16,
                "messages": [{"role": "user", "content": "word " * 3000}]}
        r = httpx.post(gw.url + "/v1/chat/completions", json=body, timeout=300)
        assert r.status_code == 502, r.text
        assert "llama-cpp-python ends a stream without any event" in r.json()["error"]["message"]
        deadline = time.monotonic() + 5
        while True:
            rows = httpx.get(gw.url + "/admin/traces", params={"errors": "1"}, timeout=10,
                             headers={"authorization": f"Bearer {ADMIN}"}).json()["data"]
            if rows or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert len(rows) == 1 and rows[0]["status"] == 502, rows
    finally:
        server.stop()
