"""Ollama's hosted web search: `POST {base}/api/web_search` with a Bearer key (a free ollama.com
account's). No recency, locale or domain parameters: domains are filtered on our side."""

from __future__ import annotations

from typing import Any, ClassVar

from ...config.engine_kinds import EngineKind
from ..base import Parsed, RawHit, SearchRequest
from ..engine import ApiEngine, result_objects
from ..fetch import Outgoing


class OllamaEngine(ApiEngine):
    TYPE: ClassVar[str] = "ollama"  # webSearch.engines[].type
    KIND: ClassVar[EngineKind] = EngineKind()
    DEFAULT_BASE_URL = "https://ollama.com"
    MAX_COUNT = 10  # the API's maximum max_results

    def request(self, req: SearchRequest) -> Outgoing:
        body = self.options(query=req.query, max_results=min(req.count, self.MAX_COUNT))
        return self.post("/api/web_search", body)

    @staticmethod
    def parse(data: Any) -> Parsed:
        hits = [RawHit(r.get("title"), r.get("url"), r.get("content")) for r in result_objects(data, "Ollama")]
        return Parsed(hits)
