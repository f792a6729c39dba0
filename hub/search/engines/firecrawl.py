"""Firecrawl search (v2): `POST {base}/v2/search` with a Bearer key; web (and news) results. The v2
request schema is strict — unknown keys are a 400 — so only its own fields are sent."""

from __future__ import annotations

from typing import Any, ClassVar

from ...config.engine_kinds import EngineKind
from ..base import Parsed, RawHit, SearchRequest, as_dict, as_list, first_str
from ..engine import ApiEngine, malformed
from ..fetch import Outgoing

TBS = {"oneDay": "qdr:d", "oneWeek": "qdr:w", "oneMonth": "qdr:m", "oneYear": "qdr:y"}


class FirecrawlEngine(ApiEngine):
    TYPE: ClassVar[str] = "firecrawl"  # webSearch.engines[].type
    KIND: ClassVar[EngineKind] = EngineKind()
    DEFAULT_BASE_URL = "https://api.firecrawl.dev"
    MAX_COUNT = 100

    def request(self, req: SearchRequest) -> Outgoing:
        country = req.country
        body = self.options(
            query=req.query,
            limit=min(req.count, self.MAX_COUNT),
            tbs=TBS.get(req.recency or ""),
            country=country.lower() if country else None,
            # includeDomains and excludeDomains are mutually exclusive: blocked ones are then ours.
            includeDomains=list(req.allowed_domains) or None,
            excludeDomains=list(req.blocked_domains) if req.blocked_domains and not req.allowed_domains else None,
        )
        return self.post("/v2/search", body)

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict):
            raise malformed("Firecrawl", "not a JSON object")
        payload = data.get("data")
        if isinstance(payload, list):  # the v1 shape (a self-hosted v1 instance)
            groups = [payload]
        elif isinstance(payload, dict):
            groups = [as_list(payload.get("web")), as_list(payload.get("news"))]
        else:
            raise malformed("Firecrawl", "'data' is neither a list nor an object")
        hits = [
            RawHit(r.get("title"), r.get("url"), first_str(r.get("description"), r.get("snippet")), None, r.get("date"))
            for group in groups
            for r in group
            if isinstance(r, dict)
        ]
        if not hits and data.get("success") is False:
            raise malformed("Firecrawl", first_str(as_dict(data).get("error")) or "success is false")
        return Parsed(hits)
