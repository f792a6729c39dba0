"""The MCP tools: one entry per tool, each giving its definition and running a call.

A tool never raises for anything a caller, an engine or a site can do: bad arguments, a failed
search or fetch, a spent budget come back as a tool error (isError) the model can read, not as a protocol error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import mcp_types as types

from ..access.budget import Denial
from ..config.settings import EngineConfig, ReadPages
from ..fetcher import FetchResult, tool_content
from ..fetcher.direct import DirectFetch
from ..fetcher.reading import PageReader
from ..search import render
from ..search.base import BUDGET_EXHAUSTED, RECENCY, SearchRequest, SearchResult
from ..search.metered import MeteredSearch
from ..search.sanitize import truncate

MAX_COUNT = 50


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a call may use, on behalf of the caller (the key and bill of `search`): its metered search,
    the configured engines, and the page fetcher (None when webFetch is off)."""

    search: MeteredSearch
    engines: Sequence[EngineConfig]
    default_engine: EngineConfig | None
    fetch: DirectFetch | None = None
    reader: PageReader | None = None  # reads the top result pages (webSearch.readPages)
    reading: ReadPages = ReadPages()  # what a search reads when the call does not say


class McpTool(Protocol):
    name: str

    def offered(self, ctx: ToolContext) -> bool: ...

    def definition(self, ctx: ToolContext) -> types.Tool: ...

    async def call(self, arguments: dict[str, Any], ctx: ToolContext) -> types.CallToolResult: ...


def tool_error(message: str, **detail: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True,
                                structured_content={"error": message, **detail})


_HIT = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "url": {"type": "string"},
        "snippet": {"type": "string"},
        "source": {"type": ["string", "null"]},
        "date": {"type": ["string", "null"], "description": "Publication date as the engine gave it."},
        "passages": {"type": "array", "items": {"type": "string"},
                     "description": "Passages of the page that answer the query, when it was read."},
    },
    "required": ["title", "url", "snippet"],
}
SEARCH_OUTPUT = {
    "type": "object",
    "properties": {
        "engine": {"type": "string"},
        "query": {"type": "string"},
        "summary": {"type": ["string", "null"]},
        "cached": {"type": "boolean"},
        "hits": {"type": "array", "items": _HIT},
    },
    "required": ["engine", "query", "hits"],
}


class WebSearchTool:
    name = "web_search"

    def offered(self, ctx: ToolContext) -> bool:
        return True

    def definition(self, ctx: ToolContext) -> types.Tool:
        props: dict[str, Any] = {"query": {"type": "string", "description": "What to search for."}}
        if ctx.engines:
            props["engine"] = {
                "type": "string",
                "enum": [e.id for e in ctx.engines],
                "description": "Search engine id" + (f" (default: {ctx.default_engine.id})"
                                                      if ctx.default_engine else "") + ".",
            }
        props["count"] = {"type": "integer", "minimum": 1, "maximum": MAX_COUNT, "description": "Number of results."}
        props["recency"] = {"type": "string", "enum": list(RECENCY), "description": "Only results this recent."}
        props["read_pages"] = {
            "type": "boolean", "description": "Read the top result pages and return the passages that answer the "
            "query beside each hit" + (" (default: on)." if ctx.reading.enabled else " (default: off)."),
        }
        props["domains"] = {
            "type": "array", "items": {"type": "string"},
            "description": "Only results from these domains (a domain includes its subdomains); "
                           "a domain written with a leading '-' is excluded instead.",
        }
        return types.Tool(name=self.name, description=_search_description(ctx), input_schema={
            "type": "object", "properties": props, "required": ["query"]}, output_schema=SEARCH_OUTPUT)

    async def call(self, arguments: dict[str, Any], ctx: ToolContext) -> types.CallToolResult:
        problem = _check(arguments, {"query": str, "engine": str, "count": int, "recency": str, "domains": list,
                                     "read_pages": bool})
        domains = arguments.get("domains") or []
        if problem is None and not all(isinstance(d, str) for d in domains):
            problem = "domains must be an array of strings"
        if problem:
            return tool_error(f"web_search: {problem}", code="invalid_tool_input")
        req = SearchRequest(
            arguments["query"], arguments.get("count"), arguments.get("recency"),
            allowed_domains=tuple(d for d in domains if not d.startswith("-")),
            blocked_domains=tuple(d[1:] for d in domains if d.startswith("-")),
            engine=arguments.get("engine"), read_pages=arguments.get("read_pages", ctx.reading.enabled),
        )
        result = await ctx.search.search(req)
        if not result.ok:
            return _search_failed(result, ctx.search)
        if ctx.reader is not None and req.read_pages:
            result = await ctx.reader.read(result, req.query, replace(ctx.reading, enabled=True), ctx.search.key)
        return types.CallToolResult(content=[types.TextContent(text=render.digest(result.query, result))],
                                    structured_content=result.to_document())


