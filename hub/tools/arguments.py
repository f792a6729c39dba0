"""A model's tool-call arguments as a dict, for every server tool and for client calls re-encoded
for Anthropic.

Local models emit arguments in many broken shapes (tests/test_tools.py has them); everything here
repairs what can be repaired and otherwise raises ArgumentError, whose message is written for the
model to read and retry.
"""

from __future__ import annotations

import json
import re

from ..core.text import json_open

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)\r?\n?[ \t]*```$", re.DOTALL)
_PREVIEW_HEAD = 160
_PREVIEW_TAIL = 60


class ArgumentError(Exception):
    """Arguments that cannot be used; str(e) is a message written for the model (what was wrong, a preview, how to fix)."""


def parse_arguments(raw: object, *, tool_name: str = "", call_id: str = "") -> dict:
    """A tool call's arguments as a dict: None/blank -> {}, dict as is, JSON object text parsed."""
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, bytes | bytearray):
        raw = bytes(raw).decode("utf-8", errors="replace")
    if not isinstance(raw, str):
        raise ArgumentError(
            message(tool_name, call_id, f"arguments must be a JSON object, got {_json_type(raw)}", repr(raw))
        )
    text = _unfence(raw.strip())
    if not text:
        return {}
    try:
        value = _loads(text)
    except (ValueError, RecursionError):
        problem = (
            "arguments are truncated: the JSON object ends before its braces/quotes are closed"
            if text[0] in "{[" and json_open(text)
            else "arguments are not valid JSON"
        )
        raise ArgumentError(message(tool_name, call_id, problem, text)) from None
    if isinstance(value, str):  # double-encoded: a JSON string holding the object
        try:
            inner = _loads(_unfence(value.strip()))
        except (ValueError, RecursionError):
            inner = value
        value = inner
    if not isinstance(value, dict):
        problem = f"arguments must be a JSON object, got {_json_type(value)}"
        raise ArgumentError(message(tool_name, call_id, problem, text))
    return value


def _loads(text: str) -> object:
    """json.loads, tolerating stray closing braces after the object (a common local-model slip)."""
    try:
        return json.loads(text)
    except ValueError:
        if not text.startswith("{"):
            raise
        value, end = json.JSONDecoder().raw_decode(text)
        if text[end:].strip().strip("}").strip():
            raise
        return value


def _unfence(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1).strip() if match else text


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__


def _preview(text: str) -> str:
    if len(text) <= _PREVIEW_HEAD + _PREVIEW_TAIL:
        return text
    return f"{text[:_PREVIEW_HEAD]} ... {text[-_PREVIEW_TAIL:]} ({len(text)} characters)"


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S*")


def message(tool_name: str, call_id: str, problem: str, received: str) -> str:
    """What the model reads back. URLs in what it sent are not repeated: text in the conversation is
    what web_fetch's prior-context rule admits URLs from (hub/fetcher/policy.py), so echoing a URL
    the model made up would let its next call fetch it."""
    where = tool_name or "tool"
    if call_id:
        where += f" call {call_id}"
    return (
        f"{where}: {problem}. Received: `{_URL.sub('<a URL>', _preview(received))}`. "
        'Send the arguments as one complete JSON object, for example {"query": "your search terms"}.'
    )




def dumps(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)
