"""The one entry point for running a web search: check the request, resolve its engine, answer from
the cache or the engine, fall back to other engines when configured, record metrics."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterable, Sequence

import httpx
from msgspec.structs import replace

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


class EngineIndex:
    """The configured engines by the name a caller gives: the id exactly, else in another case (spaces
    around it ignored). The one rule for naming an engine: the service's choose_engine and OpenRouter's
    `engine` (hub/injection/openrouter.py) both look names up here."""

    def __init__(self, engines: Iterable[EngineConfig] = ()) -> None:
        self.by_id: dict[str, EngineConfig] = {e.id: e for e in engines}
        self._folded = {e.id.casefold(): e for e in self.by_id.values()}

    def find(self, name: str) -> EngineConfig | None:
        return self.by_id.get(name) or self._folded.get(name.strip().casefold())


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
        self._index = EngineIndex(self._ws.engines)
        self._by_id = self._index.by_id
        # Under Google- (Baidu-) preferred intent, a search that names no engine goes to the first engine
        # on that index, unless the default is on it: (google, baidu), decided here once.
        default = self._ws.default_engine
        google, baidu = self.engines(google_only=True), self.engines(baidu_only=True)
        self._narrowed = (
            google[0].id if google and not (default is not None and default.google) else None,
            baidu[0].id if baidu and not (default is not None and default.baidu) else None,
        )
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

    def choose_engine(
        self, asked: str | None, *, preferred: str | None = None, google: bool = False, baidu: bool = False,
    ) -> tuple[str | None, str]:
        """The one engine resolution: (the id a search goes to, how it was chosen: model | google | baidu
        | default). The engine asked for; else `preferred` (a hosted tool's engine: OpenRouter's); else,
        under Google- (Baidu-) preferred intent, the first engine on that index unless the default is on
        it; else the default (the only engine, when there is one). A configured id is matched exactly or
        case-insensitively and comes back as configured; a name that matches none comes back as it is,
        and None when nothing is named and there is no default: search() answers those with the error."""
        if asked is not None and asked.strip():
            name: str | None = asked
            how = "model"
        else:
            name = preferred or (self._narrowed[1] if baidu else self._narrowed[0] if google else None)
            how = ("baidu" if baidu else "google") if name else "default"
        if name is None or not name.strip():
            found = self._ws.default_engine
        else:
            found = self._index.find(name)
        return (found.id if found is not None else name), how

    def configured(self, engine_id: str | None) -> bool:
        """Whether this is a configured engine's id, exactly (as choose_engine returns it)."""
        return engine_id in self._by_id

    async def search(self, req: SearchRequest) -> SearchResult:
        """One search, whatever door asked for it: a result or a structured error, never an exception."""
        started = time.perf_counter()
        result, label = await self._search(req)
        outcome = "ok" if result.ok else (result.error_code or UNAVAILABLE)
        elapsed = time.perf_counter() - started
        metrics.child(metrics.WEB_SEARCH_CALLS, label, outcome).inc()
        metrics.child(metrics.WEB_SEARCH_DURATION, label, outcome).observe(elapsed)
        self.activity.search(label, result.ok, result.cached, elapsed)
        return result

    async def _search(self, req: SearchRequest) -> tuple[SearchResult, str]:
        """(result, metrics label); the label is an engine id or 'none' (never model-chosen text)."""
        q = clean_query(req.query, MAX_QUERY_CHARS + 1)
        engine_id, _ = self.choose_engine(req.engine)  # an id the web_search tool resolved is its own
        engine = self._by_id.get(engine_id) if engine_id is not None else None
        if engine is None:
            return self._no_engine(req.engine, q), "none"
        if not q:
            return failure(engine.id, "", "query is empty", INVALID_TOOL_INPUT), engine.id
        if len(q) > MAX_QUERY_CHARS:
            return failure(engine.id, q[:MAX_QUERY_CHARS],
                           f"query is longer than {MAX_QUERY_CHARS} characters", QUERY_TOO_LONG), engine.id
        recency = None if req.recency in (None, "", "noLimit") else req.recency
        if recency is not None and recency not in RECENCY:
            return failure(engine.id, q, f"recency must be one of {', '.join(RECENCY)}", INVALID_TOOL_INPUT), engine.id
        req = replace(
            req, query=q, engine=engine.id, recency=recency,
            count=req.count if req.count is not None and req.count > 0 else self._ws.max_results,
            allowed_domains=_domains(req.allowed_domains), blocked_domains=_domains(req.blocked_domains),
        )  # the count is clamped to the engine's maximum per attempt
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
        return dataclasses.replace(first, error="every engine failed: " + "; ".join(errors)), engine.id

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
            result = dataclasses.replace(result, cost=cost)
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

    def _no_engine(self, engine_id: str | None, query: str) -> SearchResult:
        ids = [e.id for e in self._ws.engines]
        if not ids:
            return failure("none", query, "no web search engine is configured", UNAVAILABLE)
        if engine_id is None or not engine_id.strip():
            return failure("none", query, f"choose an engine: {', '.join(ids)}", INVALID_TOOL_INPUT)
        shown = clean_text(engine_id, 64)  # a model-chosen id, safe to echo
        return failure(shown or "none", query, f"unknown engine '{shown}'; valid engines: {', '.join(ids)}",
                       INVALID_TOOL_INPUT)


def _domains(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(d for d in map(normalize_domain, values) if d))