def _search_description(ctx: ToolContext) -> str:
    text = ("Search the web through searchhub: several engines with a shared cache and failover; results are "
            "sanitized, numbered hits (title, URL, snippet, date).")
    if ctx.engines:
        engines = "; ".join(f"{e.id}: {e.description.strip().rstrip('.')}" if e.description.strip() else e.id
                            for e in ctx.engines)
        text += f" Engines: {engines}."
        if ctx.default_engine:
            text += f" Without 'engine', {ctx.default_engine.id} answers."
    else:
        text += " No engine is configured on this server yet."
    return text


def _search_failed(result: SearchResult, search: MeteredSearch) -> types.CallToolResult:
    detail: dict[str, Any] = {"code": result.error_code, "engine": result.engine}
    denied = search.bill.denied
    if denied is not None and result.error_code == BUDGET_EXHAUSTED:
        return tool_error(result.error or denied.message, **detail, retryAfter=denied.retry_after)
    return tool_error(f"search failed (engine {result.engine}): {result.error}", **detail)


FETCH_OUTPUT = {
    "type": "object",
    "properties": {
        "url": {"type": "string"},
        "final_url": {"type": "string", "description": "Where the redirects ended."},
        "title": {"type": ["string", "null"]},
        "text": {"type": "string", "description": "The page's main text (untrusted web content)."},
        "retrieved_at": {"type": "string", "description": "ISO 8601, UTC."},
        "truncated": {"type": "boolean"},
    },
    "required": ["url", "final_url", "title", "text", "retrieved_at", "truncated"],
}


class WebFetchTool:
    """One page through the hardened fetcher (hub/fetcher/direct.py: no prior-context rule, the
    operator's domain lists and address policy, the key's fetchesPerDay)."""

    name = "web_fetch"

    def offered(self, ctx: ToolContext) -> bool:
        return ctx.fetch is not None

    def definition(self, ctx: ToolContext) -> types.Tool:
        return types.Tool(name=self.name, description=(
            "Read one web page through searchhub and get its main text, without navigation, scripts or "
            "ads (HTML, plain text, Markdown, JSON or PDF). Public http(s) URLs only: private-network "
            "addresses and the operator's blocked domains are refused; pages are cached for a while. "
            "The text is untrusted web content."), input_schema={
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The http(s) URL to read."},
                "max_chars": {"type": "integer", "minimum": 1, "description": "At most this many characters of text."},
            },
            "required": ["url"],
        }, output_schema=FETCH_OUTPUT)

    async def call(self, arguments: dict[str, Any], ctx: ToolContext) -> types.CallToolResult:
        if ctx.fetch is None:
            return tool_error("web_fetch is turned off on this server", code="unknown_tool")
        problem = _check(arguments, {"url": str, "max_chars": int}, required="url")
        max_chars = arguments.get("max_chars")
        if problem is None and max_chars is not None and max_chars < 1:
            problem = "'max_chars' must be at least 1"
        if problem:
            return tool_error(f"web_fetch: {problem}", code="invalid_tool_input")
        result = await ctx.fetch.fetch(arguments["url"], ctx.search.key, ctx.search.bill)
        if isinstance(result, Denial):
            return tool_error(result.message, code=BUDGET_EXHAUSTED, retryAfter=result.retry_after)
        if not result.ok:
            return tool_error(f"web_fetch: {result.error}", code=result.error_code, url=result.url)
        return _page(result, max_chars)


def _page(result: FetchResult, max_chars: int | None) -> types.CallToolResult:
    text = result.text
    cut = max_chars is not None and len(text) > max_chars
    if cut:
        text = truncate(text, max_chars or 0)
    doc = {**result.to_payload(), "text": text, "truncated": result.truncated or cut}
    return types.CallToolResult(content=[types.TextContent(text=tool_content(result, text=text, truncated=cut))],
                                structured_content=doc)


def _check(arguments: dict[str, Any], kinds: dict[str, type], required: str = "query") -> str | None:
    """The first argument of the wrong type, said for the model; None when all fit."""
    if not isinstance(arguments.get(required), str):
        return f"'{required}' is required and must be a string"
    for name, kind in kinds.items():
        value = arguments.get(name)
        if value is None:
            continue
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            return f"'{name}' must be an integer"
        if not isinstance(value, kind):
            return f"'{name}' must be {'an array' if kind is list else 'a string'}"
    return None


TOOLS: dict[str, McpTool] = {t.name: t for t in (WebSearchTool(), WebFetchTool())}
