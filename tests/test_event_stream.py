"""EventStream (routes/common.py) joins the chunks its producer has ready into one write and writes
them as soon as the producer has to wait: the ASGI messages it sends, for scripted producers (each
step yields a chunk or waits), and a producer that fails or a write that is cancelled."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routes.common import COALESCE_BYTES, EventStream

WAIT = None  # a step of the script where the producer waits on the event loop


def producer(script: list, log: list[str] | None = None):
    async def gen():
        try:
            for step in script:
                if step is WAIT:
                    await asyncio.sleep(0)
                elif isinstance(step, float):
                    await asyncio.sleep(step)
                else:
                    yield step
        finally:
            if log is not None:
                log.append("closed")
    return gen()


async def serve(stream: EventStream, send=None) -> list[dict]:
    sent: list[dict] = []

    async def record(message: dict) -> None:
        sent.append(message)

    async def receive() -> dict:
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    await stream({"type": "http"}, receive, send or record)
    return sent


def bodies(sent: list[dict]) -> list[dict]:
    return [m for m in sent if m["type"] == "http.response.body"]


def runs(script: list) -> list[bytes]:
    """The writes the script should produce: the chunks between two waits, joined."""
    out, cur = [], []
    for step in script:
        if step is WAIT or isinstance(step, float):
            if cur:
                out.append(b"".join(cur))
            cur = []
        else:
            cur.append(step)
    if cur:
        out.append(b"".join(cur))
    return out


def test_ready_chunks_go_out_in_one_write_and_the_last_ends_the_body() -> None:
    script = [b"a", b"b", b"c", WAIT, b"d", b"e", 0.01, b"f"]
    sent = asyncio.run(serve(EventStream(producer(script))))
    assert sent[0]["type"] == "http.response.start"
    assert [(m["body"], m["more_body"]) for m in bodies(sent)] == [(b"abc", True), (b"de", True), (b"f", False)]


def test_a_stream_that_ends_after_waiting_ends_the_body_with_an_empty_write() -> None:
    sent = asyncio.run(serve(EventStream(producer([b"x", 0.005]))))
    assert [(m["body"], m["more_body"]) for m in bodies(sent)] == [(b"x", True), (b"", False)]


def test_big_ready_runs_are_cut_at_the_coalescing_limit() -> None:
    chunk = b"z" * 1000
    n = COALESCE_BYTES // 1000 + 5
    sent = asyncio.run(serve(EventStream(producer([chunk] * n))))
    writes = [m["body"] for m in bodies(sent)]
    assert b"".join(writes) == chunk * n
    assert len(writes) == 2 and all(len(w) <= COALESCE_BYTES + 1000 for w in writes)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.binary(min_size=1, max_size=50), st.just(WAIT), st.just(0.001)), max_size=40))
def test_writes_are_exactly_the_ready_runs(script) -> None:
    """Property: whatever the producer's pattern of chunks and waits, the body is every chunk in
    order, each run of chunks between two waits in one write, and the body ends exactly once."""
    sent = asyncio.run(serve(EventStream(producer(script))))
    msgs = bodies(sent)
    assert [m["more_body"] for m in msgs].count(False) == 1 and msgs[-1]["more_body"] is False
    assert b"".join(m["body"] for m in msgs) == b"".join(s for s in script if isinstance(s, bytes))
    assert [m["body"] for m in msgs if m["body"]] == runs(script)


def test_a_failing_producer_still_writes_what_it_had_ready() -> None:
    async def gen():
        yield b"one"
        yield b"two"
        raise RuntimeError("upstream broke")

    sent: list[dict] = []

    async def main() -> None:
        async def record(message: dict) -> None:
            sent.append(message)

        async def start() -> None:
            sent.append({"type": "http.response.start"})

        stream = EventStream(gen())
        with pytest.raises(RuntimeError):
            await stream._pump(record, start)

    asyncio.run(main())
    assert [m.get("body") for m in sent] == [None, b"onetwo"]  # the headers, then what was ready


def test_a_write_cancelled_mid_stream_unwinds_the_waiting_producer() -> None:
    log: list[str] = []

    async def main() -> None:
        calls = 0

        async def send(message: dict) -> None:
            nonlocal calls
            calls += 1
            if message["type"] == "http.response.body":
                raise asyncio.CancelledError()  # the client went away while we wrote

        async def start() -> None:
            pass

        gen = producer([b"a", b"b", 0.05, b"c"], log)
        stream = EventStream(gen)
        with pytest.raises(asyncio.CancelledError):
            await stream._pump(send, start)
        assert log == ["closed"]  # the producer ran its cleanup from where it waited
        await gen.aclose()  # and is not left "running"

    asyncio.run(main())


@pytest.mark.parametrize("parallel", [False, True])
def test_the_headers_go_out_after_the_work_the_producer_started(parallel: bool) -> None:
    """A tool round starts its searches in a task and waits: their requests leave before the
    first write to the client (which would wake the client first), and that write is the headers,
    with no model call's delay. A parallel round's task starts a task per search (hub/turn/loop.py)."""
    order: list[str] = []

    async def main() -> None:
        async def search() -> None:
            order.append("search sent")
            await asyncio.sleep(0.02)

        async def work() -> None:
            if parallel:
                await asyncio.gather(search(), search())
            else:
                await search()

        async def gen():
            task = asyncio.ensure_future(work())
            await asyncio.sleep(0.01)  # the producer waits (on its keepalive, say)
            yield b"event"
            await task

        async def send(message: dict) -> None:
            order.append(message["type"])

        async def receive() -> dict:
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        await EventStream(gen())({"type": "http"}, receive, send)

    asyncio.run(main())
    searches = 2 if parallel else 1
    assert order[:searches + 1] == ["search sent"] * searches + ["http.response.start"]
    assert order.count("http.response.start") == 1


def test_a_stream_with_nothing_ready_still_sends_its_headers_at_its_first_wait() -> None:
    times: dict[str, float] = {}

    async def main() -> None:
        loop = asyncio.get_running_loop()
        t0 = loop.time()

        async def gen():
            await asyncio.sleep(0.2)  # a long wait before the first event (a slow model)
            yield b"late"

        async def send(message: dict) -> None:
            times.setdefault(message["type"], loop.time() - t0)

        async def receive() -> dict:
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        await EventStream(gen())({"type": "http"}, receive, send)

    asyncio.run(main())
    assert times["http.response.start"] < 0.05 <= 0.15 < times["http.response.body"]
