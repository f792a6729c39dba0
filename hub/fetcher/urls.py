"""URLs as the fetcher reads them: a strict parse into (scheme, host, port, path) with the host in
one canonical ASCII form, the normalized spelling used for cache keys and for "has this URL been
seen", the redacted spelling used in logs, and the URLs found in a text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import idna

from .addresses import parse_ip
from .result import INVALID_TOOL_INPUT, URL_NOT_ALLOWED, URL_TOO_LONG, Refusal

MAX_URL_CHARS = 250  # web_fetch's documented limit (url_too_long above it)
DEFAULT_PORTS = {"http": 80, "https": 443}
# Whitespace, control characters and backslashes: parsers disagree about them (a classic way to make
# the checked host and the connected host differ), and no URL a model should fetch needs them.
_CONFUSING = re.compile(r"[\x00-\x20\x7f-\x9f\\\u00a0\u1680\u2000-\u200f\u2028-\u202f\u205f\u3000\ufeff]")
# Hosts spelled like numbers: 2130706433, 0x7f.1, 0177.0.0.1, 127.1. A resolver turns these into
# addresses; only the canonical dotted quad is accepted, the rest is refused before any lookup.
_NUMERIC_LABEL = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)$")
_IN_TEXT = re.compile(r"https?://[^\s<>\"'`\]\[(){}|\\^]+", re.I)
_TRAILING = ".,;:!?*_~'\""


@dataclass(frozen=True, slots=True)
class Target:
    scheme: str
    host: str  # lower-case ASCII (IDNA), no trailing dot; an IPv6 literal without brackets
    port: int
    path: str  # path and query exactly as given ("/" when empty); never the fragment
    userinfo: bool = False

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.netloc}{self.path}"

    @property
    def redacted(self) -> str:
        """For logs: no query string (it may carry tokens), no credentials."""
        return f"{self.scheme}://{self.netloc}{self.path.split('?', 1)[0]}"[:300]


def _bad(message: str, reason: str = "invalid_url") -> Refusal:
    return Refusal(INVALID_TOOL_INPUT, reason, message)


def parse(raw: object, *, max_chars: int = MAX_URL_CHARS) -> Target | Refusal:
    """The URL as a Target, or why it cannot be one. Policy (credentials, ports) is check()'s job."""
    if not isinstance(raw, str) or not raw.strip():
        return _bad("url must be a non-empty string")
    url = raw.strip()
    if len(url) > max_chars:
        return Refusal(URL_TOO_LONG, "too_long", f"the URL is longer than {max_chars} characters")
    if _CONFUSING.search(url):
        return _bad("the URL contains whitespace, control characters or backslashes")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return _bad("the URL cannot be parsed")
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        return _bad("only http and https URLs can be fetched", "scheme")
    netloc = parts.netloc
    userinfo, _, hostport = netloc.rpartition("@")
    host = canonical_host(parts.hostname or "")
    if host is None or not hostport:
        if _NUMERIC_LABEL.match((parts.hostname or "").rstrip(".").rpartition(".")[2]):
            return Refusal(URL_NOT_ALLOWED, "ip_encoding", "the host is an address in a non-standard spelling")
        return _bad("the URL has no valid host name")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(scheme, host, port or DEFAULT_PORTS[scheme], path, userinfo=bool(userinfo) or "@" in netloc)


def canonical_host(host: str) -> str | None:
    h = host.rstrip(".") if host.endswith(".") and not host.endswith("..") else host
    if not h or "%" in h:
        return None
    ip = parse_ip(h)
    if ip is not None:
        return str(ip)
    try:
        ascii_host = idna.encode(h, uts46=True).decode("ascii").lower() if not h.isascii() else h.lower()
    except (idna.IDNAError, UnicodeError, ValueError):
        return None
    ascii_host = ascii_host.rstrip(".")
    ip = parse_ip(ascii_host)  # a name that maps onto an address literal (full-width digits)
    if ip is not None:
        return str(ip)
    labels = ascii_host.split(".")
    if any(not label or len(label) > 63 for label in labels) or len(ascii_host) > 253:
        return None
    if not re.fullmatch(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*", ascii_host):
        return None
    if _NUMERIC_LABEL.match(labels[-1]):
        return None  # an address in a non-canonical spelling
    return ascii_host


def check(target: Target, allowed_ports: frozenset[int]) -> Refusal | None:
    """The URL-level rules every hop must pass before any lookup or connection."""
    if target.userinfo:
        return Refusal(URL_NOT_ALLOWED, "credentials", "URLs with credentials (user@host) are not fetched")
    if target.port not in allowed_ports:
        return Refusal(URL_NOT_ALLOWED, "port", f"port {target.port} is not allowed")
    return None


def normalize(raw: str) -> str | None:
    """The URL's normalized spelling (lower-case scheme and host, IDNA, no default port, no fragment;
    path and query kept exactly), or None if it is not a fetchable URL at all."""
    t = parse(raw, max_chars=4096)
    return t.url if isinstance(t, Target) else None


def redact(raw: str) -> str:
    """A URL fit for a log line, whatever it is."""
    t = parse(raw, max_chars=4096)
    return t.redacted if isinstance(t, Target) else "<invalid url>"


def urls_in_text(text: str) -> list[str]:
    """The http(s) URLs in a text, trailing punctuation removed."""
    if not isinstance(text, str) or "://" not in text:
        return []
    return [m.group(0).rstrip(_TRAILING) for m in _IN_TEXT.finditer(text)]
