"""Zhipu's standalone Web Search API: `POST {base}/web_search` with a Bearer key — one HTTP call, no
chat tokens (the `glm` model engine is the chat-tool path). Hits under `search_result`."""

from __future__ import annotations

from typing import Any, ClassVar

from ...config.engine_kinds import EngineKind
from ..base import Parsed, RawHit, SearchRequest, as_list
from ..engine import ApiEngine, malformed
from ..fetch import Outgoing

QUERY_CHARS = 70  # the API's limit on search_query
DEFAULT_SEARCH_ENGINE = "search_std"


class ZhipuEngine(ApiEngine):
    TYPE: ClassVar[str] = "zhipu"  # webSearch.engines[].type
    KIND: ClassVar[EngineKind] = EngineKind()
    DEFAULT_BASE_URL = "https://open.bigmodel.cn/api/paas/v4"
    MAX_COUNT = 50

    def request(self, req: SearchRequest) -> Outgoing:
        body = self.options(
            search_query=req.query[:QUERY_CHARS],
            count=min(req.count, self.MAX_COUNT),
            search_recency_filter=req.recency or "noLimit",
            # The API filters on one domain; more are applied on our side.
            search_domain_filter=req.allowed_domains[0] if len(req.allowed_domains) == 1 else None,
        )
        body.setdefault("search_engine", DEFAULT_SEARCH_ENGINE)
        if body["search_engine"] == "search_pro_sogou":  # takes only 10, 20, ... 50; we cut the rest
            body["count"] = min(-(-body["count"] // 10) * 10, 50)
        return self.post("/web_search", body)

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict):
            raise malformed("Zhipu", "not a JSON object")
        results = data.get("search_result", [])
        if isinstance(results, dict):  # the SDKs type it as one object; the API sends a list
            results = [results]
        if not isinstance(results, list):
            raise malformed("Zhipu", "'search_result' is not a list")
        hits = [
            RawHit(r.get("title"), r.get("link"), r.get("content"), r.get("media"), r.get("publish_date"))
            for r in as_list(results)
            if isinstance(r, dict)
        ]
        return Parsed(hits)
