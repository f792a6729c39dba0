"""Qwen on Alibaba DashScope with built-in web search (`enable_search`, forced). By default the
native generation endpoint is used, because only it returns the sources
(`search_options.enable_source` -> `output.search_info.search_results`); `options.protocol:
"compatible"` uses the OpenAI-compatible endpoint instead, which answers with text only (its links
become the hits)."""

from __future__ import annotations

from typing import Any, ClassVar

from ...backends import openai_compat
from ...config.engine_kinds import EngineKind
from ...config.settings import Target
from ..base import Parsed, RawHit, SearchRequest, as_dict, as_list, first_str
from ..engine import malformed
from ..model import ModelEngine, cited_links

NATIVE_PATH = "/api/v1/services/aigc/text-generation/generation"
_SUFFIXES = ("/compatible-mode/v1", "/api/v1", "/v1")
# DashScope's freshness takes a number of days: 7, 30, 180 or 365 (no single day).
FRESHNESS = {"oneDay": 7, "oneWeek": 7, "oneMonth": 30, "oneYear": 365}


def api_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    for suffix in _SUFFIXES:
        root = root.removesuffix(suffix)
    return root


class DashscopeEngine(ModelEngine):
    PROVIDER_TYPE: ClassVar[str] = "dashscope"  # the type of the provider its providerKey names
    KIND: ClassVar[EngineKind] = EngineKind()

    @classmethod
    def build(cls, target: Target, req: SearchRequest, options: dict) -> tuple[str, dict[str, str], dict]:
        p = target.provider
        search: dict[str, Any] = {"forced_search": True}
        if isinstance(options.get("searchStrategy"), str):
            search["search_strategy"] = options["searchStrategy"]
        if req.recency in FRESHNESS:
            search["freshness"] = FRESHNESS[req.recency]
        if req.allowed_domains:
            search["assigned_site_list"] = list(req.allowed_domains)
        messages = [{"role": "user", "content": req.query}]
        if options.get("protocol") == "compatible":
            body = {"model": target.model, "messages": messages, "enable_search": True, "search_options": search,
                    "stream": False}
            return openai_compat.chat_url(p), openai_compat.headers(p), body
        search.update({"enable_source": True, "enable_citation": True, "citation_format": "[ref_<number>]"})
        body = {"model": target.model, "input": {"messages": messages},
                "parameters": {"result_format": "message", "enable_search": True, "search_options": search}}
        return api_root(p.base_url) + NATIVE_PATH, openai_compat.headers(p), body

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict):
            raise malformed("DashScope", "not a JSON object")
        output = data.get("output")
        if isinstance(output, dict):  # native
            choices = as_list(output.get("choices"))
            message = as_dict(as_dict(choices[0]).get("message")) if choices else {}
            text = first_str(message.get("content"), output.get("text"))
            info = as_dict(output.get("search_info"))
        elif isinstance(data.get("choices"), list):  # OpenAI-compatible
            choices = data["choices"]
            message = as_dict(as_dict(choices[0]).get("message")) if choices else {}
            text = first_str(message.get("content"))
            info = as_dict(data.get("search_info") or message.get("search_info"))  # not documented; if present
        else:
            raise malformed("DashScope", "neither output nor choices")
        hits = [
            RawHit(r.get("title"), r.get("url"), "", r.get("site_name"), None, _ref(r.get("index")))
            for r in as_list(info.get("search_results"))
            if isinstance(r, dict)
        ]
        return Parsed(hits or cited_links(text), text)


def _ref(index: Any) -> str | None:
    if isinstance(index, int) and not isinstance(index, bool):
        return f"ref_{index}"
    if isinstance(index, str) and index.strip().isdigit():
        return f"ref_{index.strip()}"
    return None
