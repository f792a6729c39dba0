"""Perplexity Sonar: chat completions whose answer comes with `search_results` (title, url, date,
snippet); the answer's [n] markers index them from 1."""

from __future__ import annotations

from typing import Any, ClassVar

from ...backends import openai_compat
from ...config.engine_kinds import EngineKind
from ...config.settings import Target
from ..base import Parsed, RawHit, SearchRequest, as_dict, as_list, first_str
from ..engine import malformed
from ..model import ModelEngine
from .perplexity import MAX_DOMAINS, RECENCY


class SonarEngine(ModelEngine):
    PROVIDER_TYPE: ClassVar[str] = "perplexity"  # the type of the provider its providerKey names
    KIND: ClassVar[EngineKind] = EngineKind()

    @classmethod
    def build(cls, target: Target, req: SearchRequest, options: dict) -> tuple[str, dict[str, str], dict]:
        body: dict[str, Any] = {
            "model": target.model,
            "messages": [{"role": "user", "content": req.query}],
            "stream": False,
        }
        if req.recency in RECENCY:
            body["search_recency_filter"] = RECENCY[req.recency]
        domains = list(req.allowed_domains) or [f"-{d}" for d in req.blocked_domains]
        if domains:
            body["search_domain_filter"] = domains[:MAX_DOMAINS]
        web: dict[str, Any] = {"search_context_size": options.get("searchContextSize", "low")}
        if req.country:
            web["user_location"] = {"country": req.country}
        body["web_search_options"] = web
        p = target.provider
        return openai_compat.chat_url(p), openai_compat.headers(p), body

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
            raise malformed("Sonar", "no choices")
        text = first_str(as_dict(as_dict(data["choices"][0]).get("message")).get("content"))
        results = as_list(data.get("search_results"))
        if results:
            hits = [RawHit(r.get("title"), r.get("url"), r.get("snippet"), None,
                           first_str(r.get("date"), r.get("last_updated")), str(i))
                    for i, r in enumerate(results, 1) if isinstance(r, dict)]
        else:  # the legacy list of URLs
            hits = [RawHit(None, u, "", None, None, str(i)) for i, u in enumerate(as_list(data.get("citations")), 1)]
        return Parsed(hits, text)
