"""Brave Search: `GET {base}/res/v1/web/search` with `X-Subscription-Token`."""

from __future__ import annotations

from typing import Any, ClassVar

from ...config.engine_kinds import EngineKind
from ..base import Parsed, RawHit, SearchRequest, as_dict, as_list, first_str
from ..engine import ApiEngine, malformed, result_objects, site_query
from ..fetch import Outgoing

FRESHNESS = {"oneDay": "pd", "oneWeek": "pw", "oneMonth": "pm", "oneYear": "py"}


class BraveEngine(ApiEngine):
    TYPE: ClassVar[str] = "brave"  # webSearch.engines[].type
    KIND: ClassVar[EngineKind] = EngineKind()
    DEFAULT_BASE_URL = "https://api.search.brave.com"
    MAX_COUNT = 20  # Brave's own limit for `count`

    def request(self, req: SearchRequest) -> Outgoing:
        params = self.options(
            q=site_query(req),
            count=min(req.count, self.MAX_COUNT),
            freshness=FRESHNESS.get(req.recency or ""),
            country=req.country,
        )
        headers = {"X-Subscription-Token": self.config.api_key or "", "Accept": "application/json"}
        return Outgoing("GET", f"{self.base_url}/res/v1/web/search", headers, params=params)

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict):
            raise malformed("Brave", "not a JSON object")
        hits = []
        for r in result_objects(data.get("web", {}), "Brave", what="'web.results' is not a list"):
            snippet = first_str(r.get("description"), *as_list(r.get("extra_snippets")))
            source = first_str(as_dict(r.get("profile")).get("name"), as_dict(r.get("meta_url")).get("hostname"))
            hits.append(RawHit(r.get("title"), r.get("url"), snippet, source, first_str(r.get("page_age"), r.get("age"))))
        return Parsed(hits)
