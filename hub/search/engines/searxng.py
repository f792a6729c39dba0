"""SearXNG (self-hosted, keyless): `GET {base}/search?format=json`."""

from __future__ import annotations

from typing import Any, ClassVar

from ...config.engine_kinds import EngineKind
from ..base import EngineError, Parsed, RawHit, SearchRequest, as_dict, as_list, first_str
from ..engine import ApiEngine, malformed
from ..fetch import Outgoing, fetch_json
from ..locale import language_tag
from ..sanitize import clean_text

TIME_RANGE = {"oneDay": "day", "oneWeek": "week", "oneMonth": "month", "oneYear": "year"}


class SearxngEngine(ApiEngine):
    TYPE: ClassVar[str] = "searxng"  # webSearch.engines[].type
    KIND: ClassVar[EngineKind] = EngineKind(keyless=True, needs_base_url=True)
    DEFAULT_BASE_URL = "http://127.0.0.1:8888"  # there is no public default: config requires baseURL
    MAX_COUNT = 50  # SearXNG has no count parameter; a page is cut to the count

    def request(self, req: SearchRequest) -> Outgoing:
        params = self.options(q=req.query, format="json", time_range=TIME_RANGE.get(req.recency or ""),
                              language=language_tag(req.country))
        # Keyless by design; an apiKey is sent as a bearer token for instances behind an auth proxy.
        headers = {"Authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else {}
        return Outgoing("GET", f"{self.base_url}/search", headers, params=params)

    async def run(self, req: SearchRequest) -> Parsed:
        try:
            data = await fetch_json(self.ctx.client, self.outgoing(req), timeout=self.timeout_s, secrets=self.secrets,
                                    proxy=self.config.proxy)
        except EngineError as e:
            if e.status == 403:
                raise EngineError(
                    "the SearXNG instance refused format=json (HTTP 403): enable 'json' in its "
                    "settings.yml search.formats", e.code,
                ) from None
            raise
        return self.parse(data)

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict) or not isinstance(data.get("results", []), list):
            raise malformed("SearXNG", "'results' is not a list")
        results = data.get("results", [])
        failing = [e for e in as_list(data.get("unresponsive_engines")) if e]
        if not results and failing:
            # SearXNG answers 200 even when every engine behind it failed.
            names = ", ".join(_describe(e) for e in failing[:5])
            raise EngineError(f"every SearXNG engine failed ({names})")
        hits = [
            RawHit(r.get("title"), r.get("url"), r.get("content"), None, r.get("publishedDate"))
            for r in results
            if isinstance(r, dict)
        ]
        summary = None
        for a in as_list(data.get("answers")):
            summary = first_str(a, as_dict(a).get("answer"))
            if summary:
                break
        return Parsed(hits, summary)


def _describe(entry: Any) -> str:
    if isinstance(entry, list) and entry:
        parts = [str(p) for p in entry[:2] if isinstance(p, str | int | float)]
        return clean_text(": ".join(parts), 60)
    return clean_text(entry, 60) or "?"
