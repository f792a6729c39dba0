"""Outbound proxies: which proxy (if any) an upstream URL goes through.

The environment's HTTP_PROXY / HTTPS_PROXY / ALL_PROXY / NO_PROXY are read once, when the client is
made; a provider's or engine's own `proxy` in engines.json wins over them ("direct" turns them off).
A choice is a `ProxyRoute`: the proxy URL without credentials, and the credentials as a
Proxy-Authorization header, so no URL carrying a password is ever handed to the HTTP library (whose
error texts quote URLs).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from ..config.proxy import DIRECT, parse_proxy


@dataclass(frozen=True, slots=True)
class ProxyPolicy:
    """The environment's proxy settings, decided once: proxies by URL scheme, and NO_PROXY."""

    http: str | None = None
    https: str | None = None
    no_proxy: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ProxyPolicy:
        """Lower-case names win over upper-case ones (as curl and urllib read them); ALL_PROXY
        fills in for a scheme without its own; an unusable value is ignored."""

        def get(name: str) -> str | None:
            for key in (name.lower(), name.upper()):
                value = env.get(key)
                if value and value.strip():
                    return value.strip()
            return None

        fallback = get("all_proxy")
        http, https = get("http_proxy") or fallback, get("https_proxy") or fallback
        no_proxy = tuple(e.strip().lower() for e in (get("no_proxy") or "").split(",") if e.strip())
        return cls(_usable(http), _usable(https), no_proxy)

    def for_url(self, scheme: str, host: str, port: int | None = None) -> str | None:
        """The environment's proxy for this URL, or None: no proxy set, NO_PROXY matches, or the
        host is loopback (a proxy's own loopback is not ours; Go's net/http does the same)."""
        proxy = self.https if scheme == "https" else self.http if scheme == "http" else None
        if proxy is None or _loopback(host) or self.bypass(host, port):
            return None
        return proxy

    def bypass(self, host: str, port: int | None = None) -> bool:
        """NO_PROXY: `*`, a host or domain (`example.com` and `.example.com` both cover
        subdomains), optionally with `:port`, an IP address or a CIDR block."""
        host = host.strip("[]").rstrip(".").lower()
        ip = _ip(host)
        for entry in self.no_proxy:
            if entry == "*":
                return True
            name, want_port = _split_port(entry)
            if want_port is not None and port is not None and want_port != port:
                continue
            if ip is not None and "/" in name:
                try:
                    if ip in ipaddress.ip_network(name, strict=False):
                        return True
                except ValueError:
                    pass
                continue
            name = name.strip("[]").lstrip("*").lstrip(".").rstrip(".")
            if name and (host == name or host.endswith("." + name)):
                return True
        return False


def choose(explicit: str | None, policy: ProxyPolicy, scheme: str, host: str, port: int | None) -> str | None:
    """The proxy for one request: the configured one, none for "direct", else the environment's."""
    if explicit == DIRECT:
        return None
    if explicit:
        return explicit
    return policy.for_url(scheme, host, port)


def _usable(url: str | None) -> str | None:
    if url is None:
        return None
    if "://" not in url:
        url = "http://" + url  # curl's reading of a bare host:port
    try:
        parse_proxy(url)
    except ValueError:
        return None
    return url


def _loopback(host: str) -> bool:
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    ip = _ip(host)
    return ip is not None and ip.is_loopback


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):  # [::1]:8080
        close = entry.find("]")
        rest = entry[close + 1:]
        if rest.startswith(":") and rest[1:].isdigit():
            return entry[: close + 1], int(rest[1:])
        return entry, None
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        if port.isdigit():
            return name, int(port)
    return entry, None
