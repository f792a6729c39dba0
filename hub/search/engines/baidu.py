"""Baidu Qianfan AI Search (百度搜索): `POST {base}/v2/ai_search/web_search` with a Bearer key; the
query is the last user message; hits under `references`. Errors may come with HTTP 200 and a code."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import msgspec

from ...config.engine_kinds import EngineKind
from ..base import (
    TOO_MANY_REQUESTS,
    EngineError,
    Parsed,
    RawHit,
    SearchRequest,
    as_list,
    first_str,
    recency_start,
)
from ..engine import ApiEngine, malformed
from ..fetch import Outgoing, fetch_json, status_error

QUERY_UNITS = 72  # the API's query limit; a CJK or full-width character counts 2
# Baidu has no one-day window: oneDay asks for a week and drops dated hits older than a day here.
RECENCY = {"oneDay": "week", "oneWeek": "week", "oneMonth": "month", "oneYear": "year"}
_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?")


def truncate_units(query: str, units: int = QUERY_UNITS) -> str:
    """The longest prefix of the query within Baidu's length units."""
    used = 0
    for i, ch in enumerate(query):
        used += 2 if _wide(ch) else 1
        if used > units:
            return query[:i].rstrip()
    return query


def _wide(ch: str) -> bool:
    o = ord(ch)
    return o >= 0x1100 and (o <= 0x115F or 0x2E80 <= o <= 0xA4CF or 0xAC00 <= o <= 0xD7A3 or 0xF900 <= o <= 0xFAFF
                            or 0xFE30 <= o <= 0xFE4F or 0xFF00 <= o <= 0xFF60 or 0xFFE0 <= o <= 0xFFE6
                            or 0x20000 <= o <= 0x3FFFD)


def parse_date(value: Any) -> datetime | None:
    """Baidu's dates ("2025-4-24", "2025-04-27 18:02:00", "2025-05-20 11:58"), read as UTC+8."""
    m = _DATE.search(value) if isinstance(value, str) else None
    if m is None:
        return None
    y, mo, d, h, mi, s = (int(x) if x else 0 for x in m.groups())
    try:
        return datetime(y, mo, d, h, mi, s, tzinfo=UTC) - timedelta(hours=8)
    except (ValueError, OverflowError):  # not a date, or before 0001-01-01 08:00 (UTC+8)
        return None


class BaiduEngine(ApiEngine):
    TYPE: ClassVar[str] = "baidu"  # webSearch.engines[].type
    KIND: ClassVar[EngineKind] = EngineKind(index="baidu")
    DEFAULT_BASE_URL = "https://qianfan.baidubce.com"
    MAX_COUNT = 50

    def request(self, req: SearchRequest) -> Outgoing:
        body = self.options(
            messages=[{"role": "user", "content": truncate_units(req.query)}],
            resource_type_filter=[{"type": "web", "top_k": min(req.count, self.MAX_COUNT)}],
            search_recency_filter=RECENCY.get(req.recency or ""),
            search_filter={"match": {"site": list(req.allowed_domains)}} if req.allowed_domains else None,
        )
        body.setdefault("search_source", "baidu_search_v2")
        return self.post("/v2/ai_search/web_search", body)

    async def run(self, req: SearchRequest) -> Parsed:
        data = await fetch_json(self.ctx.client, self.outgoing(req), timeout=self.timeout_s, secrets=self.secrets,
                                proxy=self.config.proxy)
        parsed = self.parse(data)
        start = recency_start(req.recency) if req.recency == "oneDay" else None
        if start is not None:
            kept = [h for h in parsed.hits if (t := parse_date(h.published)) is None or t >= start]
            parsed = Parsed(kept, parsed.summary)
        return parsed

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict):
            raise malformed("Baidu", "not a JSON object")
        code = data.get("code")
        if code not in (None, 0, "0", ""):
            message = first_str(data.get("message")) or ""
            if "RATE_LIMIT" in str(code).upper() or "qps" in message.lower():
                raise EngineError(f"rate limited by the search service ({str(code)[:40]})", TOO_MANY_REQUESTS)
            raise status_error(502, msgspec.json.encode({"message": f"{str(code)[:40]}: {message}"}))
        refs = data.get("references", [])
        if not isinstance(refs, list):
            raise malformed("Baidu", "'references' is not a list")
        hits = [
            RawHit(first_str(r.get("title"), r.get("web_anchor")), r.get("url"),
                   first_str(r.get("content"), r.get("snippet")), r.get("website"), r.get("date"))
            for r in as_list(refs)
            if isinstance(r, dict) and r.get("type", "web") == "web"
        ]
        return Parsed(hits)
