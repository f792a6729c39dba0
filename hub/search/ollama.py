"""Ollama's hosted web search: `POST {base}/api/web_search` with a Bearer key (a free ollama.com
account's). No recency, locale or domain parameters: domains are filtered on our side."""

from __future__ import annotations

from typing import Any

from .base import Parsed, RawHit, SearchRequest
from .engine import ApiEngine, malformed
from .fetch import Outgoing


class OllamaEngine(ApiEngine):
    DEFAULT_BASE_URL = "https://ollama.com"
    MAX_COUNT = 10  # the API's maximum max_results

    def request(self, req: SearchRequest) -> Outgoing:
        body = self.options(query=req.query, max_results=min(req.count, self.MAX_COUNT))
        return Outgoing("POST", f"{self.base_url}/api/web_search",
                        self.bearer(), json=body)

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict) or not isinstance(data.get("results", []), list):
            raise malformed("Ollama", "'results' is not a list")
        hits = [RawHit(r.get("title"), r.get("url"), r.get("content")) for r in data.get("results", [])
                if isinstance(r, dict)]
        return Parsed(hits)
