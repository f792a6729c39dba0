"""The tool loop's streamed turn (hub/turn/stream_driver.py) over HTTP, against a raw upstream that writes
its stream byte for byte (tests/fakes/raw_http.py): the text of the chunks one network read brings
is shown as one delta, and text that arrives later is not held back for it."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from .fakes.raw_http import RawUpstream, chat_chunk
from .helpers import base_config

WORDS = [f"w{i} " for i in range(20)]
HEAD = b"HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\n"  # the connection's end ends it
STALL_S = 1.0


def search_config(model_url: str) -> dict:
    """Web search on (an engine nobody calls: the model only answers text), so every turn is a
    search turn driven by hub/turn/stream_driver.py."""
    return base_config(model_url, webSearch={
        "injectPolicy": "always",
        "engines": [{"id": "searxng", "type": "searxng", "baseURL": "http://127.0.0.1:9", "default": True}]})


def text_chunks(words: list[str]) -> bytes:
    return b"".join(chat_chunk({"content": w}) for w in words)


@pytest.fixture
def upstream():
    """Answers a stream in two writes with a stall between: the first 10 words, then the rest."""
    def answer(req) -> list:
        first = HEAD + chat_chunk({"role": "assistant", "content": ""}) + text_chunks(WORDS[:10])
        rest = text_chunks(WORDS[10:]) + chat_chunk({}, "stop") + b"data: [DONE]\n\n"
        return [first, STALL_S, rest, None]

    up = RawUpstream(answer).start()
    yield up
    up.stop()


def test_a_reads_text_is_one_delta_and_later_text_is_not_held_back(gateway, upstream) -> None:
    gw = gateway(search_config(upstream.url + "/v1"))
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "search the web for w"}]}
    deltas: list[tuple[float, str]] = []
    with httpx.stream("POST", gw.url + "/v1/chat/completions", json=body, timeout=10) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunk = json.loads(line[6:])
                text = chunk["choices"][0]["delta"].get("content") if chunk.get("choices") else None
                if text:
                    deltas.append((time.monotonic(), text))
    assert "".join(t for _, t in deltas) == "".join(WORDS)
    # 20 upstream chunks in two writes: a delta per read, not per chunk (loopback may cut a write
    # into a few reads, never into one per chunk)
    assert 2 <= len(deltas) <= 6
    first_write_shown = next(when for when, text in deltas if "w9 " in text)
    assert deltas[-1][0] - first_write_shown > STALL_S / 2, "the first write's text waited for the second"
