"""A shared store that degrades to a per-process one while it is unreachable."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from .base import Store, StoreBusy, StoreDown, StoreUnavailable, UpdateFn

T = TypeVar("T")


def _nothing() -> None:
    return None


class ResilientStore:
    """Serve from ``primary``; while it is down (``degraded``), from ``fallback``.

    Degraded is decided from the primary's health, not from one failed call:

    - a call that fails is answered from the fallback alone (its write stays in this process);
    - a call that failed because the primary refused or dropped fresh connections (``StoreDown``: the
      client already reconnected and retried) degrades at once; so does any failure before the primary
      ever answered (nothing shared to lose, and /health says so at start-up);
    - any other failure (a timeout: a hung Redis, or this process too busy to read the answer in time)
      starts a health check, one PING with its own deadline; only a failed PING degrades;
    - while degraded, no call waits on the primary: a PING every ``retry_after`` seconds, and the
      first one answered ends it.

    A call never waits on the primary longer than the primary's own deadline. Writes made while
    degraded (or by a call that failed) are not copied back when the primary returns: they are
    counted (``lost_writes``, on_lost_write) and the primary's older values reappear.
    """

    def __init__(
        self,
        primary: Store,
        fallback: Store,
        *,
        retry_after: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
        on_outage: Callable[[], object] = _nothing,
        on_lost_write: Callable[[], object] = _nothing,
    ) -> None:
        self._primary = primary
        self._fallback = fallback
        self._retry_after = retry_after  # the PING interval while degraded
        self._clock = clock
        self._on_outage = on_outage
        self._on_lost_write = on_lost_write
        self.errors_total = 0
        self.lost_writes = 0
        self.outages = 0
        self._reached = False  # the primary answered once
        self._down_at: float | None = None  # clock() when the primary went down
        self._down_since: float | None = None  # wall time of the same, for humans
        self._last_error: str | None = None
        self._last_outage: dict | None = None
        self._checker: asyncio.Task | None = None  # the health check: a PING now, then every retry_after
        self._next_ping: float | None = None
        self._closed = False

    @property
    def degraded(self) -> bool:
        return self._down_at is not None

    async def get(self, key: str) -> bytes | None:
        return await self._call(lambda s: s.get(key))

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        return await self._call(lambda s: s.get_many(keys))

    async def set(self, key: str, value: bytes, ttl: float) -> None:
        await self._call(lambda s: s.set(key, value, ttl), write=True)

    async def set_many(self, entries: Sequence[tuple[str, bytes]], ttl: float) -> None:
        await self._call(lambda s: s.set_many(entries, ttl), write=True)

    async def delete(self, key: str) -> None:
        # Also forget any copy made while degraded, so it cannot resurface in a later outage.
        await self._fallback.delete(key)
        await self._call(lambda s: s.delete(key), write=True)

    async def update(self, key: str, fn: UpdateFn, ttl: float) -> bytes | None:
        return await self._call(lambda s: s.update(key, fn, ttl), write=True)

    async def incr(self, key: str, amount: int, ttl: float) -> int:
        return await self._call(lambda s: s.incr(key, amount, ttl), write=True)

    async def ping(self) -> None:
        return None  # it always answers, from one store or the other

    async def close(self) -> None:
        self._closed = True
        if self._checker is not None:
            self._checker.cancel()
            with contextlib.suppress(BaseException):
                await self._checker
        try:
            await self._primary.close()
        finally:
            await self._fallback.close()

    def health(self) -> dict:
        retry_in = None  # while degraded: seconds to the next PING (0: one is running)
        if self._down_at is not None:
            retry_in = round(max(0.0, self._next_ping - self._clock()), 3) if self._next_ping is not None else 0.0
        last = dict(self._last_outage) if self._last_outage else None
        if last is not None and last["until"] is None:
            last["seconds"] = round(time.time() - last["since"], 3)
        return {
            "backend": "resilient",
            "ok": True,  # it always answers; "degraded" says from where
            "degraded": self.degraded,
            "since": self._down_since,
            "errors": self.errors_total,
            "last_error": self._last_error,
            "retry_in": retry_in,
            "checking": self._checker is not None and not self._checker.done(),
            "outages": self.outages,
            "lost_writes": self.lost_writes,
            "last_outage": last,
            "primary": self._primary.health(),
            "fallback": self._fallback.health(),
        }

    async def _call(self, op: Callable[[Store], Awaitable[T]], *, write: bool = False) -> T:
        if self._down_at is not None:
            if write:
                self._lost_write()
            return await op(self._fallback)
        try:
            result = await op(self._primary)
        except StoreBusy:
            raise  # the primary is fine, this process is just busy: no reason to leave it
        except StoreUnavailable as exc:
            self._failed(exc)
            if write:
                self._lost_write()
            return await op(self._fallback)
        self._reached = True
        return result

    def _failed(self, exc: StoreUnavailable) -> None:
        self.errors_total += 1
        self._last_error = str(exc)
        if self._down_at is not None:
            return
        if isinstance(exc, StoreDown) or not self._reached:
            self._mark_down()
        else:
            self._check()  # a timeout may be our own load: a PING decides

    def _lost_write(self) -> None:
        self.lost_writes += 1
        if self._last_outage is not None and self._last_outage["until"] is None:
            self._last_outage["lost_writes"] += 1
        self._on_lost_write()

    def _mark_down(self) -> None:
        self._down_at = self._clock()
        self._down_since = time.time()
        self.outages += 1
        self._last_outage = {"since": self._down_since, "until": None, "seconds": None, "lost_writes": 0,
                             "error": self._last_error}
        self._on_outage()
        self._check(first_after=self._retry_after)  # from a running health check: it goes on PINGing

    def _mark_up(self) -> None:
        self._down_at = self._down_since = None
        self._next_ping = None
        if self._last_outage is not None and self._last_outage["until"] is None:
            now = time.time()
            self._last_outage["until"] = now
            self._last_outage["seconds"] = round(now - self._last_outage["since"], 3)

    def _check(self, first_after: float = 0.0) -> None:
        """Start the health check unless it runs already (it then decides for this failure too)."""
        if self._closed or (self._checker is not None and not self._checker.done()):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._next_ping = self._clock() + first_after
        self._checker = loop.create_task(self._health_check(first_after))

    async def _health_check(self, first_after: float) -> None:
        """PING the primary until it answers: degrade on the first PING that fails, recover on the first
        that succeeds. Each PING is bounded by the primary's own deadline."""
        delay = first_after
        while True:
            if delay > 0:
                self._next_ping = self._clock() + delay
                await asyncio.sleep(delay)
            self._next_ping = None
            try:
                await self._primary.ping()
            except StoreBusy:
                if self._down_at is None:
                    return  # every connection is busy serving: the primary is not what failed
            except Exception as exc:  # StoreUnavailable, or anything else: no answer is no answer
                self.errors_total += 1
                self._last_error = str(exc) if isinstance(exc, StoreUnavailable) else f"PING: {type(exc).__name__}"
                if self._down_at is None:
                    self._mark_down()
            else:
                self._reached = True
                if self._down_at is not None:
                    self._mark_up()
                return
            delay = self._retry_after
