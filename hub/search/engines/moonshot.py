"""Kimi (Moonshot) with its builtin `$web_search`: Kimi asks for the search as a tool call, the client
echoes the call's arguments back unchanged as the tool result, and Kimi then searches server-side
and answers. It returns no structured sources: the links in its answer are the hits, so it is told
to list them."""

from __future__ import annotations

from typing import Any, ClassVar

from ...backends import openai_compat
from ...config.engine_kinds import EngineKind
from ...config.settings import Target
from ..base import EngineError, Parsed, SearchRequest, as_dict, as_list, first_str
from ..engine import malformed
from ..model import ModelEngine, Post, cited_links

TOOL = {"type": "builtin_function", "function": {"name": "$web_search"}}
INSTRUCTION = (
    "Search the web with $web_search for the user's query and answer briefly from what you find, "
    "not from memory. End with the sources you used, one per line, as Markdown links [title](url)."
)
MAX_ROUNDS = 4  # a turn may search several times; each round is one echo


class MoonshotEngine(ModelEngine):
    PROVIDER_TYPE: ClassVar[str] = "moonshot"  # the type of the provider its providerKey names
    KIND: ClassVar[EngineKind] = EngineKind()

    @classmethod
    def build(cls, target: Target, req: SearchRequest, options: dict) -> tuple[str, dict[str, str], dict]:
        body: dict[str, Any] = {
            "model": target.model,
            "messages": [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": req.query}],
            "tools": [TOOL],
            "stream": False,
        }
        if isinstance(options.get("thinking"), dict):  # e.g. {"type": "disabled"} for kimi-k2 thinking models
            body["thinking"] = options["thinking"]
        p = target.provider
        return openai_compat.chat_url(p), openai_compat.headers(p), body

    @classmethod
    async def exchange(cls, post: Post, target: Target, req: SearchRequest, options: dict) -> Parsed:
        url, headers, body = cls.build(target, req, options)
        searched = False
        for _ in range(MAX_ROUNDS + 1):
            data = await post(url, headers, body)
            choice = as_dict(as_list(as_dict(data).get("choices"))[0]) if as_list(as_dict(data).get("choices")) else {}
            message = as_dict(choice.get("message"))
            calls = [c for c in as_list(message.get("tool_calls"))
                     if as_dict(as_dict(c).get("function")).get("name") == "$web_search"]
            if choice.get("finish_reason") != "tool_calls" or not calls:
                if not searched:
                    raise EngineError("Kimi answered without searching")
                return cls.parse(data)
            searched = True
            echoes = [
                {"role": "tool", "tool_call_id": c.get("id"), "name": "$web_search",
                 "content": as_dict(c.get("function")).get("arguments") or ""}
                for c in calls
            ]
            body = {**body, "messages": [*body["messages"], message, *echoes]}
        raise EngineError(f"Kimi was still searching after {MAX_ROUNDS} rounds")

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
            raise malformed("Kimi", "no choices")
        text = first_str(as_dict(as_dict(data["choices"][0]).get("message")).get("content"))
        return Parsed(cited_links(text), text)
