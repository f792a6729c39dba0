"""hub/tools/keepalive.py: work's events the moment they are emitted, a Keepalive per interval of
silence, the work's failure surfaced, abandoned work cancelled."""

from __future__ import annotations

import asyncio
import time

import pytest

from hub.tools.events import Keepalive
from hub.tools.keepalive import Feed, with_keepalive


def collect(work, interval_s: float) -> list[tuple[float, object]]:
    async def run() -> list[tuple[float, object]]:
        feed = Feed()
        task = asyncio.ensure_future(work(feed))
        t0 = time.perf_counter()
        return [(time.perf_counter() - t0, item) async for item in with_keepalive(task, feed, interval_s)]

    return asyncio.run(run())


def test_events_come_as_emitted_and_silence_gets_keepalives() -> None:
    async def work(feed: Feed) -> None:
        feed.append("started")
        await asyncio.sleep(0.35)
        feed.append("finished")

    got = collect(work, 0.1)
    items = [item for _, item in got]
    assert items[0] == "started" and got[0][0] < 0.05
    assert items[-1] == "finished" and 0.3 < got[-1][0] < 0.6
    assert 2 <= sum(isinstance(i, Keepalive) for i in items) <= 4  # ~3 intervals of silence
    assert all(isinstance(i, Keepalive) for i in items[1:-1])


def test_quick_work_gets_no_keepalive_and_late_events_are_kept() -> None:
    async def work(feed: Feed) -> None:
        await asyncio.sleep(0)
        feed.append(1)
        feed.append(2)

    assert [item for _, item in collect(work, 5.0)] == [1, 2]


def test_the_works_failure_surfaces() -> None:
    async def work(feed: Feed) -> None:
        feed.append("x")
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        collect(work, 5.0)


def test_abandoning_the_stream_cancels_the_work() -> None:
    async def run() -> bool:
        feed = Feed()
        started = asyncio.Event()

        async def work() -> None:
            started.set()
            await asyncio.sleep(10)

        task = asyncio.ensure_future(work())
        stream = with_keepalive(task, feed, 0.01)
        assert isinstance(await stream.__anext__(), Keepalive)
        await stream.aclose()
        await asyncio.sleep(0)
        return task.cancelled()

    assert asyncio.run(run())
