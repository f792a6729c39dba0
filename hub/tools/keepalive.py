"""Running server tool work while a stream stays alive: the events it emits the moment they are
emitted, and a Keepalive whenever nothing happened for a while."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from ..events import Keepalive


class Feed:
    """Where running work puts its events (`append`, the loop's `emit`); appending wakes the stream."""

    def __init__(self) -> None:
        self._items: list = []
        self._ready = asyncio.Event()

    def append(self, item: object) -> None:
        self._items.append(item)
        self._ready.set()

    def drain(self) -> list:
        items, self._items = self._items, []
        self._ready.clear()
        return items

    async def wait(self) -> None:
        await self._ready.wait()


async def with_keepalive(task: asyncio.Future, feed: Feed, interval_s: float) -> AsyncIterator:
    """Wait for `task`, yielding what it appends to `feed` as soon as it appends it and Keepalive()
    after every `interval_s` of silence; then its result is `task.result()`. Cancels the task if
    abandoned."""
    waiter: asyncio.Future | None = None
    try:
        while True:
            waiter = asyncio.ensure_future(feed.wait())
            await asyncio.wait({task, waiter}, timeout=interval_s, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            items = feed.drain()
            for item in items:
                yield item
            if task.done():
                break
            if not items:
                yield Keepalive()
    finally:
        if waiter is not None:
            waiter.cancel()
        if not task.done():
            task.cancel()
    task.result()  # a bug in the work surfaces here
    for item in feed.drain():
        yield item
