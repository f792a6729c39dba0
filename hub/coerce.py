"""Small coercions of untrusted JSON values, shared by the translators."""

from __future__ import annotations

from typing import Any


def str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def str_or_empty(value: Any) -> str:
    return value if isinstance(value, str) else ""


def text_of(content: Any, sep: str = "\n") -> str:
    """The text of chat message content: a string, or the `text` parts of a list joined with sep."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return sep.join(p["text"] for p in content
                        if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str))
    return ""
