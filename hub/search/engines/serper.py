"""Serper: Google results over `POST {base}/search` with `X-API-KEY`."""

from __future__ import annotations

from typing import Any, ClassVar

from ...config.engine_kinds import EngineKind
from ..base import Parsed, RawHit, SearchRequest, as_dict, first_str
from ..engine import ApiEngine, malformed, site_query
from ..fetch import Outgoing

TBS = {"oneDay": "qdr:d", "oneWeek": "qdr:w", "oneMonth": "qdr:m", "oneYear": "qdr:y"}


class SerperEngine(ApiEngine):
    TYPE: ClassVar[str] = "serper"  # webSearch.engines[].type
    KIND: ClassVar[EngineKind] = EngineKind(index="google")
    DEFAULT_BASE_URL = "https://google.serper.dev"
    MAX_COUNT = 50

    def request(self, req: SearchRequest) -> Outgoing:
        country = req.country
        body = self.options(
            q=site_query(req),
            num=min(req.count, self.MAX_COUNT),
            tbs=TBS.get(req.recency or ""),
            gl=country.lower() if country else None,
        )
        return self.post("/search", body, {"X-API-KEY": self.config.api_key or ""})

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict):
            raise malformed("Serper", "not a JSON object")
        organic = data.get("organic", [])
        if not isinstance(organic, list):
            raise malformed("Serper", "'organic' is not a list")
        box = as_dict(data.get("answerBox"))
        graph = as_dict(data.get("knowledgeGraph"))
        answer = first_str(box.get("answer"), box.get("snippet"))
        hits = [
            RawHit(o.get("title"), o.get("link"), o.get("snippet"), None, o.get("date"))
            for o in organic
            if isinstance(o, dict)
        ]
        if box.get("link"):  # usually one of the organic pages already; the answer is the summary
            hits.append(RawHit(box.get("title"), box.get("link"), answer))
        return Parsed(hits, answer or first_str(graph.get("description")))
