"""A typed cache over the store, shared by the search and fetch caches: msgspec structs in, the
same structs out, every failure (store down, an entry from another version) a miss, never an error."""

from __future__ import annotations

import logging
from typing import Generic, TypeVar

import msgspec
from prometheus_client import Counter

from .base import Store

T = TypeVar("T", bound=msgspec.Struct)
log = logging.getLogger("searchhub.store")


class StructCache(Generic[T]):
    def __init__(self, store: Store, ttl_s: float, kind: type[T], lookups: Counter, name: str) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self._decode = msgspec.json.Decoder(kind).decode
        self._encode = msgspec.json.Encoder().encode
        self._lookups = lookups  # labelled by outcome: hit or miss
        self._name = name

    @property
    def enabled(self) -> bool:
        return self.ttl_s > 0

    async def get(self, key: str) -> T | None:
        if not self.enabled:
            return None
        try:
            raw = await self.store.get(key)
            value = self._decode(raw) if raw is not None else None
        except Exception as e:
            log.debug("%s cache read failed: %s", self._name, type(e).__name__)
            value = None
        self._lookups.labels("hit" if value is not None else "miss").inc()
        return value

    async def put(self, key: str, value: T) -> None:
        if not self.enabled:
            return
        try:
            await self.store.set(key, self._encode(value), self.ttl_s)
        except Exception as e:
            log.debug("%s cache write failed: %s", self._name, type(e).__name__)
