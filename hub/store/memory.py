"""In-process store: the zero-setup default."""

from __future__ import annotations

import time
from collections.abc import Sequence

from .base import UpdateFn


class MemoryStore:
    """A dict with expiry times. Single event loop, so updates are atomic without locks."""

    def __init__(self, max_keys: int = 100_000) -> None:
        self._data: dict[str, tuple[float, bytes]] = {}
        self._max_keys = max_keys

    def _live(self, key: str) -> bytes | None:
        item = self._data.get(key)
        if item is None:
            return None
        expires, value = item
        if expires <= time.monotonic():
            del self._data[key]
            return None
        return value

    async def get(self, key: str) -> bytes | None:
        return self._live(key)

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        return [self._live(key) for key in keys]

    async def set(self, key: str, value: bytes, ttl: float) -> None:
        if len(self._data) >= self._max_keys and key not in self._data:
            self._evict()
        self._data[key] = (time.monotonic() + ttl, value)

    async def set_many(self, entries: Sequence[tuple[str, bytes]], ttl: float) -> None:
        for key, value in entries:  # no await in between: atomic on the one event loop
            await self.set(key, value, ttl)

    async def delete(self, key: str) -> None:
        self._data.pop(key, None)

    async def update(self, key: str, fn: UpdateFn, ttl: float) -> bytes | None:
        new = fn(self._live(key))
        if new is None:
            self._data.pop(key, None)
        else:
            await self.set(key, new, ttl)
        return new

    async def incr(self, key: str, amount: int, ttl: float) -> int:
        item = self._data.get(key)
        if item is None or item[0] <= time.monotonic():
            value, expires = amount, time.monotonic() + ttl
        else:
            value, expires = int(item[1]) + amount, item[0]
        if len(self._data) >= self._max_keys and key not in self._data:
            self._evict()
        self._data[key] = (expires, str(value).encode())
        return value

    async def ping(self) -> None:
        return None  # in this process: always there

    async def close(self) -> None:
        self._data.clear()

    def health(self) -> dict:
        return {"backend": "memory", "ok": True, "keys": len(self._data)}

    def _evict(self) -> None:
        now = time.monotonic()
        expired = [k for k, (exp, _) in self._data.items() if exp <= now]
        for k in expired:
            del self._data[k]
        if len(self._data) >= self._max_keys:
            # Drop the oldest-inserted tenth: dicts keep insertion order.
            for k in list(self._data)[: max(1, self._max_keys // 10)]:
                del self._data[k]
