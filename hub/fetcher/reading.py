"""Reading the top result pages of a search, so the model gets the passages that answer instead of the
engines' teasers (webSearch.readPages; docs/grounding.md).

The pages go through the same fetcher as web_fetch: the address policy (SSRF guard), the operator's
domain lists, the byte and time caps and the page cache. Each page read takes one fetch from the
caller's budget. The pages are read concurrently, and the search waits for them at most `timeoutMs`
from the moment it answered: a page that is late, refused, fails or is not text keeps its snippet.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace

from ..access.budget import Denial
from ..config.keys import ApiKey
from ..config.settings import ReadPages
from ..observability import metrics
from ..search.base import Hit, PageRead, SearchResult
from ..search.passages import select
from .direct import DirectFetch
from .result import UNSUPPORTED_CONTENT_TYPE, URL_NOT_ALLOWED, FetchResult

log = logging.getLogger("searchhub.reading")

# What can't be a page worth reading: the URL says so before anything is fetched.
_NOT_PAGES = (".zip", ".gz", ".tgz", ".exe", ".dmg", ".iso", ".msi", ".apk", ".bin", ".mp3", ".mp4", ".mov",
              ".avi", ".mkv", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".ico", ".woff", ".woff2")


OUTCOMES = ("ok", "timeout", "blocked", "error", "skipped", "budget")
for _outcome_label in OUTCOMES:  # what a page read counts as: /metrics lists each at 0 from the start
    metrics.PAGES_READ.labels(_outcome_label)


class PageReader:
    """Built once per config on the direct fetcher: the URLs come from the search result itself, not
    from the model, so the prior-context rule has nothing to guard (as for a caller that names the URL);
    the key's fetch budget, the address policy and the operator's domain lists hold."""

    def __init__(self, direct: DirectFetch) -> None:
        self.direct = direct

    async def read(self, result: SearchResult, query: str, settings: ReadPages, key: ApiKey | None = None) -> SearchResult:
        """`result` with passages on its top hits, and a PageRead per page tried."""
        if not settings.enabled or not result.ok or not result.hits or settings.top <= 0:
            return result
        started = time.perf_counter()
        hits = list(result.hits)
        tasks = [asyncio.create_task(self._one(hit, query, settings, key)) for hit in hits[: settings.top]]
        try:
            done, late = await asyncio.wait(tasks, timeout=settings.timeout_s)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            raise
        for task in late:
            task.cancel()
        pages = []
        for i, task in enumerate(tasks):
            url = hits[i].url
            if task in late:
                page, passages = PageRead(url, "timeout", ms=settings.timeout_s * 1000), ()
            else:
                try:
                    page, passages = task.result()
                except Exception as e:  # the fetcher returns failures as data; this is a bug, not the page's
                    log.error("reading %s raised %s (a bug)", _shown(url), type(e).__name__)
                    page, passages = PageRead(url, "error"), ()
            if passages:
                hits[i] = replace(hits[i], passages=passages)
            pages.append(page)
            metrics.child(metrics.PAGES_READ, page.outcome).inc()
        elapsed = time.perf_counter() - started
        metrics.PAGE_READ_DURATION.observe(elapsed)
        log.info("read %d page(s) for %r in %.0f ms: %s", len(pages), query[:80], elapsed * 1000,
                 ", ".join(f"{p.outcome}{'(cached)' if p.cached else ''}" for p in pages))
        return replace(result, hits=tuple(hits), pages=tuple(pages))

    async def _one(self, hit: Hit, query: str, settings: ReadPages, key: ApiKey | None) -> tuple[PageRead, tuple[str, ...]]:
        started = time.perf_counter()
        url = hit.url
        if not url.lower().startswith(("http://", "https://")) or url.lower().split("?")[0].endswith(_NOT_PAGES):
            return PageRead(url, "skipped"), ()
        fetched = await self.direct.fetch(url, key)  # a spent budget is not the search's: no bill
        if isinstance(fetched, Denial):
            return PageRead(url, "budget"), ()
        ms = (time.perf_counter() - started) * 1000
        if not fetched.ok:
            return PageRead(url, _outcome(fetched), ms=ms), ()
        passages = tuple(select(fetched.text, query, settings.max_chars))
        return PageRead(url, "ok", chars=sum(map(len, passages)), ms=ms, cached=fetched.cached), passages


def _outcome(fetched: FetchResult) -> str:
    if fetched.error_code == URL_NOT_ALLOWED:
        return "blocked"
    if fetched.error_code == UNSUPPORTED_CONTENT_TYPE:
        return "skipped"
    return "error"


def _shown(url: str) -> str:
    """A URL as a log line may show it: scheme, host and path only."""
    return url.split("?")[0].split("#")[0][:200]
