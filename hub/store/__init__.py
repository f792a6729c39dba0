"""Key-value state shared by the search cache, chain state and stored responses."""

from __future__ import annotations

from collections.abc import Callable

from .base import Store, StoreBusy, StoreDown, StoreUnavailable
from .memory import MemoryStore

__all__ = ["MemoryStore", "Store", "StoreBusy", "StoreDown", "StoreUnavailable", "open_store"]


def open_store(spec: dict | None, *, on_outage: Callable[[], object] = lambda: None,
               on_lost_write: Callable[[], object] = lambda: None) -> Store:
    """The store the config's ``state`` section asks for; redis degrades to memory while down, calling
    `on_outage` when it does and `on_lost_write` for each write the outage cost."""
    spec = spec or {}
    backend = spec.get("backend", "memory")
    if backend == "memory":
        return MemoryStore()
    if backend == "redis":
        # Imported here so a memory-only deployment never loads the redis client.
        from .redis import DEFAULT_TIMEOUT_S, RedisStore
        from .resilient import ResilientStore

        url = spec.get("url")
        if not url:
            raise ValueError("state.url is required when state.backend is 'redis'")
        primary = RedisStore(
            url,
            key_prefix=spec.get("keyPrefix", "searchhub:"),
            timeout=spec.get("timeoutMs", round(DEFAULT_TIMEOUT_S * 1000)) / 1000,
            max_connections=spec.get("maxConnections", 256),
            pool_timeout=spec.get("poolTimeoutMs", 5000) / 1000,
        )
        return ResilientStore(primary, MemoryStore(), on_outage=on_outage, on_lost_write=on_lost_write)
    raise ValueError(f"unknown state.backend {backend!r}: expected 'memory' or 'redis'")
