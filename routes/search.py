"""POST /v1/search (searchhub's own search API) and POST /v1/search/open-webui (Open WebUI's "external"
web search contract): the configured engines, cache, failover and the caller's budget, without a model."""

from __future__ import annotations

import logging
from dataclasses import replace

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

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

from .common import caller, cancel_on_disconnect, expected_error, openai_error, read_json, runtime

log = logging.getLogger("searchhub.search")


class OpenWebUIBody(msgspec.Struct):
    """What Open WebUI's external web search engine posts: {"query", "count"}."""

    query: str
    count: int | None = None


async def search(request: Request) -> Response:
    try:
        rt = runtime(request)
        req = convert(await read_json(request, rt.config.server.max_body_bytes), SearchRequest,
                      what="search request")
        # off unless asked: webSearch.readPages says how. Watched from here on: a client that leaves
        # stops the engines' calls and the page reads
        reading = replace(rt.config.web_search.limits.read_pages, enabled=True) if req.read_pages else None
        result = await cancel_on_disconnect(request, searched(request, rt, req, reading))
        return JSONResponse({"object": "search.result", **result.to_document(), "cost": result.cost})
    except Exception as e:
        if not expected_error(e):
            log.exception("search failed")
        return openai_error(e)


async def open_webui_search(request: Request) -> Response:
    try:
        rt = runtime(request)
        body = convert(await read_json(request, rt.config.server.max_body_bytes), OpenWebUIBody,
                       what="search request")
        result = await cancel_on_disconnect(request, searched(request, rt, SearchRequest(body.query, body.count), None))
        return JSONResponse([{"link": h.url, "title": h.title, "snippet": h.snippet} for h in result.hits])
    except Exception as e:
        if not expected_error(e):
            log.exception("search failed")
        return openai_error(e)


async def searched(request: Request, rt, req: SearchRequest, reading: ReadPages | None) -> SearchResult:
    """The caller's search (its key's budget and bill), its result pages read as `reading` says (None:
    not at all); a failed search is its HTTP error. Shared with Ollama's /api/web_search."""
    key, bill = caller(request)
    result = await rt.metered(key, bill).search(req)
    if not result.ok:
        raise search_error(result, request)
    if reading is not None and rt.reader is not None:
        result = await rt.reader.read(result, req.query, reading, key)
    return result


def search_error(result: SearchResult, request: Request) -> GatewayError:
    """A failed search as an HTTP error: the caller's mistake 400, a spent budget 429, the engines' 502/503."""
    code = result.error_code
    message = result.error or "search failed"
    if code in (INVALID_TOOL_INPUT, QUERY_TOO_LONG):
        return BadRequest(message, code=code)
    if code == BUDGET_EXHAUSTED:
        _, bill = caller(request)
        retry = bill.denied.retry_after if bill.denied else 60
        return GatewayError(message, status=429, type="rate_limit_error", code=code,
                            headers={"retry-after": str(retry)})
    message = f"search failed (engine {result.engine}): {message}"
    if code == TOO_MANY_REQUESTS:
        return GatewayError(message, status=503, code="search_rate_limited", headers={"retry-after": "5"})
    return GatewayError(message, status=502, code="search_unavailable")


routes = [
    Route("/v1/search", search, methods=["POST"]),
    Route("/v1/search/open-webui", open_webui_search, methods=["POST"]),
]
