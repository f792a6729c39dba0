"""Jina: search (`s.jina.ai`) as an engine, and the reader (`r.jina.ai`) as `read_page`, a small
function a web_fetch extractor can call. Search asks for SERP entries only (`X-Respond-With:
no-content`), so Jina does not crawl every hit. Jina has no recency filter."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx
import msgspec

from ..base import EngineError, Parsed, RawHit, SearchRequest, as_dict, first_str
from ..engine import ApiEngine, malformed
from ..fetch import Outgoing, fetch_json, status_error
from ..sanitize import clean_text, clean_url

READER_BASE_URL = "https://r.jina.ai"
READER_CHAR_CAP = 200_000


class JinaEngine(ApiEngine):
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


@dataclass(frozen=True, slots=True)
class Page:
    """A page as Jina's reader returned it: plain-text title, Markdown content (untrusted text)."""

    url: str
    title: str
    content: str
    published: str | None = None


async def read_page(
    client: httpx.AsyncClient, url: str, *, api_key: str | None = None, base_url: str = READER_BASE_URL,
    timeout: float = 20.0, proxy: str | None = None, char_cap: int = READER_CHAR_CAP,
) -> Page:
    """Fetch one URL through Jina's reader (Jina's servers fetch it, so the SSRF risk is theirs, but the
    content stays hostile text). Raises EngineError (no key in its message) when Jina fails."""
    target = clean_url(url)
    if target is None:
        raise EngineError("only absolute http(s) URLs can be read")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    out = Outgoing("POST", f"{base_url.rstrip('/')}/", headers, json={"url": target})
    secrets: Iterable[str | None] = (api_key,)
    data = await fetch_json(client, out, timeout=timeout, secrets=secrets, proxy=proxy)
    page = as_dict(as_dict(data).get("data"))
    content = page.get("content")
    if not isinstance(content, str):
        code = as_dict(data).get("code")
        if isinstance(code, int) and code != 200:
            raise status_error(code, msgspec.json.encode(data), secrets)
        raise malformed("Jina reader", "no content")
    return Page(
        url=clean_url(page.get("url")) or target,
        title=clean_text(page.get("title"), 300),
        content=clean_text(content, char_cap, multiline=True),
        published=clean_text(page.get("publishedTime"), 64) or None,
    )
