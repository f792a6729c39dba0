"""Ollama's web API: `POST /api/web_search` and `POST /api/web_fetch`, what the `ollama` client
libraries' `web_search()` and `web_fetch()` call (docs/mcp.md, "Ollama's web API"). The shapes are
this folder's __init__.py.

Both spend the caller's key as /v1/search and the MCP tools do: the key's search budget, cost and the
search cache for a search (with the result pages read when webSearch.readPages is on), its
fetchesPerDay, the address policy (SSRF guard), the operator's domain lists and the page cache for a
fetch. Every error is Ollama's `{"error": "…"}` with its status: 400 a body that cannot be used, 401
a missing or wrong key (routes/app.py), 403 a URL that may not be fetched, 429 a spent budget (with
retry-after), 502/503 engines or sites that failed.
"""

from __future__ import annotations

from hub.access.budget import Denial
from hub.core.errors import GatewayError, NotFound

from ..errors import as_gateway_error
from ..search.endpoints import searched
from ..serving import Answer, Call, Endpoint, ProtocolKind, Runtime
from . import MAX_RESULTS, error, fetch_failure, fetch_url, page, search_request, search_results

PREFIX = "/api/"


def error_answer(exc: Exception, call: Call | None = None) -> Answer:
    """Any failure as Ollama's `{"error": "…"}`, with the status and headers (retry-after) it carries."""
    err = as_gateway_error(exc)
    return Answer(error(err.message), err.status, dict(err.headers))


async def web_search(rt: Runtime, call: Call) -> Answer:
    req = search_request(call.body)
    # the pages are read as webSearch.readPages says (nothing when it is off)
    result = await searched(rt, call, req, rt.config.web_search.limits.read_pages)
    return Answer(search_results(result, req.count or MAX_RESULTS))


async def web_fetch(rt: Runtime, call: Call) -> Answer:
    if rt.direct_fetch is None:
        raise NotFound("web_fetch is turned off on this server (webFetch.enabled)", code="web_fetch_off")
    url = fetch_url(call.body)
    key, bill = call.caller()
    result = await rt.direct_fetch.fetch(url, key, bill)
    if isinstance(result, Denial):
        raise GatewayError(result.message, status=429, type="rate_limit_error", code="budget_exhausted",
                           headers={"retry-after": str(result.retry_after)})
    if not result.ok:
        status, message = fetch_failure(result)
        return Answer(error(message), status, {"retry-after": "5"} if status == 503 else None)
    return Answer(page(result))


PROTOCOL = ProtocolKind(
    name="ollama",
    endpoints=(
        Endpoint("POST", ("/api/web_search",), web_search, "ollama web_search"),
        Endpoint("POST", ("/api/web_fetch",), web_fetch, "ollama web_fetch"),
    ),
    error=error_answer,
    prefixes=(PREFIX,),
)
