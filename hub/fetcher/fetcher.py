"""The one entry point for reading a web page: check the URL against the policy, answer from the
cache or the network (every hop through the guarded transport), extract the readable text off the
event loop, sanitize it, record metrics. Every failure is a FetchResult with an error code."""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from urllib.parse import urljoin

import httpx

from ..observability import metrics
from ..search.sanitize import clean_text, truncate
from ..store.base import Store
from .addresses import AddressPolicy
from .body import BadEncoding, read_capped
from .cache import FetchCache
from .connect import GuardedTransport, NotResolved, Refused, Resolver, SystemResolver
from .extract import Unreadable, extract, kind_of, may_read, media_type
from .policy import FetchScope
from .result import (
    ERROR_CODES,
    INVALID_TOOL_INPUT,
    TOO_MANY_REQUESTS,
    UNSUPPORTED_CONTENT_TYPE,
    URL_NOT_ACCESSIBLE,
    URL_NOT_ALLOWED,
    FetchResult,
    Refusal,
    failure,
    now_iso,
    refused,
)
from .urls import Target, check, parse

log = logging.getLogger("searchhub.fetch")
REDIRECTS = (301, 302, 303, 307, 308)
TITLE_CAP = 300
USER_AGENT = "searchhub-web-fetch/0.1"
ACCEPT = ("text/html,application/xhtml+xml,text/markdown,text/plain,application/json,application/pdf;q=0.9,"
          "*/*;q=0.1")

for _outcome in ("ok", *ERROR_CODES):  # what a fetch counts as: /metrics lists each at 0 from the start
    metrics.FETCHES.labels(_outcome)


@dataclass(frozen=True, slots=True)
class FetchLimits:
    max_bytes: int = 5 * 1024 * 1024
    timeout_s: float = 15.0
    connect_timeout_s: float = 5.0
    max_redirects: int = 5
    max_chars: int = 50_000
    allowed_ports: frozenset[int] = frozenset({80, 443})
    cache_ttl_s: float = 900.0


