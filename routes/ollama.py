"""Ollama's web API: `POST /api/web_search` and `POST /api/web_fetch`, what the `ollama` client
libraries' `web_search()` and `web_fetch()` call (docs/mcp.md, "Ollama's web API"). HTTP only: the
shapes are hub/protocols/ollama.py.

Both spend the caller's key as /v1/search and the MCP tools do: the key's search budget, cost and the
search cache for a search (with the result pages read when webSearch.readPages is on), its
fetchesPerDay, the address policy (SSRF guard), the operator's domain lists and the page cache for a
fetch. Every error is Ollama's `{"error": "…"}` with its status: 400 a body that cannot be used, 401
a missing or wrong key (routes/app.py), 403 a URL that may not be fetched, 429 a spent budget (with
retry-after), 502/503 engines or sites that failed.
"""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from hub.access.budget import Denial
from hub.core.errors import GatewayError, NotFound
from hub.protocols import ollama

from .common import as_gateway_error, caller, cancel_on_disconnect, expected_error, read_json, runtime
from .search import searched

log = logging.getLogger("searchhub.ollama")
PREFIX = "/api/"


def is_ollama_path(path: str) -> bool:
    """Whether errors on this path are written in Ollama's shape (routes/app.py asks, for the 401 and
    the 404/405/500 it answers itself)."""
    return path.startswith(PREFIX)


def error_response(exc: Exception) -> Response:
    """Any failure as Ollama's `{"error": "…"}`, with the status and headers (retry-after) it carries."""
    err = as_gateway_error(exc)
    return JSONResponse(ollama.error(err.message), status_code=err.status, headers=dict(err.headers))


async def web_search(request: Request) -> Response:
    try:
        rt = runtime(request)
        req = ollama.search_request(await read_json(request, rt.config.server.max_body_bytes))
        # the pages are read as webSearch.readPages says (nothing when it is off)
        result = await cancel_on_disconnect(request, searched(request, rt, req, rt.config.web_search.limits.read_pages))
        return JSONResponse(ollama.search_results(result, req.count or ollama.MAX_RESULTS))
    except Exception as e:
        if not expected_error(e):
            log.exception("ollama web_search failed")
        return error_response(e)


async def web_fetch(request: Request) -> Response:
    try:
        rt = runtime(request)
        if rt.direct_fetch is None:
            raise NotFound("web_fetch is turned off on this server (webFetch.enabled)", code="web_fetch_off")
        url = ollama.fetch_url(await read_json(request, rt.config.server.max_body_bytes))
        key, bill = caller(request)
        result = await cancel_on_disconnect(request, rt.direct_fetch.fetch(url, key, bill))
        if isinstance(result, Denial):
            raise GatewayError(result.message, status=429, type="rate_limit_error", code="budget_exhausted",
                               headers={"retry-after": str(result.retry_after)})
        if not result.ok:
            status, message = ollama.fetch_failure(result)
            headers = {"retry-after": "5"} if status == 503 else {}
            return JSONResponse(ollama.error(message), status_code=status, headers=headers)
        return JSONResponse(ollama.page(result))
    except Exception as e:
        if not expected_error(e):
            log.exception("ollama web_fetch failed")
        return error_response(e)


routes = [
    Route("/api/web_search", web_search, methods=["POST"]),
    Route("/api/web_fetch", web_fetch, methods=["POST"]),
]
