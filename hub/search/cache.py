"""Search results in the key-value store: the same search within the TTL does not reach the provider.
Only successful results are stored; a store that fails is a cache miss, never a failed search."""

from __future__ import annotations

import hashlib
import json

import msgspec

from ..observability import metrics
from ..store.base import Store
from ..store.cached import StructCache
from .base import Hit, SearchRequest, SearchResult

PREFIX = "cache:search:"


class _Stored(msgspec.Struct, array_like=True):
    """Compact on purpose: a cached result is a short JSON array."""

    engine: str
    summary: str | None
    hits: list[tuple[str, str, str, str | None, str | None]]


def cache_key(engine_id: str, req: SearchRequest) -> str:
    """Equal searches, equal keys: the query case- and space-normalized, domains sorted."""
    ident = [
        engine_id,
        " ".join(req.query.casefold().split()),
        req.count,
        req.recency or "noLimit",
        sorted(req.allowed_domains),
        sorted(req.blocked_domains),
        sorted((str(k), str(v)) for k, v in (req.user_location or {}).items()),
    ]
    digest = hashlib.sha256(json.dumps(ident, ensure_ascii=False).encode()).hexdigest()[:40]
    return PREFIX + digest


class SearchCache:
    def __init__(self, store: Store, ttl_s: float) -> None:
        self._cache = StructCache(store, ttl_s, _Stored, metrics.WEB_SEARCH_CACHE, "search")

    @property
    def enabled(self) -> bool:
        return self._cache.enabled

    async def get(self, engine_id: str, req: SearchRequest) -> SearchResult | None:
        if not self.enabled:  # cacheTtlMs 0: not even a key to compute
            return None
        stored = await self._cache.get(cache_key(engine_id, req))
        if stored is None:
            return None
        hits = tuple(Hit(*h) for h in stored.hits)
        return SearchResult(engine=stored.engine, query=req.query, hits=hits, summary=stored.summary, cached=True)

    async def put(self, engine_id: str, req: SearchRequest, result: SearchResult) -> None:
        if not self.enabled or not result.ok or result.cached or result.engine_errors:
            return  # a partial fan-out result is not kept: the failed engines may answer next time
        stored = _Stored(
            result.engine, result.summary,
            [(h.title, h.url, h.snippet, h.source, h.published) for h in result.hits],
        )
        await self._cache.put(cache_key(engine_id, req), stored)
