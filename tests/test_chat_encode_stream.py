"""hub/protocols/chat/endpoints.py `encode_stream`: pipeline items -> chat SSE bytes (no HTTP). A list of chunks
(what one upstream read brought, hub/tools/events.py) is written as one piece, the same bytes as its
chunks one by one; usage goes out only when the client asked for it."""

from __future__ import annotations

import asyncio
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from hub.protocols.chat.endpoints import encode_stream
from hub.tools.events import Keepalive


def chunk(text: str | None, usage: bool = False) -> dict:
    c: dict = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
               "choices": [] if text is None else [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    if usage:
        c["usage"] = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    return c


_chunk = st.builds(chunk, st.one_of(st.none(), st.text(max_size=5)), st.booleans())


def encoded(items: list, include_usage: bool) -> list[bytes]:
    async def source():
        for item in items:
            yield item

    async def collect() -> list[bytes]:
        return [b async for b in encode_stream(source(), include_usage)]

    return asyncio.run(collect())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_chunk, st.lists(_chunk, max_size=4), st.just(Keepalive())), max_size=10), st.booleans())
def test_a_read_of_chunks_is_one_write_of_its_chunks(items, include_usage) -> None:
    flat = [c for item in items for c in (item if isinstance(item, list) else [item])]
    writes = encoded(items, include_usage)
    assert b"".join(writes) == b"".join(encoded(flat, include_usage))
    assert b"" not in writes
    assert len(writes) <= len(items) + 1  # at most one write per item, then [DONE]
    assert writes[-1] == b"data: [DONE]\n\n"
    events = [json.loads(line[6:]) for w in writes for line in w.decode().split("\n") if line.startswith("data: {")]
    sent = [c for c in flat if isinstance(c, dict) and (c["choices"] or include_usage or "usage" not in c)]
    assert [e["choices"] for e in events] == [c["choices"] for c in sent]
    assert [("usage" in e) for e in events] == [include_usage and "usage" in c for c in sent]
