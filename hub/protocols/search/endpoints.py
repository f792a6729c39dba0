"""POST /v1/search (searchhub's own search API) and POST /v1/search/open-webui (Open WebUI's "external"
web search contract): the configured engines, cache, failover and the caller's budget, without a model."""

from __future__ import annotations

from dataclasses import replace

import msgspec

from hub.config import ReadPages
from hub.core.errors import BadRequest, GatewayError
from hub.core.wire import convert
from hub.search.base import (
    BUDGET_EXHAUSTED,
    INVALID_TOOL_INPUT,
    QUERY_TOO_LONG,
    TOO_MANY_REQUESTS,
    SearchRequest,
    SearchResult,
)
from hub.search.metered import SearchBill

from ..chat.errors import openai_error
from ..serving import Answer, Call, Endpoint, ProtocolKind, Runtime


class OpenWebUIBody(msgspec.Struct):
    """What Open WebUI's external web search engine posts: {"query", "count"}."""

    query: str
    count: int | None = None


async def search(rt: Runtime, call: Call) -> Answer:
    req = convert(call.body, SearchRequest, what="search request")
    # off unless asked: webSearch.readPages says how
    reading = replace(rt.config.web_search.limits.read_pages, enabled=True) if req.read_pages else None
    result = await searched(rt, call, req, reading)
    return Answer({"object": "search.result", **result.to_document(), "cost": result.cost})


async def open_webui_search(rt: Runtime, call: Call) -> Answer:
    body = convert(call.body, OpenWebUIBody, what="search request")
    result = await searched(rt, call, SearchRequest(body.query, body.count), None)
    return Answer([{"link": h.url, "title": h.title, "snippet": h.snippet} for h in result.hits])


async def searched(rt: Runtime, call: Call, req: SearchRequest, reading: ReadPages | None) -> SearchResult:
    """The caller's search (its key's budget and bill), its result pages read as `reading` says (None:
    not at all); a failed search is its HTTP error. Shared with Ollama's /api/web_search."""
    key, bill = call.caller()
    result = await rt.metered(key, bill).search(req)
    if not result.ok:
        raise search_error(result, bill)
    if reading is not None and rt.reader is not None:
        result = await rt.reader.read(result, req.query, reading, key)
    return result


def search_error(result: SearchResult, bill: SearchBill) -> GatewayError:
    """A failed search as an HTTP error: the caller's mistake 400, a spent budget 429, the engines' 502/503."""
    code = result.error_code
    message = result.error or "search failed"
    if code in (INVALID_TOOL_INPUT, QUERY_TOO_LONG):
        return BadRequest(message, code=code)
    if code == BUDGET_EXHAUSTED:
        retry = bill.denied.retry_after if bill.denied else 60
        return GatewayError(message, status=429, type="rate_limit_error", code=code,
                            headers={"retry-after": str(retry)})
    message = f"search failed (engine {result.engine}): {message}"
    if code == TOO_MANY_REQUESTS:
        return GatewayError(message, status=503, code="search_rate_limited", headers={"retry-after": "5"})
    return GatewayError(message, status=502, code="search_unavailable")


PROTOCOL = ProtocolKind(
    name="search",
    endpoints=(
        Endpoint("POST", ("/v1/search",), search, "search"),
        Endpoint("POST", ("/v1/search/open-webui",), open_webui_search, "search"),
    ),
    error=openai_error,
)
