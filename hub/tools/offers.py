"""Reading a client's offer of a hosted tool: the pieces the tools' readers share (hub/tools/kind.py's
Offering.read). A Messages or Responses tool comes decoded by its protocol (its wire types checked the
fields); OpenRouter's `parameters` come as sent, so their readers drop what does not fit."""

from __future__ import annotations

from typing import Any


def domains(values: list[str] | None) -> tuple[str, ...]:
    """A decoded domain list, empty entries left out."""
    return tuple(d for d in values or () if d)


def location(value: Any, keys: tuple[str, ...]) -> dict | None:
    """A decoded user_location's fields that are set, in `keys` order; None when none is."""
    if value is None:
        return None
    return {k: v for k in keys if (v := getattr(value, k))} or None


def loose_domains(value: Any) -> tuple[str, ...]:
    """A domain list as sent (OpenRouter): strings only, trimmed, lowercased, at most 100."""
    return tuple(d.strip().lower() for d in value if isinstance(d, str) and d.strip())[:100] \
        if isinstance(value, list) else ()


def loose_count(value: Any) -> int | None:
    """A count as sent (OpenRouter): an integer from 1 to 100, else none."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 100 else None
