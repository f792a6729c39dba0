"""A forward proxy on loopback that records everything passing through it.

It speaks the three ways clients use a proxy:
- HTTP forward proxying: `GET http://host:port/path HTTP/1.1` (absolute form), forwarded in origin
  form with `Connection: close` and the answer relayed back;
- CONNECT tunnels: `CONNECT host:port` then raw bytes both ways; for hosts given a TLS context the
  proxy terminates TLS itself (as a TLS-intercepting corporate proxy does) and answers the inner
  HTTP requests with `handler`;
- SOCKS5 (RFC 1928, with RFC 1929 username/password when credentials are set), on its own port.

`hosts` maps a host name to a loopback (host, port): names that do not resolve anywhere (`*.test`)
can then only be reached through this proxy, which is what the tests rely on to show a request
went through it. With `credentials`, a request without them gets 407 (or a SOCKS auth failure).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .server import started_thread

# (method, path, headers, body) -> (status, headers, body): the answer to a request inside an
# intercepted TLS tunnel.
Handler = Callable[[str, str, dict[str, str], bytes], tuple[int, dict[str, str], bytes]]


@dataclass
class Passed:
    kind: str  # "http", "connect" or "socks5"
    target: str  # host:port as the client asked for it
    method: str = ""
    path: str = ""
    authorized: bool = True
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


class ForwardProxy:
    def __init__(self, *, hosts: dict[str, tuple[str, int]] | None = None, credentials: tuple[str, str] | None = None,
                 tls: dict[str, ssl.SSLContext] | None = None, handler: Handler | None = None) -> None:
        self.hosts = dict(hosts or {})
        self.credentials = credentials
        self.tls = dict(tls or {})
        self.handler = handler
        self.passed: list[Passed] = []
        self.port = 0
        self.socks_port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None

    # ------------------------------------------------------------ lifecycle

    def url(self, scheme: str = "http", *, user: str | None = None, password: str | None = None) -> str:
        auth = f"{user}:{password}@" if user is not None else ""
        port = self.socks_port if scheme.startswith("socks") else self.port
        return f"{scheme}://{auth}127.0.0.1:{port}"

    def start(self) -> ForwardProxy:
        ready = threading.Event()

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            http = await asyncio.start_server(self._http, "127.0.0.1", 0)
            socks = await asyncio.start_server(self._socks, "127.0.0.1", 0)
            self.port = http.sockets[0].getsockname()[1]
            self.socks_port = socks.sockets[0].getsockname()[1]
            ready.set()
            async with http, socks:
                await self._stop.wait()

        self._thread = started_thread(lambda: asyncio.run(main()), ready, "proxy")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout=10)

    def wait_for(self, n: int, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.passed) < n and time.monotonic() < deadline:
            time.sleep(0.01)

    # ------------------------------------------------------------ helpers

    def _resolve(self, host: str, port: int) -> tuple[str, int]:
        return self.hosts.get(host, (host, port))

    def _authorized(self, headers: dict[str, str]) -> bool:
        if self.credentials is None:
            return True
        user, password = self.credentials
        expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        return headers.get("proxy-authorization") == expected

    @staticmethod
    async def _head(reader: asyncio.StreamReader) -> tuple[str, dict[str, str]] | None:
        line = await reader.readline()
        if not line:
            return None
        headers: dict[str, str] = {}
        while True:
            h = await reader.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            k, _, v = h.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()
        return line.decode("latin-1").strip(), headers

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _tunnel(self, reader, writer, host: str, port: int) -> None:
        up_r, up_w = await asyncio.open_connection(*self._resolve(host, port))
        await asyncio.gather(self._pipe(reader, up_w), self._pipe(up_r, writer))

    # ------------------------------------------------------------ HTTP proxy

    async def _http(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await self._head(reader)
            if head is None:
                return
            line, headers = head
            method, target, _ = line.split(" ", 2)
            ok = self._authorized(headers)
            if method == "CONNECT":
                host, _, port = target.rpartition(":")
                self.passed.append(Passed("connect", target, method, "", ok, headers))
                if not ok:
                    writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nconnection: close\r\n"
                                 b"content-length: 0\r\n\r\n")
                    return
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
                if host in self.tls:
                    await writer.start_tls(self.tls[host])
                    await self._answer_inner(reader, writer, target)
                else:
                    await self._tunnel(reader, writer, host, int(port))
                return
            body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
            rest = target.split("://", 1)[1]
            hostport, _, path = rest.partition("/")
            host, _, port = hostport.partition(":")
            self.passed.append(Passed("http", hostport, method, "/" + path, ok, headers, body))
            if not ok:
                writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nconnection: close\r\n"
                             b"proxy-authenticate: Basic realm=\"test\"\r\ncontent-length: 0\r\n\r\n")
                return
            up_r, up_w = await asyncio.open_connection(*self._resolve(host, int(port or 80)))
            out = [f"{method} /{path} HTTP/1.1"]
            for k, v in headers.items():
                if not k.startswith("proxy-") and k != "connection":
                    out.append(f"{k}: {v}")
            out.append("connection: close")
            up_w.write(("\r\n".join(out) + "\r\n\r\n").encode("latin-1") + body)
            await up_w.drain()
            await self._pipe(up_r, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, ssl.SSLError):
            pass
        finally:
            with contextlib.suppress(Exception):
                await writer.drain()
                writer.close()

    async def _answer_inner(self, reader, writer, target: str) -> None:
        """Requests inside an intercepted TLS tunnel, answered by the handler (one per connection)."""
        head = await self._head(reader)
        if head is None:
            return
        line, headers = head
        method, path, _ = line.split(" ", 2)
        body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
        self.passed.append(Passed("tls", target, method, path, True, headers, body))
        status, out_headers, payload = self.handler(method, path, headers, body) if self.handler else (502, {}, b"")
        lines = [f"HTTP/1.1 {status} X", f"content-length: {len(payload)}", "connection: close"]
        lines += [f"{k}: {v}" for k, v in out_headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)
        await writer.drain()

    # ------------------------------------------------------------ SOCKS5

    async def _socks(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            ver, n = await reader.readexactly(2)
            methods = await reader.readexactly(n)
            if ver != 5:
                return
            ok = True
            if self.credentials is not None:
                if 2 not in methods:
                    writer.write(b"\x05\xff")
                    return
                writer.write(b"\x05\x02")
                await writer.drain()
                _, ulen = await reader.readexactly(2)
                user = (await reader.readexactly(ulen)).decode()
                (plen,) = await reader.readexactly(1)
                password = (await reader.readexactly(plen)).decode()
                ok = (user, password) == self.credentials
                writer.write(b"\x01\x00" if ok else b"\x01\x01")
                await writer.drain()
                if not ok:
                    self.passed.append(Passed("socks5", "?", authorized=False))
                    return
            else:
                writer.write(b"\x05\x00")
                await writer.drain()
            _, cmd, _, atyp = await reader.readexactly(4)
            if atyp == 1:
                host = ".".join(str(b) for b in await reader.readexactly(4))
            elif atyp == 3:
                (ln,) = await reader.readexactly(1)
                host = (await reader.readexactly(ln)).decode()
            else:
                import ipaddress

                host = str(ipaddress.IPv6Address(await reader.readexactly(16)))
            port = int.from_bytes(await reader.readexactly(2), "big")
            self.passed.append(Passed("socks5", f"{host}:{port}", authorized=ok))
            if cmd != 1:
                writer.write(b"\x05\x07\x00\x01\x00\x00\x00\x00\x00\x00")
                return
            try:
                up_r, up_w = await asyncio.open_connection(*self._resolve(host, port))
            except OSError:
                writer.write(b"\x05\x04\x00\x01\x00\x00\x00\x00\x00\x00")
                return
            writer.write(b"\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00")
            await writer.drain()
            await asyncio.gather(self._pipe(reader, up_w), self._pipe(up_r, writer))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()
