"""The only way the fetcher opens a socket: resolve the host once, refuse unless every address it
resolves to is allowed, then connect to one of those checked addresses.

The check lives in httpcore's network backend, under the connection pool, so it holds for every
connection the fetcher makes: the first request, each redirect hop, IP literals, pooled
reconnects. httpcore still does TLS with the URL's host name (SNI and certificate verification)
and httpx still sends the original Host header, while the TCP connection goes to the address that
was checked: a DNS answer that changes between check and connect (rebinding) has nothing to hit."""

from __future__ import annotations

import asyncio
import socket
import ssl
import typing
from collections.abc import AsyncIterator, Iterable
from typing import Protocol

import httpcore
import httpx

from .addresses import IP, AddressPolicy, parse_ip


class Resolver(Protocol):
    """Host name -> the addresses to connect to. Passed in, so tests can point names anywhere."""

    async def resolve(self, host: str, port: int) -> list[str]: ...


class SystemResolver:
    """The operating system's resolver (getaddrinfo), off the event loop."""

    async def resolve(self, host: str, port: int) -> list[str]:
        infos = await asyncio.get_running_loop().getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
        return list(dict.fromkeys(str(info[4][0]) for info in infos))


class AddressRefused(httpcore.ConnectError):
    """The host resolves to an address the policy forbids. reason: the address class ('local',
    'private', 'special', 'never'); the message names no address (it may reach a model)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the host resolves to a {reason} address")
        self.reason = reason


class Unresolvable(httpcore.ConnectError):
    pass


class GuardedBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, policy: AddressPolicy, resolver: Resolver,
                 inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.policy = policy
        self.resolver = resolver
        self.inner = inner or httpcore.AnyIOBackend()

    async def checked_addresses(self, host: str, port: int) -> list[IP]:
        literal = parse_ip(host)
        if literal is not None:
            addrs: list[IP] = [literal]
        else:
            try:
                answers = await self.resolver.resolve(host, port)
            except (OSError, UnicodeError) as e:
                raise Unresolvable(f"cannot resolve the host ({type(e).__name__})") from None
            parsed = [parse_ip(a) for a in answers]
            if any(a is None for a in parsed):
                raise AddressRefused("special")  # a resolver answer that is no address
            addrs = [a for a in parsed if a is not None]
        if not addrs:
            raise Unresolvable("the host has no address")
        # Every address, not just the one we would use: whoever controls the name's DNS can mix
        # public and private answers.
        for ip in addrs:
            reason = self.policy.refuses(host, ip)
            if reason is not None:
                raise AddressRefused(reason)
        return addrs

    async def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
        socket_options: Iterable[typing.Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addrs = await self.checked_addresses(host, port)
        last: Exception | None = None
        for ip in addrs:
            try:
                return await self.inner.connect_tcp(str(ip), port, timeout=timeout,
                                                    local_address=local_address, socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as e:
                last = e
        assert last is not None
        raise last

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[typing.Any] | None = None) -> typing.NoReturn:
        raise httpcore.ConnectError("unix sockets are never fetched")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class Refused(httpx.ConnectError):
    """AddressRefused, as httpx reports it."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class NotResolved(httpx.ConnectError):
    """Unresolvable, as httpx reports it."""


def _as_httpx(e: Exception) -> Exception:
    if isinstance(e, AddressRefused):
        return Refused(e.reason, str(e))
    if isinstance(e, Unresolvable):
        return NotResolved(str(e))
    # httpcore's exception classes have httpx namesakes (ConnectError, ReadTimeout, ...).
    for base in type(e).__mro__:
        cls = getattr(httpx, base.__name__, None)
        if isinstance(cls, type) and issubclass(cls, httpx.TransportError):
            return cls(str(e))
    return httpx.TransportError(str(e))


_HTTPCORE_ERRORS = (httpcore.NetworkError, httpcore.TimeoutException, httpcore.ProtocolError,
                    httpcore.UnsupportedProtocol)


class _Body(httpx.AsyncByteStream):
    def __init__(self, stream: typing.AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._stream:
                yield chunk
        except _HTTPCORE_ERRORS as e:
            raise _as_httpx(e) from None

    async def aclose(self) -> None:
        aclose = getattr(self._stream, "aclose", None)
        if aclose is not None:
            await aclose()


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport over an httpcore pool whose every connection goes through GuardedBackend.
    No proxies, no cookies, no automatic redirects: the fetcher handles each hop itself."""

    def __init__(self, policy: AddressPolicy, resolver: Resolver, ssl_context: ssl.SSLContext,
                 max_connections: int = 20) -> None:
        self.backend = GuardedBackend(policy, resolver)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context, max_connections=max_connections, max_keepalive_connections=max_connections,
            keepalive_expiry=30.0, http1=True, http2=False, retries=0, network_backend=self.backend)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        req = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host,
                             port=request.url.port, target=request.url.raw_path),
            headers=request.headers.raw, content=request.stream, extensions=request.extensions)
        try:
            resp = await self._pool.handle_async_request(req)
        except _HTTPCORE_ERRORS as e:
            raise _as_httpx(e) from None
        assert isinstance(resp.stream, typing.AsyncIterable)
        return httpx.Response(status_code=resp.status, headers=resp.headers, stream=_Body(resp.stream),
                              extensions=resp.extensions, request=request)

    async def aclose(self) -> None:
        await self._pool.aclose()
