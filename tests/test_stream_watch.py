"""The stream watchers on hostile input: hub/streams/watch.py (chat `data:` payloads, per network
read), the chat relay's own copy of its rules (hub/streams/relay.py `relay_sse`, the live path of every
relayed chat stream) and hub/streams/native.py (a provider's own SSE bytes). However a good stream is
cut into reads it is relayed whole and judged complete; whatever bytes come first, the only failure
is an UpstreamError and the upstream is closed; a stream cut after its content raises at its end."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hub.config import parse
from hub.config.settings import Target
from hub.runtime import PLUGINS
from hub.streams import native as native_stream
from hub.streams import watch as stream_watch
from hub.streams.relay import relay_sse
from hub.upstream.http import UpstreamError

from .fakes.broken_stream import ANSWERS

PROVIDER = parse(json.dumps({  # built by the config, the one place provider defaults live
    "providers": {"p": {"type": "vllm", "baseURL": "http://127.0.0.1:9/v1"}},
    "virtualrouter": {"routing": {"default": [{"targets": ["p.m"]}]}}}), env={},
    plugins=PLUGINS).providers["p"]


class Source:
    """An upstream's reads, recording whether the watcher closed it."""

    def __init__(self, reads: list) -> None:
        self.reads = reads
        self.closed = False

    async def _gen(self) -> AsyncIterator:
        try:
            for r in self.reads:
                yield r
        finally:
            self.closed = True

    def __call__(self) -> AsyncIterator:
        return self._gen()


def chunk(delta: dict, finish: str | None = None) -> bytes:
    return json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).encode()


GOOD = [chunk({"role": "assistant", "content": ""}), chunk({"content": "Hello"}), chunk({"content": " there"}),
        chunk({}, "stop"), json.dumps({"id": "c", "choices": [], "usage": {"total_tokens": 3}}).encode(), b"[DONE]"]


def split(items: list, cuts: list[int]) -> list[list]:
    points = sorted({c % (len(items) + 1) for c in cuts} | {0, len(items)})
    return [items[a:b] for a, b in zip(points, points[1:], strict=False) if items[a:b]]


async def drain(it: AsyncIterator) -> list:
    return [x async for x in it]


async def relayed(opened: stream_watch.Opened) -> tuple[list[dict], bool]:
    """What the chat relay writes to the client for this opened stream: its chunks, and whether it
    wrote `[DONE]`."""
    out = b"".join(await drain(relay_sse(stream_watch.Watched(opened), Target("p.m", PROVIDER, "m"))))
    frames = [f.removeprefix(b"data: ") for f in out.split(b"\n\n") if f]
    done = frames[-1:] == [b"[DONE]"]
    return [json.loads(f) for f in frames if f != b"[DONE]"], done


def text_of(chunks: list[dict]) -> str:
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices"))


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(0, 20), max_size=6), no_done=st.booleans())
def test_a_good_chat_stream_passes_however_it_is_read(cuts, no_done) -> None:
    payloads = GOOD[:-1] if no_done else GOOD  # a finish reason alone also ends a stream properly
    batches = split(payloads, cuts)

    async def run() -> tuple[tuple[list[dict], bool], list]:
        opened = await stream_watch.first_content(Source(batches)(), PROVIDER)
        relay = await relayed(opened)
        opened = await stream_watch.first_content(Source(batches)(), PROVIDER)
        reads = await drain(stream_watch.watched_reads(opened))
        return relay, reads

    (sent, done), reads = asyncio.run(run())
    assert done == (not no_done)  # the upstream's [DONE] goes out; without one the encoder adds it
    assert text_of(sent) == "Hello there"
    assert [c["choices"][0]["finish_reason"] for c in sent if c.get("choices")][-1] == "stop"
    assert sent[-1]["usage"] == {"total_tokens": 3}
    assert all(reads), "an empty read was yielded"
    chunks = [c for r in reads for c in r]
    assert chunks == [json.loads(p) for p in payloads if p != b"[DONE]"]
    # the reads up to the first content come as one; each later read as it was
    decoded = [[json.loads(p) for p in b if p != b"[DONE]"] for b in batches]
    first = next(i for i, b in enumerate(batches) if any(b'"Hello"' in p for p in b))
    assert reads == [c for c in [[c for b in decoded[:first + 1] for c in b], *decoded[first + 1:]] if c]


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(0, 20), max_size=4), end=st.integers(2, 3))
def test_a_chat_stream_cut_after_content_raises_at_its_end(cuts, end) -> None:
    batches = split(GOOD[:end], cuts)  # content, but neither a finish reason nor [DONE]

    async def run(watch) -> None:
        opened = await stream_watch.first_content(Source(batches)(), PROVIDER)
        await watch(opened)

    for watch in (relayed, lambda opened: drain(stream_watch.watched_reads(opened))):
        try:
            asyncio.run(run(watch))
        except UpstreamError as e:
            assert not e.retryable
        else:
            raise AssertionError("a cut stream passed as complete")


