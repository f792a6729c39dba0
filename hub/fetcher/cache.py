"""Fetched pages in the key-value store, like searches (hub/search/cache.py): the same URL within
the TTL is not fetched again. Only successful, complete reads are stored; a store that fails is a
miss, never a failed fetch."""

from __future__ import annotations

import hashlib
import logging

import msgspec

from .. import metrics
from ..store.base import Store
from .result import FetchResult

log = logging.getLogger("searchhub.fetch")
PREFIX = "cache:fetch:"


class _Stored(msgspec.Struct, array_like=True):
    final_url: str
    title: str | None
    text: str
    retrieved_at: str
    truncated: bool
    media_type: str


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(_Stored).decode


def cache_key(normalized_url: str, policy_id: str) -> str:
    """The normalized URL, and the address policy it was fetched under: a page read while the
    operator allowed an intranet host must not be served after that permission is withdrawn."""
    digest = hashlib.sha256(f"{policy_id}\n{normalized_url}".encode()).hexdigest()[:40]
    return PREFIX + digest


class FetchCache:
    def __init__(self, store: Store, ttl_s: float, policy_id: str) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self.policy_id = policy_id

    @property
    def enabled(self) -> bool:
        return self.ttl_s > 0

    async def get(self, url: str) -> FetchResult | None:
        if not self.enabled:
            return None
        try:
            raw = await self.store.get(cache_key(url, self.policy_id))
            stored = _decode(raw) if raw is not None else None
        except Exception as e:  # store down or an entry from another version: a miss
            log.debug("fetch cache read failed: %s", type(e).__name__)
            stored = None
        metrics.WEB_FETCH_CACHE.labels("hit" if stored else "miss").inc()
        if stored is None:
            return None
        return FetchResult(url=url, final_url=stored.final_url, title=stored.title, text=stored.text,
                           retrieved_at=stored.retrieved_at, truncated=stored.truncated,
                           media_type=stored.media_type, cached=True)

    async def put(self, result: FetchResult) -> None:
        if not self.enabled or not result.ok or result.cached:
            return
        stored = _Stored(result.final_url, result.title, result.text, result.retrieved_at, result.truncated,
                         result.media_type)
        try:
            await self.store.set(cache_key(result.url, self.policy_id), _encode(stored), self.ttl_s)
        except Exception as e:
            log.debug("fetch cache write failed: %s", type(e).__name__)
