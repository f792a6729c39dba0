"""Claude with Anthropic's server-side `web_search_20250305` tool through the Messages API, the tool
forced for one search. Hits come from the `web_search_tool_result` blocks (url, title, page_age);
a hit's snippet is the text Claude cited from it (`web_search_result_location.cited_text`)."""

from __future__ import annotations

from typing import Any, ClassVar

from ...config.engine_kinds import EngineKind
from ...config.settings import Target
from ..base import (
    TOO_MANY_REQUESTS,
    UNAVAILABLE,
    EngineError,
    Parsed,
    RawHit,
    SearchRequest,
    as_dict,
    as_list,
)
from ..engine import malformed
from ..model import ModelEngine, int_option

ANTHROPIC_VERSION = "2023-06-01"
INSTRUCTION = "Search the web for: {query}\nReply with a short summary of what you find."


class AnthropicEngine(ModelEngine):
    PROVIDER_TYPE: ClassVar[str] = "anthropic"  # the type of the provider its providerKey names
    KIND: ClassVar[EngineKind] = EngineKind()

    @classmethod
    def build(cls, target: Target, req: SearchRequest, options: dict) -> tuple[str, dict[str, str], dict]:
        tool: dict[str, Any] = {"type": "web_search_20250305", "name": "web_search",
                                "max_uses": int_option(options, "maxUses", 1, 10)}
        if req.allowed_domains:  # allowed and blocked are mutually exclusive: blocked ones are then ours
            tool["allowed_domains"] = list(req.allowed_domains)
        elif req.blocked_domains:
            tool["blocked_domains"] = list(req.blocked_domains)
        if req.country:
            tool["user_location"] = {"type": "approximate", "country": req.country}
        body = {
            "model": target.model,
            "max_tokens": int_option(options, "maxTokens", 1024, 64000),
            "messages": [{"role": "user", "content": INSTRUCTION.format(query=req.query)}],
            "tools": [tool],
            "tool_choice": {"type": "tool", "name": "web_search"},
        }
        p = target.provider
        base = p.base_url.removesuffix("/v1")
        headers = {"content-type": "application/json", "accept": "application/json",
                   "anthropic-version": ANTHROPIC_VERSION}
        if p.api_key:
            headers["x-api-key"] = p.api_key
        headers.update(p.headers)
        return base + "/v1/messages", headers, body

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict) or not isinstance(data.get("content"), list):
            raise malformed("Anthropic", "no content blocks")
        hits: list[RawHit] = []
        cited: dict[str, list[str]] = {}
        texts: list[str] = []
        error: str | None = None
        for block in data["content"]:
            block = as_dict(block)
            kind = block.get("type")
            if kind == "web_search_tool_result":
                content = block.get("content")
                if isinstance(content, dict):  # web_search_tool_result_error, with HTTP 200
                    error = content.get("error_code") if isinstance(content.get("error_code"), str) else "unavailable"
                    continue
                for r in as_list(content):
                    r = as_dict(r)
                    if r.get("type") == "web_search_result":
                        hits.append(RawHit(r.get("title"), r.get("url"), "", None, r.get("page_age")))
            elif kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
                for c in as_list(block.get("citations")):
                    c = as_dict(c)
                    if c.get("type") == "web_search_result_location" and isinstance(c.get("cited_text"), str):
                        cited.setdefault(c.get("url"), []).append(c["cited_text"])
        if not hits and error is not None:
            code = TOO_MANY_REQUESTS if error == "too_many_requests" else UNAVAILABLE
            raise EngineError(f"Claude's web search failed ({error[:40]})", code)
        hits = [h._replace(snippet=" … ".join(dict.fromkeys(cited.get(h.url, ())))) for h in hits]
        return Parsed(hits, "".join(texts).strip() or None)
