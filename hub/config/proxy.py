"""A proxy URL as engines.json or the environment gives it: parsed into a route whose credentials never travel inside a URL, and masked for display (hub/upstream/proxy.py chooses one per request)."""

from __future__ import annotations

import re
from base64 import b64encode
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

DIRECT = "direct"  # a provider's or engine's `"proxy": false`: never a proxy, whatever the environment says


SCHEMES = ("http", "https", "socks5", "socks5h")


# The userinfo of a URL, up to its last "@" before the path: a raw "@" in a password is masked too.
USERINFO = re.compile(r"(?<=//)[^/?#]*@")


@dataclass(frozen=True, slots=True)
class ProxyRoute:
    scheme: str
    url: str  # scheme://host:port, no credentials
    host: str
    port: int
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)

    @property
    def socks(self) -> bool:
        return self.scheme.startswith("socks")

    @property
    def authorization(self) -> str | None:
        """The Proxy-Authorization value for an http(s) proxy with credentials."""
        if self.username is None:
            return None
        raw = f"{self.username}:{self.password or ''}".encode()
        return "Basic " + b64encode(raw).decode()


def parse_proxy(url: str) -> ProxyRoute:
    """A proxy URL -> its route; ValueError (naming no credentials) when it is not usable."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise ValueError("not a valid proxy URL") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ValueError(f"proxy scheme must be one of {', '.join(SCHEMES)}")
    host = parts.hostname
    if not host:
        raise ValueError("proxy URL has no host")
    if port is None:
        port = {"http": 80, "https": 443}.get(scheme, 1080)
    shown_host = f"[{host}]" if ":" in host else host
    user = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    return ProxyRoute(scheme, f"{scheme}://{shown_host}:{port}", host, port, user, password)


def mask_proxy(url: str | None) -> str | None:
    """A proxy URL for logs, errors, /health and `searchhub check`: credentials become ****."""
    if not url:
        return url
    return USERINFO.sub("****@", url)


def proxy_secrets(url: str | None) -> tuple[str, ...]:
    """The credentials inside a proxy URL (for redacting texts that might quote them)."""
    if not url or url == DIRECT:
        return ()
    try:
        route = parse_proxy(url)
    except ValueError:
        return ()
    return tuple(s for s in (route.password, f"{route.username}:{route.password}" if route.password else None) if s)
