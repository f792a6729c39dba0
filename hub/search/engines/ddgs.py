"""DDGS, the keyless default: the `ddgs` metasearch library (DuckDuckGo, Brave, Mojeek, Yahoo,
Wikipedia, ... scraped by a well-kept library, not by us). Its calls block, so they run in worker
threads, a few at a time per engine; its HTTP client (primp) is its own, so the proxy is handed to it.

Failure mapping: ddgs raises DDGSException for everything (it never raises its RatelimitException
today; a rate-limited backend looks like "no results"), TimeoutException for timeouts. Both become
structured search errors that `webSearch.fallback` hands to the next engine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, ClassVar

from ddgs import DDGS
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

from ...config.engine_kinds import EngineKind
from ...config.proxy import DIRECT, mask_proxy
from ...config.settings import EngineConfig
from ...core.redaction import redact
from .. import fetch
from ..base import TOO_MANY_REQUESTS, EngineError, Parsed, RawHit, SearchRequest
from ..engine import Engine, EngineContext, site_query
from ..sanitize import clean_text

TIMELIMIT = {"oneDay": "d", "oneWeek": "w", "oneMonth": "m", "oneYear": "y"}
DEFAULT_REGION = "us-en"
# user_location.country -> ddgs region (cc-ll); unknown countries keep the configured region.
REGIONS = {
    "US": "us-en", "GB": "uk-en", "UK": "uk-en", "CA": "ca-en", "AU": "au-en", "NZ": "nz-en", "IE": "ie-en",
    "IN": "in-en", "SG": "sg-en", "ZA": "za-en", "DE": "de-de", "AT": "at-de", "CH": "ch-de", "FR": "fr-fr",
    "BE": "be-fr", "ES": "es-es", "MX": "mx-es", "AR": "ar-es", "IT": "it-it", "NL": "nl-nl", "PT": "pt-pt",
    "BR": "br-pt", "PL": "pl-pl", "SE": "se-sv", "NO": "no-no", "DK": "dk-da", "FI": "fi-fi", "RU": "ru-ru",
    "UA": "ua-uk", "TR": "tr-tr", "JP": "jp-jp", "KR": "kr-kr", "CN": "cn-zh", "TW": "tw-tzh", "HK": "hk-tzh",
    "ID": "id-en", "VN": "vn-vi", "TH": "th-th", "IL": "il-he",
}
SAFESEARCH = ("on", "moderate", "off")


def backends(options: Mapping[str, Any]) -> list[str]:
    """The ddgs backends an entry's `options.backend` names ("auto" when it names none)."""
    value = options.get("backend", "auto")
    return [b.strip().lower() for b in value.split(",") if b.strip()] if isinstance(value, str) else ["auto"]


def _index(options: Mapping[str, Any]) -> str | None:
    """Google-backed only when every chosen backend is ddgs's google one (disabled in ddgs 9.16, may return)."""
    chosen = backends(options)
    return "google" if chosen and all(b == "google" for b in chosen) else None


class DdgsEngine(Engine):
    TYPE: ClassVar[str] = "ddgs"  # webSearch.engines[].type
    KIND: ClassVar[EngineKind] = EngineKind(keyless=True, index_of=_index)
    MAX_COUNT = 30
    CONCURRENCY: ClassVar[int] = 4  # searches in flight per engine (each fans out to threads itself)

    def __init__(self, config: EngineConfig, ctx: EngineContext) -> None:
        super().__init__(config, ctx)
        opts = config.options
        slots = opts.get("concurrency", self.CONCURRENCY)
        valid = isinstance(slots, int) and not isinstance(slots, bool) and 0 < slots <= 64
        self._slots = asyncio.Semaphore(slots if valid else self.CONCURRENCY)
        if config.proxy == DIRECT:
            self._proxy = None
        else:
            self._proxy = config.proxy or ctx.proxies.for_url("https", "html.duckduckgo.com", 443)
        verify = opts.get("verify", True)  # False, or the path of a PEM CA bundle (a TLS-intercepting proxy)
        self._verify = verify if isinstance(verify, bool | str) else True
        self._backend = ",".join(backends(opts)) or "auto"
        self._region = opts.get("region") if isinstance(opts.get("region"), str) else DEFAULT_REGION
        safe = opts.get("safesearch", "moderate")
        self._safesearch = safe if safe in SAFESEARCH else "moderate"

    def arguments(self, req: SearchRequest) -> dict[str, Any]:
        """The keyword arguments of DDGS.text for this search."""
        country = req.country
        return {
            "region": REGIONS.get(country, self._region) if country else self._region,
            "safesearch": self._safesearch,
            "timelimit": TIMELIMIT.get(req.recency or ""),
            "max_results": req.count,
            "backend": self._backend,
        }

    def _text(self, query: str, kwargs: dict[str, Any]) -> list[dict]:
        # Runs in a worker thread: ddgs is synchronous. Its own timeout bounds the thread's life
        # even when our deadline has already answered the search.
        client = DDGS(proxy=self._proxy, timeout=max(1, round(self.timeout_s)), verify=self._verify)
        return client.text(query, **kwargs)

    async def run(self, req: SearchRequest) -> Parsed:
        async with self._slots:
            try:
                results = await asyncio.to_thread(self._text, site_query(req), self.arguments(req))
            except RatelimitException:
                raise EngineError("rate limited by the ddgs backends", TOO_MANY_REQUESTS) from None
            except TimeoutException:
                raise EngineError(f"the ddgs backends timed out after {self.timeout_s:g} s") from None
            except DDGSException as e:
                text = str(e)
                if "no results" in text.lower():
                    return Parsed([])
                # ddgs quotes its HTTP client's error, which may name the proxy: mask and cut it, to the
                # same cap as a search API's message (raised for `searchhub search`, hub/cli/search.py).
                detail = clean_text(redact(mask_proxy(text) or "", self.secrets), fetch.message_cap.get())
                raise EngineError(f"the ddgs backends failed ({detail or type(e).__name__})") from None
        hits = [RawHit(r.get("title"), r.get("href"), r.get("body")) for r in results or () if isinstance(r, dict)]
        return Parsed(hits)
