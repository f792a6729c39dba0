"""Search progress reaches a streaming client the moment a search starts, on every protocol: the
start event is not held back until the search ends, keep-alives flow while it runs, and the finish
event follows the search's end. A slow fake engine makes the gap measurable."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from .fakes.search_providers import Reply
from .helpers import base_config, searxng_engine

SEARCH_S = 1.0
PROMPT = "search the web for the latest rust release"


def answer_after_search(body: dict) -> dict:
    if body["messages"][-1]["role"] == "tool":
        return {"content": "Rust 1.91.0 [1]."}
    return {"tool_calls": [{"name": "web_search", "arguments": {"query": "latest rust release"}}]}


REQUESTS = {
    "chat": ("/v1/chat/completions",
             {"model": "d", "stream": True, "messages": [{"role": "user", "content": PROMPT}]}),
    "responses": ("/v1/responses",
                  {"model": "d", "stream": True, "input": PROMPT, "tools": [{"type": "web_search"}]}),
    "messages": ("/v1/messages",
                 {"model": "d", "stream": True, "max_tokens": 200, "messages": [{"role": "user", "content": PROMPT}],
                  "tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
}


def starts(protocol: str, line: str) -> bool:
    """The line that tells the client a search began."""
    return _is_event(protocol, line, line == ": web_search started", "response.web_search_call.searching",
                     "server_tool_use")


def finishes(protocol: str, line: str) -> bool:
    return _is_event(protocol, line, line.startswith("data: {") and '"content"' in line and "Rust" in line,
                     "response.web_search_call.completed", "web_search_tool_result")


def _is_event(protocol: str, line: str, chat: bool, responses_type: str, block_type: str) -> bool:
    """`chat` for the chat protocol; else whether the line is the Responses event of that type, or
    the Messages content_block_start of that block type."""
    if protocol == "chat":
        return chat
    if not line.startswith("data: "):
        return False
    event = json.loads(line[6:])
    if protocol == "responses":
        return event["type"] == responses_type
    return event["type"] == "content_block_start" and event["content_block"]["type"] == block_type


def keepalive(line: str) -> bool:
    return line in (": keepalive", 'data: {"type":"ping"}')


@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_search_start_is_flushed_at_once(gateway, fake_model, search_fakes, protocol) -> None:
    cfg = base_config(fake_model.url)
    # keep-alives every 300 ms: a start event waiting for the next one would arrive 300 ms late
    cfg["webSearch"] = {"engines": [searxng_engine(search_fakes)], "cacheTtlMs": 0, "keepaliveMs": 300}
    gw = gateway(cfg)
    fake_model.default = answer_after_search
    search_fakes.script("searxng", Reply(delay=SEARCH_S))
    path, body = REQUESTS[protocol]
    lines: list[tuple[float, str]] = []
    with httpx.stream("POST", gw.url + path, json=body, timeout=30) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line:
                lines.append((time.monotonic(), line))
    searched = search_fakes.calls("searxng")
    assert len(searched) == 1
    search_began = searched[0].at
    started_at = next(t for t, line in lines if starts(protocol, line))
    finished_at = next(t for t, line in lines if finishes(protocol, line))
    # the start event is sent before the engine is asked; it must not wait for the search
    assert started_at - search_began < 0.05, f"start event {started_at - search_began:.3f}s after the search began"
    assert finished_at - search_began >= SEARCH_S * 0.9
    pings = [t for t, line in lines if keepalive(line) and started_at < t < finished_at]
    assert len(pings) >= 2  # about every 300 ms of a 1 s search
