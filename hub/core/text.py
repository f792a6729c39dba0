"""Small coercions of untrusted JSON values, shared by the translators."""

from __future__ import annotations

from typing import Any


def text_of(content: Any, sep: str = "\n", *, any_part: bool = False) -> str:
    """The text of chat message content: a string, or the `text` parts of a list joined with sep
    (with any_part, every part that has a string `text`, whatever its type)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return sep.join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
                        and (any_part or p.get("type") == "text"))
    return ""


def json_open(text: str) -> bool:
    """True when a string or an object/array is still open at the end of text (JSON cut short);
    False as soon as more brackets close than opened (not a prefix of one value)."""
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth < 0:
                return False
    return in_string or depth > 0
