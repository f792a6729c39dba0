"""How an API engine's request moves: one HTTP call with a deadline, every failure an EngineError
whose message is short, readable by a model, and free of keys."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx
import msgspec
from yarl import URL

from ..core.redaction import redact
from ..upstream.transport import UpstreamClient, mapped_error
from .base import TOO_MANY_REQUESTS, UNAVAILABLE, EngineError
from .sanitize import clean_text, truncate

_decode = msgspec.json.decode
_encode = msgspec.json.encode
MESSAGE_CAP = 160  # characters of a provider's error message, as the model reads it
# The cap in force: `searchhub search` raises it for the person reading (hub/cli/search.py); a context
# variable, so it holds for that run's own tasks and nothing else.
message_cap: ContextVar[int] = ContextVar("message_cap", default=MESSAGE_CAP)


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One request to a search service, as its wire format wants it."""

    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    params: dict[str, Any] | None = None
    json: dict[str, Any] | None = None


async def fetch_json(
    client: httpx.AsyncClient, out: Outgoing, *, timeout: float, secrets: Iterable[str | None] = (),
    proxy: str | None = None,
) -> Any:
    resp = await fetch(client, out, timeout=timeout, proxy=proxy)
    if resp.status_code != 200:
        raise status_error(resp.status_code, resp.content, secrets)
    return decode_answer(resp.content)


def decode_answer(content: bytes) -> Any:
    """A search service's JSON answer; EngineError when it is not JSON. msgspec's strict decoding is
    the fast path, and refuses the whole document for one bad hit: a byte that is not UTF-8, or an
    escaped lone surrogate (`"\\ud800"`). Only then, the answer is decoded again with such bytes as
    U+FFFD, and with the json module, which keeps a lone surrogate as it is: the sanitizer then drops
    the hits whose URL carries either and cleans their text (hub/search/sanitize.py `bound`)."""
    try:
        return _decode(content)
    except (msgspec.DecodeError, UnicodeDecodeError):
        pass
    text = content.decode("utf-8", errors="replace")
    try:
        return _decode(text)
    except msgspec.DecodeError:
        pass
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise EngineError("the search service sent malformed JSON") from None


@dataclass(frozen=True, slots=True)
class Fetched:
    """A search service's answer, read whole."""

    status_code: int
    content: bytes


async def fetch(client: UpstreamClient, out: Outgoing, *, timeout: float, proxy: str | None = None,
                accept: str = "application/json") -> Fetched:
    """Send one request (through the engine's proxy, when it has one); transport failures become
    EngineErrors that name no host, proxy or key."""
    try:
        return await _direct(client, out, timeout, proxy, accept)
    except (httpx.ConnectError, httpx.ConnectTimeout):
        # The aiohttp transport reports a refused connection as ConnectTimeout.
        raise EngineError("cannot reach the search service (connection failed)") from None
    except httpx.TimeoutException:
        raise EngineError(f"the search service timed out after {timeout:g} s") from None
    except httpx.HTTPError as e:
        raise EngineError(f"cannot reach the search service ({type(e).__name__})") from None


def _payload(out: Outgoing, accept: str) -> tuple[dict[str, str], bytes | None]:
    """The request's headers (the engine's own values win; names are case-insensitive) and body."""
    headers = {"accept": accept, **{k.lower(): v for k, v in out.headers.items()}}
    if out.json is None:
        return headers, None
    headers.setdefault("content-type", "application/json")
    return headers, _encode(out.json)


async def _direct(client: UpstreamClient, out: Outgoing, timeout: float, proxy: str | None,
                  accept: str) -> Fetched:
    """The same request through `UpstreamClient.request_direct` (the lean client or aiohttp), without
    httpx's request and response objects (their URL parsing alone was a tenth of a search round's CPU; bench/README.md,
    "History"). The query is encoded by httpx's own rules, so the service sees the same bytes; it
    follows a query the URL already has (an engine's URL with one of its own), as httpx would."""
    headers, data = _payload(out, accept)
    url = with_query(out.url, query_string(out.params)) if out.params else out.url
    t = client.direct.timeout({"connect": timeout, "read": timeout, "pool": timeout})  # httpx.Timeout(timeout)'s
    try:
        resp = await client.request_direct(URL(url, encoded=True), data, headers, t, proxy, method=out.method)
        try:
            content = await resp.read()
        finally:
            resp.release()
    except Exception as e:
        raise mapped_error(e) from e
    return Fetched(resp.status, content)


def with_query(url: str, query: str) -> str:
    """`url` with `query` added: after its own query if it has one."""
    if not query:
        return url
    if "?" not in url:
        return f"{url}?{query}"
    return url + query if url.endswith(("?", "&")) else f"{url}&{query}"


def query_string(params: dict[str, Any]) -> str:
    """`str(httpx.QueryParams(params))` without building one: the same coercions (True -> "true",
    None -> "", a list or tuple as repeated keys) and the same encoding (tests/test_search_fetch.py
    pins the two together)."""
    items = []
    plain = True
    for k, v in params.items():
        for one in (v if isinstance(v, list | tuple) else (v,)):
            item = (str(k), "true" if one is True else "false" if one is False else "" if one is None else str(one))
            plain = plain and _PLAIN.fullmatch(item[0]) is not None and _PLAIN.fullmatch(item[1]) is not None
            items.append(item)
    if plain:  # what quote_plus leaves alone, but for the space it writes as '+'
        return "&".join(f"{k}={v}" for k, v in items).replace(" ", "+")
    return urlencode(items)


_PLAIN = re.compile(r"[A-Za-z0-9_.~ -]*")


def status_error(status: int, body: bytes | None, secrets: Iterable[str | None] = ()) -> EngineError:
    """A non-200 answer as an EngineError, with the provider's own short message when it has one."""
    if status == 429:
        what, code = "rate limited by the search service", TOO_MANY_REQUESTS
    elif status in (401, 403):
        what, code = "the search service refused the credentials", UNAVAILABLE
    elif status in (402, 432, 433):
        what, code = "the search service's quota or plan limit is reached", UNAVAILABLE
    elif status >= 500:
        what, code = "the search service failed", UNAVAILABLE
    else:
        what, code = "the search service rejected the request", UNAVAILABLE
    detail = upstream_message(body, secrets)
    return EngineError(f"{what} (HTTP {status}{': ' + detail if detail else ''})", code, status=status)


def upstream_message(body: bytes | None, secrets: Iterable[str | None] = ()) -> str | None:
    """The human part of an error body (Serper message, Brave error.detail, Exa error, Tavily
    detail.error, GLM/Gemini error.message), redacted and capped."""
    if not body:
        return None
    try:
        data = decode_answer(body[:65536])
    except EngineError:
        return None
    msg = _find_message(data)
    if not msg:
        return None
    # Redact before cutting, so that a key cut in half at the cap cannot leak its first half.
    text = redact(clean_text(redact(msg, secrets), 4000), secrets)
    return truncate(text, message_cap.get()) or None


def _find_message(data: Any, depth: int = 0) -> str | None:
    if isinstance(data, str):
        return data
    if not isinstance(data, dict) or depth > 2:
        return None
    for key in ("message", "detail", "error", "msg"):
        found = _find_message(data.get(key), depth + 1)
        if found:
            return found
    return None


