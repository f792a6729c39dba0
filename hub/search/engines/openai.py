"""OpenAI models that search: the Responses API with the `web_search` tool (the default), or a chat
search model (`gpt-5-search-api`, `gpt-4o-search-preview`, ...) through `web_search_options`.
`options.api` picks one ("responses" | "chat"); unset, a model whose name contains "search" uses chat.

Hits: cited URLs (`url_citation` annotations, with titles and the cited span of the answer as the
snippet), then with Responses the other consulted sources (`web_search_call.action.sources`)."""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ...backends import openai_compat
from ...config.engine_kinds import EngineKind
from ...config.settings import Target
from ..base import Parsed, RawHit, SearchRequest, as_dict, as_list, first_str
from ..engine import malformed
from ..model import ModelEngine, int_option

INSTRUCTION = "Search the web for: {query}\nAnswer briefly from what you find and cite the sources."


def strip_tracking(url: Any) -> Any:
    """OpenAI adds utm_source=openai to cited URLs; without it they match the sources."""
    if not isinstance(url, str) or "utm_source=openai" not in url:
        return url
    parts = urlsplit(url)
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                       if (k, v) != ("utm_source", "openai")])
    return urlunsplit(parts._replace(query=query))


def _location(req: SearchRequest) -> dict | None:
    return {"type": "approximate", "country": req.country} if req.country else None


class OpenAIEngine(ModelEngine):
    PROVIDER_TYPE: ClassVar[str] = "openai"  # the type of the provider its providerKey names
    KIND: ClassVar[EngineKind] = EngineKind()

    @classmethod
    def uses_chat(cls, target: Target, options: dict) -> bool:
        api = options.get("api")
        return api == "chat" if api in ("chat", "responses") else "search" in target.model

    @classmethod
    def build(cls, target: Target, req: SearchRequest, options: dict) -> tuple[str, dict[str, str], dict]:
        p = target.provider
        size = options.get("searchContextSize", "low")
        if cls.uses_chat(target, options):
            web: dict[str, Any] = {"search_context_size": size}
            if req.country:
                web["user_location"] = {"type": "approximate", "approximate": {"country": req.country}}
            body = {"model": target.model, "messages": [{"role": "user", "content": req.query}],
                    "web_search_options": web}
            return openai_compat.chat_url(p), openai_compat.headers(p), body
        tool: dict[str, Any] = {"type": "web_search", "search_context_size": size}
        if req.allowed_domains:
            tool["filters"] = {"allowed_domains": list(req.allowed_domains)}
        if (loc := _location(req)) is not None:
            tool["user_location"] = loc
        body = {
            "model": target.model,
            "input": INSTRUCTION.format(query=req.query),
            "tools": [tool],
            "tool_choice": "required",
            "include": ["web_search_call.action.sources"],
            "max_tool_calls": int_option(options, "maxToolCalls", 3, 20),
            "store": False,
        }
        return p.base_url + "/responses", openai_compat.headers(p), body

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict):
            raise malformed("OpenAI", "not a JSON object")
        if isinstance(data.get("output"), list):
            return _parse_responses(data["output"])
        if isinstance(data.get("choices"), list) and data["choices"]:
            message = as_dict(as_dict(data["choices"][0]).get("message"))
            text = first_str(message.get("content"))
            return Parsed(_cited(text, as_list(message.get("annotations")), nested=True), text)
        raise malformed("OpenAI", "neither output nor choices")


def _cited(text: str | None, annotations: list, *, nested: bool) -> list[RawHit]:
    """url_citation annotations -> hits; chat nests the fields under `url_citation`, Responses not."""
    hits = []
    for a in annotations:
        a = as_dict(a)
        if a.get("type") != "url_citation":
            continue
        c = as_dict(a.get("url_citation")) if nested else a
        start, end = c.get("start_index"), c.get("end_index")
        span = ""
        if text and isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text):
            span = text[start:end]
        hits.append(RawHit(c.get("title"), strip_tracking(c.get("url")), span))
    return hits


def _parse_responses(output: list) -> Parsed:
    texts: list[str] = []
    cited: list[RawHit] = []
    sources: list[RawHit] = []
    for item in output:
        item = as_dict(item)
        if item.get("type") == "web_search_call":
            for src in as_list(as_dict(item.get("action")).get("sources")):
                src = as_dict(src)
                if src.get("type", "url") == "url" and src.get("url"):  # "api" sources are not pages
                    sources.append(RawHit(None, strip_tracking(src.get("url")), ""))
        elif item.get("type") == "message":
            for part in as_list(item.get("content")):
                part = as_dict(part)
                if part.get("type") == "output_text" and isinstance(part.get("text"), str):
                    texts.append(part["text"])
                    cited += _cited(part["text"], as_list(part.get("annotations")), nested=False)
    return Parsed(cited + sources, "\n\n".join(texts) or None)
