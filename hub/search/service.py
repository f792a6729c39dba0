"""The one entry point for running a web search: validate the arguments, pick the engine, answer
from the cache or the engine, fall back to other engines when configured, record metrics."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import httpx

from ..config.settings import Config, EngineConfig
from ..observability import metrics
from ..observability.activity import Activity
from ..routing.dispatch import Dispatcher
from ..routing.router import Router
from ..store.base import Store
from ..upstream.proxy import ProxyPolicy
from .base import (
    INVALID_TOOL_INPUT,
    MAX_QUERY_CHARS,
    QUERY_TOO_LONG,
    RECENCY,
    TOO_MANY_REQUESTS,
    UNAVAILABLE,
    SearchRequest,
    SearchResult,
    failure,
)
from .cache import SearchCache
from .cost import price
from .engine import Engine, EngineContext
from .registry import MODEL_BACKENDS, build_engines
from .sanitize import clean_query, clean_text, normalize_domain

log = logging.getLogger("searchhub.search")
# Failures another engine might not have; bad arguments would fail everywhere.
_FALLBACK_CODES = (UNAVAILABLE, TOO_MANY_REQUESTS)


class SearchService:
    """Built once per config: engines are constructed here, a search only looks them up."""

    def __init__(
        self, config: Config, client: httpx.AsyncClient, router: Router, dispatcher: Dispatcher, store: Store,
        *, activity: Activity | None = None,
    ) -> None:
        self.config = config
        self._ws = config.web_search
        proxies = getattr(client, "proxies", None) or ProxyPolicy()
        ctx = EngineContext(client, self._ws, router, dispatcher, MODEL_BACKENDS, proxies)
        self._engines: dict[str, Engine] = build_engines(config, ctx)
        self._folded = {e.id.casefold(): e for e in self._ws.engines}
        self.cache = SearchCache(store, self._ws.cache_ttl_s)
        self.activity = activity or Activity()

    def engines(self, *, google_only: bool = False, baidu_only: bool = False) -> list[EngineConfig]:
        """All engines, or only the Google-backed (Baidu-backed) ones (all of them when none is)."""
        engines = list(self._ws.engines)
        if baidu_only:
            return [e for e in engines if e.baidu] or engines
        if google_only:
            return [e for e in engines if e.google] or engines
        return engines

    def resolve_engine(self, engine_id: str | None) -> EngineConfig | None:
        """None -> the default engine (or the only one); an id -> that engine, case-insensitively."""
        if engine_id is None or (isinstance(engine_id, str) and not engine_id.strip()):
            return self._ws.default_engine
        if not isinstance(engine_id, str):
            return None
        for e in self._ws.engines:
            if e.id == engine_id:
                return e
        return self._folded.get(engine_id.strip().casefold())

    async def search(
        self, query: str, *, engine: str | None = None, count: int | None = None, recency: str | None = None,
        allowed_domains: Sequence[str] = (), blocked_domains: Sequence[str] = (),
        user_location: dict | None = None,
    ) -> SearchResult:
        started = time.perf_counter()
        result, label = await self._search(
            query, engine, count, recency, allowed_domains, blocked_domains, user_location
        )
        outcome = "ok" if result.ok else (result.error_code or UNAVAILABLE)
        elapsed = time.perf_counter() - started
        metrics.child(metrics.WEB_SEARCH_CALLS, label, outcome).inc()
        metrics.child(metrics.WEB_SEARCH_DURATION, label, outcome).observe(elapsed)
        self.activity.search(label, result.ok, result.cached, elapsed)
        return result

    async def _search(
        self, query: Any, engine_id: Any, count: Any, recency: Any,
        allowed: Sequence[str], blocked: Sequence[str], user_location: Any,
    ) -> tuple[SearchResult, str]:
        """(result, metrics label); the label is an engine id or 'none' (never model-chosen text)."""
        if not isinstance(query, str):
            return failure(_shown_id(engine_id), "", "query must be a string", INVALID_TOOL_INPUT), "none"
        q = clean_query(query, MAX_QUERY_CHARS + 1)
        engine = self.resolve_engine(engine_id)
        if engine is None:
            return self._no_engine(engine_id, q), "none"
        if not q:
            return failure(engine.id, "", "query is empty", INVALID_TOOL_INPUT), engine.id
        if len(q) > MAX_QUERY_CHARS:
            return failure(engine.id, q[:MAX_QUERY_CHARS],
                           f"query is longer than {MAX_QUERY_CHARS} characters", QUERY_TOO_LONG), engine.id
        if recency in (None, "", "noLimit"):
            recency = None
        elif recency not in RECENCY:
            return failure(engine.id, q, f"recency must be one of {', '.join(RECENCY)}", INVALID_TOOL_INPUT), engine.id
        n = _as_count(count)
        if n is None:
            return failure(engine.id, q, "count must be a positive integer", INVALID_TOOL_INPUT), engine.id
        req = SearchRequest(
            query=q,
            count=n or self._ws.max_results,  # clamped to the engine's maximum per attempt
            recency=recency,
            allowed_domains=_domains(allowed),
            blocked_domains=_domains(blocked),
            user_location=dict(user_location) if isinstance(user_location, dict) else None,
        )
        first = await self._attempt(engine, req)
        if first.ok or not self._ws.fallback or first.error_code not in _FALLBACK_CODES:
            return first, engine.id
        errors = [f"{engine.id}: {first.error}"]
        for other in self._fallbacks(engine):
            result = await self._attempt(other, req)
            if result.ok:
                log.info("web search fell back from %s to %s", engine.id, other.id)
                return result, other.id
            errors.append(f"{other.id}: {result.error}")
        return replace(first, error="every engine failed: " + "; ".join(errors)), engine.id

    async def _attempt(self, config: EngineConfig, req: SearchRequest) -> SearchResult:
        engine = self._engines[config.id]
        count = max(1, min(req.count, engine.max_count))
        if count != req.count:
            req = replace(req, count=count)
        cached = await self.cache.get(config.id, req)
        if cached is not None:
            return cached
        result = await engine.search(req)
        await self.cache.put(config.id, req, result)
        if result.ok and (cost := price(config, result)) != result.cost:  # dataclasses.replace is slow
            result = replace(result, cost=cost)
        return result

    async def probe(self, engine_id: str, query: str, count: int = 1) -> SearchResult:
        """One live search on exactly this engine: no cache, no fallback (`searchhub engines --probe`)."""
        return await self._engines[engine_id].search(SearchRequest(query=clean_query(query), count=count))

    def _fallbacks(self, chosen: EngineConfig) -> list[EngineConfig]:
        """The default engine first, then the others in config order."""
        default = self._ws.default_engine
        order = ([default] if default else []) + list(self._ws.engines)
        seen = {chosen.id}
        out = []
        for e in order:
            if e.id not in seen:
                seen.add(e.id)
                out.append(e)
        return out

    def _no_engine(self, engine_id: Any, query: str) -> SearchResult:
        ids = [e.id for e in self._ws.engines]
        if not ids:
            return failure("none", query, "no web search engine is configured", UNAVAILABLE)
        if engine_id is None or (isinstance(engine_id, str) and not engine_id.strip()):
            msg = f"choose an engine: {', '.join(ids)}"
        elif not isinstance(engine_id, str):
            msg = f"engine must be one of: {', '.join(ids)}"
        else:
            msg = f"unknown engine '{_shown_id(engine_id)}'; valid engines: {', '.join(ids)}"
        return failure(_shown_id(engine_id) or "none", query, msg, INVALID_TOOL_INPUT)


def _shown_id(engine_id: Any) -> str:
    """A model-chosen engine id, safe to echo."""
    return clean_text(engine_id, 64) if isinstance(engine_id, str) else ""


def _as_count(count: Any) -> int | None:
    """The count asked for; 0 for 'the default' (absent, zero or negative); None for a non-number."""
    if count is None:
        return 0
    if isinstance(count, bool):
        return None
    if isinstance(count, float) and count.is_integer():
        count = int(count)
    if isinstance(count, str) and count.strip().isdigit():
        count = int(count.strip())
    if isinstance(count, int):
        return max(count, 0)
    return None


def _domains(values: Sequence[str]) -> tuple[str, ...]:
    if isinstance(values, str):
        values = [values]
    return tuple(dict.fromkeys(d for d in map(normalize_domain, values or ()) if d))
