"""Zhipu GLM: chat completions with GLM's built-in `web_search` tool; the top-level `web_search`
array are the hits, the answer text the summary."""

from __future__ import annotations

from typing import Any, ClassVar

from ...backends import openai_compat
from ...config.engine_kinds import EngineKind
from ...config.settings import Target
from ..base import Parsed, RawHit, SearchRequest, as_dict, as_list
from ..engine import malformed
from ..locale import location_hint
from ..model import ModelEngine

DEFAULT_SEARCH_ENGINE = "search_std"
# engine options (camelCase in engines.json) -> GLM web_search fields
OPTION_FIELDS = {
    "searchEngine": "search_engine",
    "contentSize": "content_size",
    "searchPrompt": "search_prompt",
    "requireSearch": "require_search",
}


class GlmEngine(ModelEngine):
    PROVIDER_TYPE: ClassVar[str] = "glm"  # the type of the provider its providerKey names
    KIND: ClassVar[EngineKind] = EngineKind()
    MAX_COUNT = 50  # GLM's own limit for `count`

    @classmethod
    def build(cls, target: Target, req: SearchRequest, options: dict) -> tuple[str, dict[str, str], dict]:
        tool: dict[str, Any] = {
            "enable": True,
            "search_engine": DEFAULT_SEARCH_ENGINE,
            "search_result": True,  # without it GLM drops the result list
            "count": min(max(req.count, 1), cls.MAX_COUNT),
            "search_recency_filter": req.recency or "noLimit",
        }
        for option, name in OPTION_FIELDS.items():
            if option in options:
                tool[name] = options[option]
        if tool["search_engine"] == "search_pro_sogou":  # takes only 10, 20, ... 50; we cut the rest
            tool["count"] = min(-(-tool["count"] // 10) * 10, 50)
        if len(req.allowed_domains) == 1:  # GLM filters on one domain only
            tool["search_domain_filter"] = req.allowed_domains[0]
        messages = [{"role": "user", "content": req.query}]
        hint = location_hint(req.user_location)
        if hint:  # GLM's web_search has no location field: the model writes the search, so tell it
            messages.insert(0, {"role": "system", "content": hint})
        body = {
            "model": target.model,
            "messages": messages,
            "tools": [{"type": "web_search", "web_search": tool}],
            "stream": False,
        }
        p = target.provider
        return openai_compat.chat_url(p), openai_compat.headers(p), body

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict):
            raise malformed("GLM", "not a JSON object")
        choices = data.get("choices")
        if not isinstance(choices, list):
            raise malformed("GLM", "no choices")
        message = as_dict(as_dict(choices[0]).get("message")) if choices else {}
        content = message.get("content")
        hits = [
            RawHit(w.get("title"), w.get("link"), w.get("content"), w.get("media"), w.get("publish_date"),
                   w.get("refer"))
            for w in as_list(data.get("web_search"))
            if isinstance(w, dict)
        ]
        return Parsed(hits, content if isinstance(content, str) else None)
