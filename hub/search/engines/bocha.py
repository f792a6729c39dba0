"""Bocha (博查) Web Search: `POST {base}/v1/web-search` with a Bearer key; a Bing-shaped page of
results inside Bocha's own envelope. Chinese-first index, no locale parameter."""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from ...config.engine_kinds import EngineKind
from ..base import EngineError, Parsed, RawHit, SearchRequest, as_dict, as_list, first_str
from ..engine import ApiEngine, malformed
from ..fetch import Outgoing, fetch_json, status_error


class BochaEngine(ApiEngine):
    TYPE: ClassVar[str] = "bocha"  # webSearch.engines[].type
    KIND: ClassVar[EngineKind] = EngineKind()
    DEFAULT_BASE_URL = "https://api.bochaai.com"
    MAX_COUNT = 50

    def request(self, req: SearchRequest) -> Outgoing:
        body = self.options(
            query=req.query,
            count=min(req.count, self.MAX_COUNT),
            # Bocha's freshness values are our recency names; it recommends noLimit (it narrows by
            # itself), so only an asked-for recency is sent.
            freshness=req.recency,
            include="|".join(req.allowed_domains) or None,
            exclude="|".join(req.blocked_domains) or None,
        )
        body.setdefault("summary", True)  # the longer text, used when the snippet is short
        return self.post("/v1/web-search", body)

    async def run(self, req: SearchRequest) -> Parsed:
        try:
            data = await fetch_json(self.ctx.client, self.outgoing(req), timeout=self.timeout_s,
                                    secrets=self.secrets, proxy=self.config.proxy)
        except EngineError as e:
            if e.status == 403:  # Bocha's 403 is an exhausted balance, not a bad key
                raise EngineError(e.message.replace("refused the credentials", "has no balance left"), e.code,
                                  status=403) from None
            raise
        return self.parse(data)

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict):
            raise malformed("Bocha", "not a JSON object")
        code = data.get("code")
        if code not in (None, 200, "200"):  # an error inside a 200 answer
            status = int(code) if isinstance(code, int | str) and str(code).isdigit() else 502
            raise status_error(status, _message_body(data))
        pages = as_dict(as_dict(data.get("data")).get("webPages"))
        values = pages.get("value", [])
        if not isinstance(values, list):
            raise malformed("Bocha", "'webPages.value' is not a list")
        hits = [
            RawHit(v.get("name"), v.get("url"), _snippet(v), v.get("siteName"),
                   first_str(v.get("datePublished"), v.get("dateLastCrawled")))
            for v in as_list(values)
            if isinstance(v, dict)
        ]
        return Parsed(hits)


def _snippet(v: dict) -> Any:
    snippet, summary = v.get("snippet"), v.get("summary")
    if isinstance(summary, str) and (not isinstance(snippet, str) or len(summary) > len(snippet)):
        return summary
    return snippet


def _message_body(data: dict) -> bytes:
    return msgspec.json.encode({"message": data.get("msg") or data.get("message")})
