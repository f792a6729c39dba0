"""Jina: search (`s.jina.ai`) as an engine. Search asks for SERP entries only (`X-Respond-With:
no-content`), so Jina does not crawl every hit. Jina has no recency filter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ...config.engine_kinds import EngineKind
from ..base import Parsed, RawHit, SearchRequest, first_str
from ..engine import ApiEngine, malformed
from ..fetch import Outgoing


def _index(options: Mapping[str, Any]) -> str | None:
    """The index `options.provider` (or `engine`) chooses: Google's or Bing's, else Jina's own mix."""
    engine = options.get("provider") or options.get("engine")
    return engine if isinstance(engine, str) and engine in ("google", "bing") else None


class JinaEngine(ApiEngine):
    TYPE: ClassVar[str] = "jina"  # webSearch.engines[].type
    KIND: ClassVar[EngineKind] = EngineKind(index_of=_index)
    DEFAULT_BASE_URL = "https://s.jina.ai"
    MAX_COUNT = 20

    def request(self, req: SearchRequest) -> Outgoing:
        country = req.country
        params = self.options(q=req.query, num=min(req.count, self.MAX_COUNT),
                              gl=country.lower() if country else None)
        headers = {**self.bearer(), "X-Respond-With": "no-content"}
        if req.allowed_domains:
            headers["X-Site"] = ", ".join(req.allowed_domains)
        return Outgoing("GET", f"{self.base_url}/", headers, params=params)

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict):
            raise malformed("Jina", "not a JSON object")
        items = data.get("data")
        if items is None:
            items = []
        if not isinstance(items, list):
            raise malformed("Jina", "'data' is not a list")
        hits = [
            RawHit(d.get("title"), d.get("url"), first_str(d.get("description"), d.get("content")), None, d.get("date"))
            for d in items
            if isinstance(d, dict)
        ]
        return Parsed(hits)


