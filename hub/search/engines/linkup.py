"""Linkup: `POST {base}/v1/search` with a Bearer key, `outputType: searchResults`. Linkup answers a
search with nothing found as HTTP 400 SEARCH_QUERY_NO_RESULT: that is no results, not an error."""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from ...config.engine_kinds import EngineKind
from ..base import (
    TOO_MANY_REQUESTS,
    UNAVAILABLE,
    EngineError,
    Parsed,
    RawHit,
    SearchRequest,
    as_dict,
    recency_start,
)
from ..engine import ApiEngine, malformed
from ..fetch import Outgoing, decode_answer, fetch, status_error

# Linkup's 429s: a rate limit, or money running out (another engine may have some).
_QUOTA_CODES = ("INSUFFICIENT_FUNDS_CREDITS", "EXCEED_BUDGET_LIMIT")


class LinkupEngine(ApiEngine):
    TYPE: ClassVar[str] = "linkup"  # webSearch.engines[].type
    KIND: ClassVar[EngineKind] = EngineKind()
    DEFAULT_BASE_URL = "https://api.linkup.so"
    MAX_COUNT = 50

    def request(self, req: SearchRequest) -> Outgoing:
        start = recency_start(req.recency)
        body = self.options(
            q=req.query,
            maxResults=min(req.count, self.MAX_COUNT),
            fromDate=start.date().isoformat() if start else None,
            includeDomains=list(req.allowed_domains) or None,
            excludeDomains=list(req.blocked_domains) or None,
        )
        body.setdefault("depth", "standard")
        body["outputType"] = "searchResults"  # the only output this engine reads
        return self.post("/v1/search", body)

    async def run(self, req: SearchRequest) -> Parsed:
        resp = await fetch(self.ctx.client, self.outgoing(req), timeout=self.timeout_s, proxy=self.config.proxy)
        if resp.status_code != 200:
            code = _error_code(resp.content)
            if resp.status_code == 400 and code == "SEARCH_QUERY_NO_RESULT":
                return Parsed([])
            err = status_error(resp.status_code, resp.content, self.secrets)
            if resp.status_code == 429 and code in _QUOTA_CODES:
                raise EngineError(err.message.replace("rate limited by", "out of credits at"), UNAVAILABLE,
                                  status=429) from None
            raise err if resp.status_code != 429 else EngineError(err.message, TOO_MANY_REQUESTS, status=429)
        return self.parse(decode_answer(resp.content))

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict) or not isinstance(data.get("results", []), list):
            raise malformed("Linkup", "'results' is not a list")
        hits = [
            RawHit(r.get("name"), r.get("url"), r.get("content"))
            for r in data.get("results", [])
            if isinstance(r, dict) and r.get("type", "text") == "text"
        ]
        return Parsed(hits)


def _error_code(body: bytes) -> str | None:
    try:
        code = as_dict(as_dict(msgspec.json.decode(body[:65536])).get("error")).get("code")
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    return code if isinstance(code, str) else None
