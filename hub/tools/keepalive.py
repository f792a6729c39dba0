"""Running server tool work while a stream stays alive: the events it emits the moment they are
emitted, and a Keepalive whenever nothing happened for a while."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from .events import Keepalive


class Feed:
    """Where running work puts its events (`append`, the loop's `emit`); appending wakes the stream."""

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: list = []
        self._waiter: asyncio.Future | None = None

    def append(self, item: object) -> None:
        self._items.append(item)
        self.wake()

    def wake(self, *_: object) -> None:
        """Ends the current `wait` (an append, the work finishing, the keepalive timer)."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def drain(self) -> list:
        items, self._items = self._items, []
        return items

    async def wait(self, timeout_s: float) -> None:
        """Until something is appended or `wake` is called, at most `timeout_s`."""
        if self._items:
            return
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        timer = loop.call_later(timeout_s, self.wake)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None


async def with_keepalive(task: asyncio.Future, feed: Feed, interval_s: float) -> AsyncIterator:
    """Wait for `task`, yielding what it appends to `feed` as soon as it appends it and Keepalive()
    after every `interval_s` of silence; then its result is `task.result()`. Cancels the task if
    abandoned. (One future and one timer per wait, no task of its own.)"""
    task.add_done_callback(feed.wake)
    try:
        while True:
            if not task.done():
                await feed.wait(interval_s)
            items = feed.drain()
            for item in items:
                yield item
            if task.done():
                break
            if not items:
                yield Keepalive()
    finally:
        task.remove_done_callback(feed.wake)
        if not task.done():
            task.cancel()
    task.result()  # a bug in the work surfaces here
    for item in feed.drain():
        yield item
