"""Ollama's web API (`POST /api/web_search`, `POST /api/web_fetch`, what its client libraries'
`web_search()` and `web_fetch()` call): the request bodies read, a SearchResult and a FetchResult
written in Ollama's shapes, and the status and message of a failed fetch. Pure; the endpoints are
endpoints.py.

    POST /api/web_search {"query": "…", "max_results": 5}  -> {"results": [{"title", "url", "content"}]}
    POST /api/web_fetch  {"url": "…"}                     -> {"title", "content", "links": [...]}
    any error                                             -> {"error": "…"} with its HTTP status
"""

from __future__ import annotations

from hub.core.errors import BadRequest
from hub.fetcher.result import (
    INVALID_TOOL_INPUT,
    MAX_USES_EXCEEDED,
    TOO_MANY_REQUESTS,
    UNSUPPORTED_CONTENT_TYPE,
    URL_NOT_ALLOWED,
    URL_NOT_IN_PRIOR_CONTEXT,
    URL_TOO_LONG,
    FetchResult,
)
from hub.search.base import SearchRequest, SearchResult

DEFAULT_RESULTS = 5
MAX_RESULTS = 10  # more is asked for: this many are answered
PASSAGE_SEPARATOR = "\n\n"


def search_request(body: object) -> SearchRequest:
    """The body of POST /api/web_search as the search it asks for (`max_results` its count), or a
    BadRequest saying what is wrong with it. The engines' own checks (an empty or overlong query) come
    later, from the search itself."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    query = body.get("query")
    if not isinstance(query, str):
        raise BadRequest("'query' is required and must be a string")
    n = body.get("max_results")
    if n is None:
        n = DEFAULT_RESULTS
    elif isinstance(n, bool) or not isinstance(n, int):
        raise BadRequest("'max_results' must be an integer")
    elif n < 1:
        raise BadRequest("'max_results' must be at least 1")
    return SearchRequest(query, min(n, MAX_RESULTS))


def fetch_url(body: object) -> str:
    """The URL of a POST /api/web_fetch body, or a BadRequest. Whether it may be fetched is the
    fetcher's call (hub/fetcher/urls.py and the address policy)."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    url = body.get("url")
    if not isinstance(url, str) or not url.strip():
        raise BadRequest("'url' is required and must be a non-empty string")
    return url


def search_results(result: SearchResult, max_results: int = MAX_RESULTS) -> dict:
    """A successful search in Ollama's shape: each hit's `content` is the passages read from its
    page (hub/fetcher/reading.py) when there are any, else the engine's snippet."""
    return {"results": [
        {"title": hit.title, "url": hit.url,
         "content": PASSAGE_SEPARATOR.join(hit.passages) if hit.passages else hit.snippet}
        for hit in result.hits[:max_results]]}


def page(result: FetchResult) -> dict:
    """A fetched page in Ollama's shape: its title ("" when it has none), main text and links."""
    return {"title": result.title or "", "content": result.text, "links": list(result.links)}


# A fetch the fetcher refused or could not do -> the HTTP status it is answered with.
_FETCH_STATUS = {
    INVALID_TOOL_INPUT: 400,
    URL_TOO_LONG: 400,
    URL_NOT_ALLOWED: 403,  # a private address (the SSRF guard), a port or domain the operator did not allow
    URL_NOT_IN_PRIOR_CONTEXT: 403,
    UNSUPPORTED_CONTENT_TYPE: 422,
    TOO_MANY_REQUESTS: 503,  # the site is limiting us: try later
    MAX_USES_EXCEEDED: 429,
}


def fetch_failure(result: FetchResult) -> tuple[int, str]:
    """(status, message) for a failed fetch: the caller's URL 400, a URL that may not be fetched 403,
    a body that is not text 422, a site rate limiting 503, any other site failure 502."""
    status = _FETCH_STATUS.get(result.error_code or "", 502)
    return status, f"web fetch failed: {result.error or 'the page could not be read'}"


def error(message: str) -> dict:
    """An error body, as Ollama's API writes one."""
    return {"error": message}
