"""Perplexity Search API: `POST {base}/search` with a Bearer key; ranked results with snippets and
dates. (Perplexity's Sonar chat models are the `perplexity` model engine, sonar.py.)"""

from __future__ import annotations

from typing import Any, ClassVar

from ...config.engine_kinds import EngineKind
from ..base import Parsed, RawHit, SearchRequest
from ..engine import ApiEngine, result_objects
from ..fetch import Outgoing

RECENCY = {"oneDay": "day", "oneWeek": "week", "oneMonth": "month", "oneYear": "year"}
MAX_DOMAINS = 20


class PerplexityEngine(ApiEngine):
    TYPE: ClassVar[str] = "perplexity"  # webSearch.engines[].type
    KIND: ClassVar[EngineKind] = EngineKind()
    DEFAULT_BASE_URL = "https://api.perplexity.ai"
    MAX_COUNT = 20

    def request(self, req: SearchRequest) -> Outgoing:
        # One list: allowed domains, or blocked ones prefixed "-" (the API takes one or the other).
        domains = list(req.allowed_domains) or [f"-{d}" for d in req.blocked_domains]
        body = self.options(
            query=req.query,
            max_results=min(req.count, self.MAX_COUNT),
            search_recency_filter=RECENCY.get(req.recency or ""),
            country=req.country,
            search_domain_filter=domains[:MAX_DOMAINS] or None,
        )
        return self.post("/search", body)

    @staticmethod
    def parse(data: Any) -> Parsed:
        hits = [
            RawHit(r.get("title"), r.get("url"), r.get("snippet"), None, r.get("date") or r.get("last_updated"))
            for r in result_objects(data, "Perplexity")
        ]
        return Parsed(hits)
