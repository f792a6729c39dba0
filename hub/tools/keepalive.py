"""Running server tool work while a stream stays alive: the events it emits as they come, and a
Keepalive whenever nothing happened for a while."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from ..events import Keepalive


async def with_keepalive(task: asyncio.Future, queue: list, interval_s: float) -> AsyncIterator:
    """Wait for `task`, yielding what it appends to `queue` meanwhile and Keepalive() after every
    `interval_s` of silence; then its result is `task.result()`. Cancels the task if abandoned."""
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=interval_s)
            while queue:
                yield queue.pop(0)
            if done:
                break
            yield Keepalive()
    finally:
        if not task.done():
            task.cancel()
    task.result()  # a bug in the work surfaces here
    while queue:
        yield queue.pop(0)
