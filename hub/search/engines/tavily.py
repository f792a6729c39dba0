"""Tavily: `POST {base}/search` with `Authorization: Bearer`; its answer is the summary."""

from __future__ import annotations

from typing import Any, ClassVar

from ...config.engine_kinds import EngineKind
from ..base import Parsed, RawHit, SearchRequest
from ..engine import ApiEngine, result_objects
from ..fetch import Outgoing
from ..locale import country_name

TIME_RANGE = {"oneDay": "day", "oneWeek": "week", "oneMonth": "month", "oneYear": "year"}


class TavilyEngine(ApiEngine):
    TYPE: ClassVar[str] = "tavily"  # webSearch.engines[].type
    KIND: ClassVar[EngineKind] = EngineKind()
    DEFAULT_BASE_URL = "https://api.tavily.com"
    MAX_COUNT = 20  # Tavily's own limit for `max_results`

    def request(self, req: SearchRequest) -> Outgoing:
        body = self.options(
            query=req.query,
            max_results=min(req.count, self.MAX_COUNT),
            search_depth=self.config.options.get("search_depth", "basic"),
            topic=self.config.options.get("topic", "general"),
            include_answer=self.config.options.get("include_answer", True),
            time_range=TIME_RANGE.get(req.recency or ""),
            include_domains=list(req.allowed_domains) or None,
            exclude_domains=list(req.blocked_domains) or None,
            # Tavily boosts a country only for the general topic, and names it in English.
            country=country_name(req.country) if self.config.options.get("topic", "general") == "general" else None,
        )
        return self.post("/search", body)

    @staticmethod
    def parse(data: Any) -> Parsed:
        hits = [
            RawHit(r.get("title"), r.get("url"), r.get("content"), None, r.get("published_date"))
            for r in result_objects(data, "Tavily")
        ]
        answer = data.get("answer")
        return Parsed(hits, answer if isinstance(answer, str) else None)
