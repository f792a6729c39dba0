"""The gateway's API keys: who is calling, under which name, with which limits."""

from __future__ import annotations

import base64
import hmac
from collections.abc import Iterable
from dataclasses import dataclass, field

ANONYMOUS = "anonymous"  # the caller's name when the gateway has no keys


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One entry of server.apiKeys. `name` is what logs, metrics and budgets show; `key` never leaves."""

    key: str = field(repr=False)
    name: str
    searches_per_day: int | None = None
    searches_per_minute: int | None = None
    fetches_per_day: int | None = None
    max_cost_per_day: float | None = None

    @property
    def limited(self) -> bool:
        return any(v is not None for v in (self.searches_per_day, self.searches_per_minute,
                                           self.fetches_per_day, self.max_cost_per_day))


def parse_keys(entries: Iterable[str | dict], section: str = "apiKeys") -> tuple[ApiKey, ...]:
    """server.apiKeys (already schema-checked): a plain string is a key without limits, named by its place."""
    out = []
    for i, e in enumerate(entries):
        if isinstance(e, str):
            out.append(ApiKey(key=e, name=f"{section}[{i}]"))
        else:
            out.append(ApiKey(
                key=e["key"], name=e["name"],
                searches_per_day=e.get("searchesPerDay"),
                searches_per_minute=e.get("searchesPerMinute"),
                fetches_per_day=e.get("fetchesPerDay"),
                max_cost_per_day=e.get("maxCostPerDay"),
            ))
    return tuple(out)


def presented_key(headers, *, basic: bool = False) -> str | None:
    """The key a request presents: `x-api-key`, else `Authorization: Bearer …`; with basic, also a
    Basic auth password (what a browser sends for the admin page)."""
    presented = headers.get("x-api-key")
    if presented is None:
        auth = headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            presented = auth[7:].strip()
        elif basic and auth[:6].lower() == "basic ":
            try:
                presented = base64.b64decode(auth[6:].strip(), validate=True).decode().partition(":")[2]
            except (ValueError, UnicodeDecodeError):
                return None
    return presented or None


def match_key(presented: str | None, keys: tuple[ApiKey, ...]) -> ApiKey | None:
    """The configured key equal to the presented one, compared in constant time against every key."""
    if not presented:
        return None
    found = None
    raw = presented.encode()
    for k in keys:  # no early exit: timing says nothing about which key matched
        if hmac.compare_digest(raw, k.key.encode()):
            found = k
    return found
