"""The key-value store interface shared by the search cache, chain state and stored responses."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol


class StoreUnavailable(Exception):
    """The store could not answer in time; callers degrade instead of failing the request."""


class StoreBusy(StoreUnavailable):
    """Every connection of this process stayed busy for the whole wait: our own queue, not an
    outage, so a resilient store answers this one call as unavailable but does not degrade."""


class StoreDown(StoreUnavailable):
    """The store refused or dropped fresh connections: the client already reconnected and retried, so
    this is an answer about the store's health, unlike a timeout (which a busy process can cause)."""


class Store(Protocol):
    """Bytes in, bytes out, every key with a TTL. Keys are namespaced by the caller."""

    async def get(self, key: str) -> bytes | None: ...

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """The values of several keys (None for each one missing), in the order asked, in one step."""
        ...

    async def set(self, key: str, value: bytes, ttl: float) -> None: ...

    async def set_many(self, entries: Sequence[tuple[str, bytes]], ttl: float) -> None:
        """Set several keys, all with one TTL, in one step: a reader sees all of them or none."""
        ...

    async def delete(self, key: str) -> None: ...

    async def update(
        self, key: str, fn: Callable[[bytes | None], bytes | None], ttl: float
    ) -> bytes | None:
        """Atomically replace the value with fn(old); fn returning None deletes the key.

        Two concurrent updates of one key never lose each other's change.
        """
        ...

    async def incr(self, key: str, amount: int, ttl: float) -> int:
        """Atomically add amount to the counter at key (0 when absent) and return the new value.

        The counter expires ttl seconds after it was created; later increments keep that expiry,
        so a counter per time window ends with its window. Counters live apart from get/set values.
        """
        ...

    async def ping(self) -> None:
        """Raise StoreUnavailable unless the store answers within its deadline (a health check)."""
        ...

    async def close(self) -> None: ...

    def health(self) -> dict: ...


UpdateFn = Callable[[bytes | None], bytes | None]
AsyncUpdateFn = Callable[[bytes | None], Awaitable[bytes | None]]
