"""Exa: `POST {base}/search` with `x-api-key`; recency as a start-published date."""

from __future__ import annotations

from typing import Any, ClassVar

from ...config.engine_kinds import EngineKind
from ..base import Parsed, RawHit, SearchRequest, as_list, first_str, recency_start
from ..engine import ApiEngine, result_objects
from ..fetch import Outgoing

TEXT_CHARS = 1000  # how much page text to ask for: the snippet when Exa sends no highlights


class ExaEngine(ApiEngine):
    TYPE: ClassVar[str] = "exa"  # webSearch.engines[].type
    KIND: ClassVar[EngineKind] = EngineKind()
    DEFAULT_BASE_URL = "https://api.exa.ai"
    MAX_COUNT = 50

    def request(self, req: SearchRequest) -> Outgoing:
        start = recency_start(req.recency)
        body = self.options(
            query=req.query,
            numResults=min(req.count, self.MAX_COUNT),
            type=self.config.options.get("type", "auto"),
            contents=self.config.options.get(
                "contents", {"text": {"maxCharacters": min(TEXT_CHARS, self.ctx.web_search.result_char_cap)}}
            ),
            startPublishedDate=start.strftime("%Y-%m-%dT%H:%M:%S.000Z") if start else None,
            # Exa takes one or the other; our own filter applies both anyway.
            includeDomains=list(req.allowed_domains) or None,
            excludeDomains=None if req.allowed_domains else list(req.blocked_domains) or None,
            userLocation=req.country,
        )
        return self.post("/search", body, {"x-api-key": self.config.api_key or ""})

    @staticmethod
    def parse(data: Any) -> Parsed:
        hits = []
        for r in result_objects(data, "Exa"):
            highlights = [h for h in as_list(r.get("highlights")) if isinstance(h, str)]
            snippet = " … ".join(highlights) if highlights else first_str(r.get("summary"), r.get("text"))
            hits.append(RawHit(r.get("title"), r.get("url"), snippet, None, r.get("publishedDate")))
        return Parsed(hits)