@settings(max_examples=150, deadline=None)
@given(cuts=st.lists(st.integers(0, 20), max_size=6), after=st.integers(0, 4),
       idle=st.lists(st.tuples(st.integers(0, 12), st.sampled_from([[b""], [b"[]"], [b"", b"1"]])), max_size=3))
def test_the_relay_and_the_tool_loop_judge_a_stream_without_done_alike(cuts, after, idle) -> None:
    """Without [DONE], a stream is complete when a finish reason is in its last two reads that
    carried a chunk: the relay (hub/streams/relay.py, the live path of every relayed chat stream) and the
    tool loop's watcher (watched_reads) agree on every cut, with chunks after the finish (which may
    push it out of the last two reads) and with reads of keep-alives or non-object payloads between
    (which must not)."""
    payloads = GOOD[:4] + [chunk({"content": f" {i}"}) for i in range(after)]
    batches = split(payloads, cuts)
    for at, read in sorted(idle, reverse=True):  # idle reads anywhere after the first one
        batches.insert(1 + at % len(batches), list(read))

    async def complete(watch) -> bool:
        opened = await stream_watch.first_content(Source(batches)(), PROVIDER)
        try:
            await watch(opened)
        except UpstreamError:
            return False
        return True

    relay = asyncio.run(complete(relayed))
    loop = asyncio.run(complete(lambda opened: drain(stream_watch.watched_reads(opened))))
    assert relay == loop
    with_chunks = [b for b in batches if any(p.startswith(b"{") for p in b)]
    assert loop == any(b'"stop"' in p for b in with_chunks[-2:] for p in b)


async def open_or_fail_cleanly(source: Source, opening: Awaitable, watched: Callable[[Any], AsyncIterator]) -> None:
    """A stream either opens and is read to its end (an UpstreamError there is fine) or fails to
    open retryably (nothing reached the client: the dispatcher fails over) with its source closed."""
    try:
        opened = await opening
    except UpstreamError as e:
        assert e.retryable
        assert source.closed
        return
    try:
        await drain(watched(opened))
    except UpstreamError:
        pass


@settings(max_examples=150, deadline=None)
@given(batches=st.lists(st.lists(st.one_of(st.binary(max_size=40), st.sampled_from(GOOD + [b"", b"{}", b"[]",
                                                                                          b'{"error": 1}'])),
                                         max_size=4), max_size=5))
def test_any_chat_payloads_either_open_or_fail_cleanly(batches) -> None:
    source = Source(batches)

    asyncio.run(open_or_fail_cleanly(source, stream_watch.first_content(source(), PROVIDER),
                                     stream_watch.watched_reads))


NATIVE_GOOD = {"anthropic": ANSWERS["anthropic_ok"].split(b"\r\n\r\n", 1)[1],
               "openai": ANSWERS["responses_ok"].split(b"\r\n\r\n", 1)[1]}
NATIVE_CUT = {"anthropic": ANSWERS["anthropic_cut"].split(b"\r\n\r\n", 1)[1],
              "openai": ANSWERS["responses_cut"].split(b"\r\n\r\n", 1)[1]}


def cut_bytes(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:], strict=False) if data[a:b]]


def read_native(kind: str, reads: list[bytes]) -> bytes:
    """A native stream of these reads, opened and watched to its end."""

    async def run() -> bytes:
        opened = await native_stream.first_content(Source(reads)(), kind)
        return b"".join(await drain(native_stream.watched(opened)))

    return asyncio.run(run())


@settings(max_examples=80, deadline=None)
@given(kind=st.sampled_from(["anthropic", "openai"]), cuts=st.lists(st.integers(0, 4000), max_size=12))
def test_a_good_native_stream_passes_however_it_is_read(kind, cuts) -> None:
    assert read_native(kind, cut_bytes(NATIVE_GOOD[kind], cuts)) == NATIVE_GOOD[kind]


@settings(max_examples=80, deadline=None)
@given(kind=st.sampled_from(["anthropic", "openai"]), cuts=st.lists(st.integers(0, 4000), max_size=12))
def test_a_native_stream_cut_after_content_raises_at_its_end(kind, cuts) -> None:
    try:
        read_native(kind, cut_bytes(NATIVE_CUT[kind], cuts))
    except UpstreamError as e:
        assert not e.retryable
    else:
        raise AssertionError("a cut stream passed as complete")


@settings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(["anthropic", "openai"]),
       reads=st.lists(st.one_of(st.binary(max_size=60), st.sampled_from([
           b"event: error\n", b"event: message_start\ndata: {}\n\n", b"data: {\"type\": \"error\"}\n\n",
           b"event: content_block_start\n", b"data: [1,2]\n", b"\n", b"event: response.failed\n"])), max_size=8))
def test_any_native_bytes_either_open_or_fail_cleanly(kind, reads) -> None:
    source = Source(reads)

    asyncio.run(open_or_fail_cleanly(source, native_stream.first_content(source(), kind), native_stream.watched))