class Fetcher:
    """Built once per config; fetch() is safe to call concurrently."""

    def __init__(
        self, limits: FetchLimits, addresses: AddressPolicy, store: Store, *,
        resolver: Resolver | None = None, ssl_context: ssl.SSLContext | None = None,
        executor: Executor | None = None,
    ) -> None:
        self.limits = limits
        self.addresses = addresses
        self.transport = GuardedTransport(addresses, resolver or SystemResolver(),
                                          ssl_context or httpx.create_ssl_context())
        self.cache = FetchCache(store, limits.cache_ttl_s, repr(addresses))
        self._executor = executor

    async def aclose(self) -> None:
        await self.transport.aclose()

    async def fetch(self, url: object, scope: FetchScope, *, use_cache: bool = True) -> FetchResult:
        started = time.perf_counter()
        result, shown = await self._fetch(url, scope, use_cache)
        outcome = "ok" if result.ok else (result.error_code or "unavailable")
        elapsed = time.perf_counter() - started
        # Every fetch passes here (the web_fetch tool, the MCP web_fetch through direct.py): counted
        # once, in both counters; searchhub_fetches_total is the one pre-created at 0 (hub/observability/metrics.py).
        metrics.child(metrics.FETCHES, outcome).inc()
        metrics.child(metrics.WEB_FETCH_CALLS, outcome).inc()
        metrics.child(metrics.WEB_FETCH_DURATION, outcome).observe(elapsed)
        log.info("web fetch %s -> %s%s in %.0f ms", shown, outcome, " (cached)" if result.cached else "",
                 elapsed * 1000)
        return result

    async def _fetch(self, url: object, scope: FetchScope, use_cache: bool) -> tuple[FetchResult, str]:
        """(result, the URL as logs may show it)."""
        shown_url = url if isinstance(url, str) else ""
        target = parse(url)
        if isinstance(target, Refusal):
            return self._refused(shown_url[:300], target), "<invalid url>"
        shown = target.redacted
        refusal = check(target, self.limits.allowed_ports) or scope.check(target)
        if refusal is not None:
            return self._refused(target.url, refusal), shown
        if use_cache:
            cached = await self.cache.get(target.url)
            if cached is not None:
                final = parse(cached.final_url, max_chars=4096)
                hop_refusal = scope.check_domains(final) if isinstance(final, Target) else None
                if hop_refusal is None:
                    return cached, shown
                return self._refused(target.url, hop_refusal), shown
        result, complete = await self._from_network(target, scope)
        if complete:
            await self.cache.put(result)
        return result, shown

    def _refused(self, url: str, refusal: Refusal) -> FetchResult:
        metrics.WEB_FETCH_BLOCKED.labels(refusal.reason).inc()
        return refused(url, refusal)

    async def _from_network(self, start: Target, scope: FetchScope) -> tuple[FetchResult, bool]:
        """(result, whether it may be cached: a page cut short by the deadline may not)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.limits.timeout_s
        target = start
        for hop in range(self.limits.max_redirects + 1):
            request = httpx.Request("GET", target.url, headers=self._headers(), extensions={"timeout": {
                "connect": self.limits.connect_timeout_s, "read": self.limits.timeout_s,
                "write": self.limits.timeout_s, "pool": self.limits.connect_timeout_s}})
            try:
                async with asyncio.timeout_at(deadline):
                    resp = await self.transport.handle_async_request(request)
            except Refused as e:
                where = "the site redirected to" if hop else "the URL leads to"
                return self._refused(start.url, Refusal(URL_NOT_ALLOWED, e.reason,
                                                        f"{where} a non-public network address")), False
            except NotResolved:
                return failure(start.url, f"cannot resolve the host name {target.host[:80]}", URL_NOT_ACCESSIBLE), False
            except (TimeoutError, httpx.TimeoutException):
                return failure(start.url, f"the site did not answer within {self.limits.timeout_s:g} s",
                               URL_NOT_ACCESSIBLE), False
            except httpx.TransportError as e:
                return failure(start.url, f"cannot reach the site ({_short(e)})", URL_NOT_ACCESSIBLE), False
            try:
                location = resp.headers.get("location") if resp.status_code in REDIRECTS else None
                if location is None:
                    return await self._read(start, target, resp, deadline)
            finally:
                await resp.aclose()
            nxt = parse(urljoin(target.url, location.strip()), max_chars=2048)
            if isinstance(nxt, Refusal) and nxt.code == INVALID_TOOL_INPUT:
                return failure(start.url, "the site redirected to an invalid URL", URL_NOT_ACCESSIBLE), False
            refusal = nxt if isinstance(nxt, Refusal) else (
                check(nxt, self.limits.allowed_ports) or scope.check_domains(nxt))
            if refusal is not None:
                return self._refused(start.url, replace(refusal, message="the site redirected to a URL that is "
                                                        "not allowed: " + refusal.message)), False
            assert isinstance(nxt, Target)
            log.debug("web fetch redirect %d: %s", hop + 1, nxt.redacted)
            target = nxt
        return failure(start.url, f"more than {self.limits.max_redirects} redirects", URL_NOT_ACCESSIBLE), False

    def _headers(self) -> dict[str, str]:
        return {"user-agent": USER_AGENT, "accept": ACCEPT, "accept-encoding": "gzip, deflate"}

    async def _read(
        self, start: Target, final: Target, resp: httpx.Response, deadline: float
    ) -> tuple[FetchResult, bool]:
        status = resp.status_code
        if status == 429:
            return failure(start.url, "the site is rate limiting requests (HTTP 429)", TOO_MANY_REQUESTS), False
        if not 200 <= status < 300:
            return failure(start.url, f"the site answered HTTP {status}", URL_NOT_ACCESSIBLE), False
        content_type = resp.headers.get("content-type")
        mt = media_type(content_type)
        if not may_read(content_type):
            return failure(start.url, f"content type {mt[:60]!r} is not supported (HTML, text, Markdown, JSON "
                           "and PDF are)", UNSUPPORTED_CONTENT_TYPE), False
        try:
            body = await read_capped(resp, self.limits.max_bytes, deadline)
        except BadEncoding as e:
            return failure(start.url, str(e), URL_NOT_ACCESSIBLE), False
        except httpx.TransportError as e:
            return failure(start.url, f"the connection failed while reading ({_short(e)})", URL_NOT_ACCESSIBLE), False
        metrics.WEB_FETCH_BYTES.inc(body.wire_bytes)
        kind = kind_of(content_type, body.data[:512])
        if kind is None:
            return failure(start.url, "the content type is not supported", UNSUPPORTED_CONTENT_TYPE), False
        if body.timed_out and not body.data:
            return failure(start.url, f"the site did not send the page within {self.limits.timeout_s:g} s",
                           URL_NOT_ACCESSIBLE), False
        try:
            doc = await asyncio.get_running_loop().run_in_executor(
                self._executor, extract, kind, body.data, content_type, final.url, self.limits.max_chars)
        except Unreadable as e:
            why = f" (the body was cut at {len(body.data)} bytes)" if body.truncated else ""
            return failure(start.url, f"{e}{why}", URL_NOT_ACCESSIBLE), False
        cap = self.limits.max_chars
        text = clean_text(doc.text, cap + 1, multiline=True)  # one over the cap tells that it was cut
        if not text:
            return failure(start.url, "the page has no readable text", URL_NOT_ACCESSIBLE), False
        result = FetchResult(
            url=start.url, final_url=final.url, title=clean_text(doc.title, TITLE_CAP) or None,
            text=truncate(text, cap), retrieved_at=now_iso(), truncated=body.truncated or len(text) > cap,
            media_type=mt or kind, links=doc.links,
        )
        return result, not body.timed_out


def _short(e: Exception) -> str:
    """A transport error, named without addresses (the message of a connect error can hold one)."""
    return type(e).__name__
