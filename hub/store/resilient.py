"""A shared store that degrades to a per-process one while it is unreachable."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from .base import Store, StoreBusy, StoreUnavailable, UpdateFn

T = TypeVar("T")


class ResilientStore:
    """Serve from ``primary``; while it is down, from ``fallback``, probing it every ``retry_after`` s.

    While degraded, state lives only in this process: writes made then are not copied
    back to the primary when it returns, and the primary's older values reappear.
    Only one request at a time probes the primary, so a dead server is not asked by
    every request, and the probe is a real request so recovery needs no traffic of its own.
    """

    def __init__(
        self,
        primary: Store,
        fallback: Store,
        *,
        retry_after: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._primary = primary
        self._fallback = fallback
        self._retry_after = retry_after
        self._clock = clock
        self.errors_total = 0
        self._down_at: float | None = None  # clock() when the primary went down
        self._down_since: float | None = None  # wall time of the same, for humans
        self._probe_at = 0.0
        self._probing = False
        self._last_error: str | None = None

    @property
    def degraded(self) -> bool:
        return self._down_at is not None

    async def get(self, key: str) -> bytes | None:
        return await self._call(lambda s: s.get(key))

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        return await self._call(lambda s: s.get_many(keys))

    async def set(self, key: str, value: bytes, ttl: float) -> None:
        await self._call(lambda s: s.set(key, value, ttl))

    async def set_many(self, entries: Sequence[tuple[str, bytes]], ttl: float) -> None:
        await self._call(lambda s: s.set_many(entries, ttl))

    async def delete(self, key: str) -> None:
        # Also forget any copy made while degraded, so it cannot resurface in a later outage.
        await self._fallback.delete(key)
        await self._call(lambda s: s.delete(key))

    async def update(self, key: str, fn: UpdateFn, ttl: float) -> bytes | None:
        return await self._call(lambda s: s.update(key, fn, ttl))

    async def incr(self, key: str, amount: int, ttl: float) -> int:
        return await self._call(lambda s: s.incr(key, amount, ttl))

    async def close(self) -> None:
        try:
            await self._primary.close()
        finally:
            await self._fallback.close()

    def health(self) -> dict:
        retry_in = None
        if self._down_at is not None:
            retry_in = round(max(0.0, self._probe_at - self._clock()), 3)
        return {
            "backend": "resilient",
            "ok": True,  # it always answers; "degraded" says from where
            "degraded": self.degraded,
            "since": self._down_since,
            "errors": self.errors_total,
            "last_error": self._last_error,
            "retry_in": retry_in,
            "primary": self._primary.health(),
            "fallback": self._fallback.health(),
        }

    async def _call(self, op: Callable[[Store], Awaitable[T]]) -> T:
        if self._down_at is not None and (self._probing or self._clock() < self._probe_at):
            return await op(self._fallback)
        probe = self._down_at is not None
        if probe:
            self._probing = True
        try:
            result = await op(self._primary)
        except StoreBusy:
            raise  # the primary is fine, this process is just busy: no reason to leave it
        except StoreUnavailable as exc:
            self._mark_down(exc)
            return await op(self._fallback)
        finally:
            if probe:
                self._probing = False
        if probe:
            self._down_at = self._down_since = None
        return result

    def _mark_down(self, exc: StoreUnavailable) -> None:
        now = self._clock()
        self.errors_total += 1
        self._last_error = str(exc)
        if self._down_at is None:
            self._down_at = now
            self._down_since = time.time()
        self._probe_at = now + self._retry_after
