"""What every engine shares: a deadline, bounded results, failures as values. Subclasses only
speak their wire format: API engines (engine.request/parse) and model engines (model.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import httpx

from ..config.proxy import proxy_secrets
from ..config.settings import EngineConfig, WebSearchConfig
from ..core.redaction import redact
from ..routing.dispatch import Dispatcher
from ..routing.router import Router
from ..upstream.proxy import ProxyPolicy
from .base import UNAVAILABLE, EngineError, Parsed, SearchRequest, SearchResult, failure
from .fetch import Outgoing, fetch_json
from .sanitize import bound

log = logging.getLogger("searchhub.search")


@dataclass(frozen=True, slots=True)
class EngineContext:
    """What engines are built with, once per config."""

    client: httpx.AsyncClient
    web_search: WebSearchConfig
    router: Router | None = None
    dispatcher: Dispatcher | None = None
    backends: Mapping[str, type] = field(default_factory=dict)  # provider type -> ModelEngine class
    proxies: ProxyPolicy = field(default_factory=ProxyPolicy)  # the environment's, for engines with their own HTTP


class Engine:
    """Base of all engines. search() never raises for anything a provider can do. Each engine class
    declares its name (TYPE, or PROVIDER_TYPE for a model) and its KIND: what an engines.json entry of
    it must carry and whose index it searches (hub/config/engine_kinds.py's EngineKind; found by
    hub/search/registry.py)."""

    MAX_COUNT: ClassVar[int] = 50  # the most results the service itself returns per call

    def __init__(self, config: EngineConfig, ctx: EngineContext) -> None:
        self.config = config
        self.ctx = ctx
        self.timeout_s = config.timeout_s or ctx.web_search.timeout_s

    @property
    def max_count(self) -> int:
        return min(self.MAX_COUNT, self.config.max_results or self.MAX_COUNT)

    @property
    def secrets(self) -> tuple[str, ...]:
        return (((self.config.api_key,) if self.config.api_key else ()) + tuple(self.config.headers.values())
                + proxy_secrets(self.config.proxy))

    async def search(self, req: SearchRequest) -> SearchResult:
        try:
            async with asyncio.timeout(self.timeout_s):
                parsed = await self.run(req)
        except EngineError as e:
            return self.failed(req, e.message, e.code)
        except TimeoutError:
            return self.failed(req, f"the search timed out after {self.timeout_s:g} s")
        except Exception as e:  # a bug, not a provider failure: still a value for the tool loop
            log.exception("search engine %s crashed", self.config.id)
            return self.failed(req, f"internal error in the search engine ({type(e).__name__})")
        ws = self.ctx.web_search
        result = bound(self.config.id, req, parsed, char_cap=ws.result_char_cap,
                       max_bytes=ws.limits.max_total_result_bytes)
        if parsed.usage is not None:
            result = replace(result, usage=parsed.usage)
        if not result.ok:
            log.info("search engine %s: %s", self.config.id, result.error)
        return result

    async def run(self, req: SearchRequest) -> Parsed:
        raise NotImplementedError

    def failed(self, req: SearchRequest, message: str, code: str = UNAVAILABLE) -> SearchResult:
        message = redact(message, self.secrets)
        log.warning("search engine %s failed: %s", self.config.id, message)
        return failure(self.config.id, req.query, message, code)


class ApiEngine(Engine):
    """A search API (Serper, Brave, ...): one HTTP request, one JSON answer."""

    DEFAULT_BASE_URL: ClassVar[str] = ""

    def __init__(self, config: EngineConfig, ctx: EngineContext) -> None:
        super().__init__(config, ctx)
        self.base_url = (config.base_url or self.DEFAULT_BASE_URL).rstrip("/")

    def request(self, req: SearchRequest) -> Outgoing:
        """The provider's request for this search."""
        raise NotImplementedError

    @staticmethod
    def parse(data: Any) -> Parsed:
        """The provider's answer -> raw hits; EngineError when it is not that provider's shape."""
        raise NotImplementedError

    def outgoing(self, req: SearchRequest) -> Outgoing:
        """request(req) with the engine's configured headers added (the Basic authorization of
        credentials its baseURL was written with: hub/config/loader.py). What run() sends."""
        out = self.request(req)
        if not self.config.headers:
            return out
        return replace(out, headers={**out.headers, **self.config.headers})

    async def run(self, req: SearchRequest) -> Parsed:
        out = self.outgoing(req)
        data = await fetch_json(self.ctx.client, out, timeout=self.timeout_s, secrets=self.secrets,
                                proxy=self.config.proxy)
        return self.parse(data)

    def bearer(self) -> dict[str, str]:
        """The `Authorization: Bearer <apiKey>` header most search APIs take."""
        return {"Authorization": f"Bearer {self.config.api_key or ''}"}

    def post(self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Outgoing:
        """A JSON POST to `path` under the base URL, with a bearer key unless `headers` say otherwise."""
        return Outgoing("POST", f"{self.base_url}{path}", self.bearer() if headers is None else headers, json=body)

    def options(self, **ours: Any) -> dict[str, Any]:
        """Engine `options` are defaults in the provider's own parameter names; what the search asks
        for (query, count, recency, domains) wins over them."""
        return {**self.config.options, **{k: v for k, v in ours.items() if v is not None}}


def site_query(req: SearchRequest) -> str:
    """The query with site: operators, for engines that filter domains only through the query."""
    q = req.query
    if req.allowed_domains:
        sites = " OR ".join(f"site:{d}" for d in req.allowed_domains)
        q += f" ({sites})" if len(req.allowed_domains) > 1 else f" {sites}"
    for d in req.blocked_domains:
        q += f" -site:{d}"
    return q


def malformed(provider: str, what: str) -> EngineError:
    return EngineError(f"{provider} sent a malformed response ({what})")


def result_objects(data: Any, provider: str, key: str = "results", what: str | None = None) -> list[dict]:
    """The objects in `data[key]` (none when it is missing), skipping anything else in the list;
    malformed (`what`, by default "'key' is not a list") when data is no object or data[key] no list."""
    items = data.get(key, []) if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise malformed(provider, what or f"'{key}' is not a list")
    return [r for r in items if isinstance(r, dict)]
