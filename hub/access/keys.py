"""The gateway's API keys: who is calling, under which name, with which limits."""

from __future__ import annotations

import base64
import hmac

from ..config.keys import ApiKey


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
