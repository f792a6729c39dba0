"""Fetched pages in the key-value store, like searches (hub/search/cache.py): the same URL within
the TTL is not fetched again. Only successful, complete reads are stored; a store that fails is a
miss, never a failed fetch."""

from __future__ import annotations

import hashlib

import msgspec

from ..observability import metrics
from ..store.base import Store
from ..store.cached import StructCache
from .result import FetchResult

PREFIX = "cache:fetch:"


class _Stored(msgspec.Struct, array_like=True):
    final_url: str
    title: str | None
    text: str
    retrieved_at: str
    truncated: bool
    media_type: str
    links: tuple[str, ...] = ()  # last, with a default: an entry stored before links were kept reads as none


def cache_key(normalized_url: str, policy_id: str) -> str:
    """The normalized URL, and the address policy it was fetched under: a page read while the
    operator allowed an intranet host must not be served after that permission is withdrawn."""
    digest = hashlib.sha256(f"{policy_id}\n{normalized_url}".encode()).hexdigest()[:40]
    return PREFIX + digest


class FetchCache:
    def __init__(self, store: Store, ttl_s: float, policy_id: str) -> None:
        self._cache = StructCache(store, ttl_s, _Stored, metrics.WEB_FETCH_CACHE, "fetch")
        self.policy_id = policy_id

    async def get(self, url: str) -> FetchResult | None:
        stored = await self._cache.get(cache_key(url, self.policy_id))
        if stored is None:
            return None
        return FetchResult(url=url, final_url=stored.final_url, title=stored.title, text=stored.text,
                           retrieved_at=stored.retrieved_at, truncated=stored.truncated,
                           media_type=stored.media_type, cached=True, links=stored.links)

    async def put(self, result: FetchResult) -> None:
        if not result.ok or result.cached:
            return
        stored = _Stored(result.final_url, result.title, result.text, result.retrieved_at, result.truncated,
                         result.media_type, result.links)
        await self._cache.put(cache_key(result.url, self.policy_id), stored)
