"""httpx's API over one aiohttp session, without per-request re-work; and the model relay's own
path straight onto that session.

httpx stays the client API for search engines, the fetcher and the CLI (requests and responses are
httpx objects, errors are httpx errors); aiohttp moves the bytes. Model calls (hub/upstream/http.py)
skip httpx altogether through `UpstreamClient.request_direct` and `Streamed`, on the same session
and the same proxy routing. Compared with the generic httpx-aiohttp transport this one caches the
aiohttp timeout objects and parsed URLs, keeps no cookies, and streams what arrives as it arrives
(bench/README.md has the measurements).

A request that meets a connection the upstream closed while it sat idle is sent again on a new one
(`_retry_stale`), and idle connections are dropped before common servers drop them (`KEEPALIVE_S`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable

import aiohttp
import httpx
from aiohttp.connector import Connection
from yarl import URL

from ..config.proxy import ProxyRoute, parse_proxy
from . import h1
from .proxy import ProxyPolicy, choose

_HTTP11 = {"http_version": b"HTTP/1.1"}
# A request's own proxy (a provider's or engine's `proxy` in engines.json, or "direct"), carried in
# httpx's request extensions; absent, the environment's proxy settings apply.
PROXY_EXTENSION = "searchhub.proxy"


class _Body(httpx.AsyncByteStream):
    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self._resp = resp

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._resp.content.iter_any():
                yield chunk
        except Exception as e:
            raise mapped_error(e) from e

    async def aclose(self) -> None:
        self._resp.release()


def mapped_error(e: Exception) -> Exception:
    """aiohttp's (or the lean client's, hub/backends/h1.py) exception as the httpx one the callers
    handle (the one place this mapping lives)."""
    if isinstance(e, h1.ConnectTimedOut):
        return httpx.ConnectTimeout(str(e))
    if isinstance(e, h1.ConnectFailed):
        return httpx.ConnectError(str(e))
    if isinstance(e, h1.ReadTimedOut):
        return httpx.ReadTimeout(str(e))
    if isinstance(e, h1.Disconnected | h1.BadResponse):
        return httpx.RemoteProtocolError(str(e))
    if isinstance(e, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(str(e) or "connect timeout")
    if isinstance(e, aiohttp.ClientConnectorError):
        return httpx.ConnectError(str(e) or "connect error")
    if isinstance(e, aiohttp.ServerTimeoutError | asyncio.TimeoutError):
        return httpx.ReadTimeout(str(e) or "read timeout")
    if isinstance(e, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return httpx.RemoteProtocolError(str(e) or "server disconnected")
    if isinstance(e, aiohttp.InvalidURL):
        return httpx.UnsupportedProtocol(str(e))
    if isinstance(e, aiohttp.ClientError | OSError):
        return httpx.NetworkError(str(e) or type(e).__name__)
    return e


# An idle pooled connection is dropped after this long: below the 5 s after which uvicorn (vLLM and
# most Python model servers) and Node close an idle connection, so we never reuse one the server is
# closing (our idle clock starts after theirs). undici picks 4 s for the same reason; httpx's 5 s
# equals the servers' and races them. Busy connections never idle out; a server or NAT that closes
# sooner is covered by `_retry_stale`. Idle connections are closed on a timer, with no further
# traffic needed: the lean client's (hub/backends/h1.py, `H1Client._sweep`) closes each one
# KEEPALIVE_S after its last answer; aiohttp's connectors (TLS, proxies) get it as
# `keepalive_timeout`, which aiohttp enforces with a sweep every KEEPALIVE_S, so there between
# KEEPALIVE_S and twice that. Read when a transport is made (a test may shorten it before).
KEEPALIVE_S = 4.0


# Marks set on aiohttp's own objects: a connection that answered a request, a request that was given
# such a connection, a request that must get a new one.
_SERVED, _REUSED, _FRESH = "_searchhub_served", "_searchhub_reused", "_searchhub_fresh"


class _Pool(aiohttp.TCPConnector):
    """aiohttp's pool, telling each request whether its connection already served one (aiohttp
    itself only says so to trace hooks, which cost objects on every request)."""

    async def connect(self, req: aiohttp.ClientRequest, traces: list, timeout: aiohttp.ClientTimeout) -> Connection:
        while True:
            conn = await super().connect(req, traces, timeout)
            proto = conn.protocol
            if proto is None:
                return conn
            reused = proto.__dict__.get(_SERVED, False)
            if reused and req.__dict__.get(_FRESH):
                conn.close()  # idle at least as long as the one that just failed
                continue
            if not reused:
                proto.__dict__[_SERVED] = True
            req.__dict__[_REUSED] = reused
            return conn


async def _retry_stale(req: aiohttp.ClientRequest, handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
    """A request that failed on a reused connection before the response's head arrived goes once
    more, on a new connection: the server closed the idle connection as the request went out (its
    keep-alive ran out), so it never started an answer. Go's net/http applies the same rule
    (`shouldRetryRequest`: a reused connection, nothing read back) to requests it may replay. A new
    connection's failure is the server's answer to this very request and is not repeated; nor is
    anything after the head (the relays see those errors), nor a timeout (the server may be working
    on it)."""
    try:
        return await handler(req)
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as e:
        if isinstance(e, aiohttp.ClientConnectorError) or not req.__dict__.get(_REUSED):
            raise
        if isinstance(e, aiohttp.ServerDisconnectedError) and not isinstance(e.message, str):
            raise  # it carries the response head that had arrived
    req.__dict__[_FRESH] = True
    return await handler(req)


class LeanAiohttpTransport(httpx.AsyncBaseTransport):
    def __init__(self, *, max_connections: int = 1000, keepalive_s: float | None = None,
                 proxies: ProxyPolicy | None = None) -> None:
        self._max_connections = max_connections
        self._keepalive_s = KEEPALIVE_S if keepalive_s is None else keepalive_s  # every pool's idle time
        self._session: aiohttp.ClientSession | None = None
        self._timeouts: dict[tuple, aiohttp.ClientTimeout] = {}
        self._urls: dict[str, URL] = {}
        self._proxies = proxies or ProxyPolicy()
        self._env_proxies = bool(self._proxies.http or self._proxies.https)
        self._routes: dict[tuple, ProxyRoute | None] = {}
        self._socks: dict[ProxyRoute, aiohttp.ClientSession] = {}
        # plain-HTTP requests without a proxy: the lean client (hub/backends/h1.py), unless turned off
        self._lean = os.environ.get(LEAN_ENV, "1").strip().lower() not in ("0", "false", "off", "no")
        self._h1: h1.H1Client | None = None
        self._targets: dict[str, h1.Target | None] = {}

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = _Pool(limit=self._max_connections, keepalive_timeout=self._keepalive_s, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(),
                                                  auto_decompress=True, middlewares=(_retry_stale,))
        return self._session

    @property
    def proxies(self) -> ProxyPolicy:
        return self._proxies

    def _h1_client(self) -> h1.H1Client:
        c = self._h1
        if c is None:
            c = self._h1 = h1.H1Client(max_connections=self._max_connections, keepalive_s=self._keepalive_s)
        return c

    def _lean_target(self, url: str | URL) -> h1.Target | None:
        """Where the lean client sends a request for this URL; None when aiohttp must (TLS, or the
        lean client turned off). Decided once per model endpoint URL."""
        if not self._lean:
            return None
        if not isinstance(url, str):
            return h1.Target.of(url)
        if url in self._targets:
            return self._targets[url]
        target = h1.Target.of(self._url(url))
        if len(self._targets) < 1024:
            self._targets[url] = target
        return target

    def _route(self, explicit: str | None, url: URL) -> ProxyRoute | None:
        """The proxy for this request, decided once per (configured proxy, scheme, host, port)."""
        if explicit is None and not self._env_proxies:
            return None
        key = (explicit, url.scheme, url.host, url.port)
        if key in self._routes:
            return self._routes[key]
        chosen = choose(explicit, self._proxies, url.scheme, url.host or "", url.port)
        route = parse_proxy(chosen) if chosen else None  # config validation vouched for the URL
        if len(self._routes) < 1024:
            self._routes[key] = route
        return route

    def _socks_session(self, route: ProxyRoute) -> aiohttp.ClientSession:
        """SOCKS needs its own connector (aiohttp speaks only HTTP proxies): one session per proxy."""
        session = self._socks.get(route)
        if session is None or session.closed:
            from aiohttp_socks import ProxyConnector, ProxyType

            connector = ProxyConnector(
                proxy_type=ProxyType.SOCKS5, host=route.host, port=route.port, username=route.username,
                password=route.password, rdns=route.scheme == "socks5h", limit=self._max_connections,
                keepalive_timeout=self._keepalive_s,
            )
            session = aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(),
                                            auto_decompress=True)
            self._socks[route] = session
        return session

    def timeout(self, ext: dict) -> aiohttp.ClientTimeout:
        """httpx's timeout extension (`httpx.Timeout.as_dict()`) as aiohttp's, built once per value."""
        key = (ext.get("connect"), ext.get("read"), ext.get("pool"))
        t = self._timeouts.get(key)
        if t is None:
            connect = key[0] if key[2] is None or key[0] is None else max(key[0], key[2])
            t = aiohttp.ClientTimeout(total=None, sock_connect=connect, sock_read=key[1])
            if len(self._timeouts) < 256:
                self._timeouts[key] = t
        return t

    def _url(self, url: httpx.URL | str) -> URL:
        s = str(url)
        u = self._urls.get(s)
        if u is None:
            u = URL(s, encoded=True)
            if len(self._urls) < 1024:
                self._urls[s] = u
        return u

    def _via(self, url: URL, explicit: str | None, headers: list[tuple[str, str]]) -> tuple[aiohttp.ClientSession, dict]:
        """The session and proxy arguments for one request (adds a plain request's proxy credentials
        to headers)."""
        route = self._route(explicit, url)
        if route is None:
            return self._get_session(), {}
        if route.socks:
            return self._socks_session(route), {}
        proxy: dict = {"proxy": route.url}
        auth = route.authorization
        if auth and url.scheme == "https":  # sent with the CONNECT that opens the tunnel
            proxy["proxy_headers"] = {"Proxy-Authorization": auth}
        elif auth:  # a plain request goes to the proxy itself
            headers.append(("Proxy-Authorization", auth))
        return self._get_session(), proxy

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeout = self.timeout(request.extensions.get("timeout") or {})
        url = self._url(request.url)
        headers = request.headers.multi_items()
        session, proxy = self._via(url, request.extensions.get(PROXY_EXTENSION), headers)
        try:
            resp = await session.request(
                request.method, url, data=request.content or None,
                headers=headers, timeout=timeout, allow_redirects=False,
                skip_auto_headers=("user-agent",), **proxy,
            )
        except Exception as e:
            raise mapped_error(e) from e
        return httpx.Response(resp.status, headers=resp.raw_headers, stream=_Body(resp), extensions=dict(_HTTP11),
                              request=request)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
        if self._h1 is not None:
            await self._h1.aclose()
        for session in self._socks.values():
            await session.close()


LEAN_ENV = "SEARCHHUB_LEAN_HTTP"  # "0": every upstream request over aiohttp (docs/deployment.md)
_LEAN_METHODS = frozenset({"GET", "POST"})


class UpstreamClient(httpx.AsyncClient):
    """An httpx client whose upstream calls can go straight to the transport."""

    def __init__(self, transport: LeanAiohttpTransport) -> None:
        super().__init__(transport=transport, timeout=None, follow_redirects=False)
        self.direct = transport

    @property
    def proxies(self) -> ProxyPolicy:
        """The environment's proxy settings this client was made with."""
        return self.direct.proxies

    def request_direct(self, url: str | URL, data: bytes | None, headers: dict[str, str],
                       timeout: aiohttp.ClientTimeout, proxy: str | None = None,
                       method: str = "POST") -> Awaitable[aiohttp.ClientResponse | h1.Response]:
        """A request without httpx objects: a plain-HTTP URL that no proxy applies to over the lean
        client (hub/backends/h1.py), anything else on the transport's aiohttp session (or its
        proxy's). Either answer offers `status`, `headers`, `read()`, `content.iter_any()` and
        `release()`; their own exceptions propagate (mapped to ours in hub/upstream/http.py and by
        `mapped_error`). A `str` URL is parsed once and kept (the model endpoints); pass a `URL` for
        one-off URLs. Returns the client's awaitable (no coroutine of its own: one frame less)."""
        t = self.direct
        u = t._url(url) if isinstance(url, str) else url
        no_proxy = proxy is None and not t._env_proxies  # the common case: no proxy anywhere
        if ((no_proxy or t._route(proxy, u) is None) and method in _LEAN_METHODS
                and (target := t._lean_target(url)) is not None):
            return t._h1_client().request(method, target, data, headers, timeout.sock_connect, timeout.sock_read)
        if no_proxy:
            session, via = t._get_session(), {}
        else:
            items = list(headers.items())
            session, via = t._via(u, proxy, items)
            headers = dict(items)
        return session.request(method, u, data=data, headers=headers, timeout=timeout,
                               allow_redirects=False, skip_auto_headers=("user-agent",), **via)


class Streamed:
    """An upstream answer from `request_direct` (aiohttp's or the lean client's), read as it arrives:
    `aiter_raw` and `aclose`, with httpx's errors (what the pass-through relays use)."""

    __slots__ = ("raw",)

    def __init__(self, raw: aiohttp.ClientResponse | h1.Response) -> None:
        self.raw = raw

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.raw.content.iter_any():
                yield chunk
        except Exception as e:
            raise mapped_error(e) from e

    async def aclose(self) -> None:
        self.raw.release()
