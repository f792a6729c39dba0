"""The injected web_search tool: its schema, and turning a model's tool-call arguments into SearchArgs.

Local models emit arguments in many broken shapes (seed 003); everything here repairs what can be
repaired and otherwise raises ArgumentError, whose message is written for the model to read and retry.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

WEB_SEARCH = "web_search"
RECENCY = ("oneDay", "oneWeek", "oneMonth", "oneYear", "noLimit")
MAX_COUNT = 50

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)\r?\n?[ \t]*```$", re.DOTALL)
_PREVIEW_HEAD = 160
_PREVIEW_TAIL = 60


# --- schema -------------------------------------------------------------------------------------


def web_search_tool(
    engines: Sequence[tuple[str, str]], *, engine_required: bool, name: str = WEB_SEARCH
) -> dict:
    """The OpenAI chat function tool injected for the model; shared and cached, so treat it as read-only."""
    return _web_search_tool(tuple((str(i), str(d)) for i, d in engines), engine_required, name)


@lru_cache(maxsize=256)
def _web_search_tool(engines: tuple[tuple[str, str], ...], engine_required: bool, name: str) -> dict:
    if not _TOOL_NAME.fullmatch(name):
        raise ValueError(f"tool name {name!r} must be 1-64 of A-Z, a-z, 0-9, '_' or '-'")
    ids = list(dict.fromkeys(engine_id for engine_id, _ in engines))
    if engine_required and not ids:
        raise ValueError("engine_required needs at least one engine")
    properties: dict[str, dict] = {}
    if ids:
        # first description of an id wins
        described = {engine_id: desc.strip().rstrip(".") for engine_id, desc in reversed(engines)}
        options = "; ".join(f"{i}: {described[i]}" if described[i] else i for i in ids)
        properties["engine"] = {
            "type": "string",
            "enum": ids,
            "description": f"Search engine id. Options: {options}.",
        }
    properties["query"] = {"type": "string", "description": "Search query or user question."}
    properties["recency"] = {
        "type": "string",
        "enum": list(RECENCY),
        "description": "Time range filter; maps to backend-specific recency options.",
    }
    properties["count"] = {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_COUNT,
        "description": "Number of results to retrieve.",
    }
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": (
                "Perform web search for news and web pages using configured search engines. "
                "Results are numbered [1], [2], ...; cite the results you use as [n] in your answer."
            ),
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": ["engine", "query"] if engine_required else ["query"],
            },
        },
    }


# --- raw arguments -> dict ----------------------------------------------------------------------


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
            _message(tool_name, call_id, f"arguments must be a JSON object, got {_json_type(raw)}", repr(raw))
        )
    text = _unfence(raw.strip())
    if not text:
        return {}
    try:
        value = _loads(text)
    except (ValueError, RecursionError):
        problem = (
            "arguments are truncated: the JSON object ends before its braces/quotes are closed"
            if text[0] in "{[" and _looks_truncated(text)
            else "arguments are not valid JSON"
        )
        raise ArgumentError(_message(tool_name, call_id, problem, text)) from None
    if isinstance(value, str):  # double-encoded: a JSON string holding the object
        try:
            inner = _loads(_unfence(value.strip()))
        except (ValueError, RecursionError):
            inner = value
        value = inner
    if not isinstance(value, dict):
        problem = f"arguments must be a JSON object, got {_json_type(value)}"
        raise ArgumentError(_message(tool_name, call_id, problem, text))
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


def _looks_truncated(text: str) -> bool:
    """True when a string or an object/array is still open at the end of the text."""
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
    return in_string or depth > 0


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


def _message(tool_name: str, call_id: str, problem: str, received: str) -> str:
    where = tool_name or "tool"
    if call_id:
        where += f" call {call_id}"
    return (
        f"{where}: {problem}. Received: `{_preview(received)}`. "
        'Send the arguments as one complete JSON object, for example {"query": "your search terms"}.'
    )


# --- dict -> SearchArgs -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SearchArgs:
    """A web_search call's arguments after repair."""

    query: str
    engine: str | None
    recency: str | None  # one of RECENCY or None
    count: int | None  # clamped to 1..MAX_COUNT


_QUERY_KEYS = ("query", "q", "search_query", "keywords", "question", "text", "queries", "search_term")
_ENGINE_KEYS = ("engine", "search_engine")
_RECENCY_KEYS = ("recency", "time_range", "freshness", "search_recency_filter")
_COUNT_KEYS = ("count", "num", "num_results", "limit", "max_results", "top_k", "n")
_WRAPPER_KEYS = ("arguments", "parameters", "input", "args")

_RECENCY_WORDS: dict[str, str] = {}
for _canonical, _words in {
    "oneDay": "d day days daily today yesterday 24h 24hours pd",
    "oneWeek": "w week weeks weekly 7d 7days pw",
    "oneMonth": "m month months monthly 30d 30days 31d pm",
    "oneYear": "y year years yearly annual annually 12m 12months 365d 365days py",
    "noLimit": "nolimit none any anytime all alltime unlimited nofilter",
}.items():
    _RECENCY_WORDS.update(dict.fromkeys(_words.split(), _canonical))
_RECENCY_WORDS.update({value.lower(): value for value in RECENCY})
_RECENCY_PREFIX = re.compile(r"^(?:past|last|this|within|in)?(?:one|1|a)?")


def search_args(raw: object) -> SearchArgs:
    """Repair a web_search call's raw arguments into SearchArgs, or raise ArgumentError for the model."""
    args = _search_dict(raw)
    query = _query(args)
    if not query:
        raise ArgumentError(_message(WEB_SEARCH, "", "the query is missing or empty", _dumps(args)))
    return SearchArgs(
        query=query,
        engine=_engine(_first(args, _ENGINE_KEYS)),
        recency=_recency(_first(args, _RECENCY_KEYS)),
        count=_count(_first(args, _COUNT_KEYS)),
    )


def _search_dict(raw: object) -> dict:
    try:
        args = parse_arguments(raw, tool_name=WEB_SEARCH)
    except ArgumentError:
        bare = _bare_query(raw)
        if bare is None:
            raise
        return {"query": bare}
    if _first(args, _QUERY_KEYS) is None:
        for key in _WRAPPER_KEYS:  # {"name": "web_search", "arguments": {...}} and friends
            inner = args.get(key)
            if isinstance(inner, dict | str) and inner:
                try:
                    unwrapped = parse_arguments(inner, tool_name=WEB_SEARCH)
                except ArgumentError:
                    continue
                outer = {k: v for k, v in args.items() if k not in _WRAPPER_KEYS and k != "name"}
                return outer | unwrapped
    return args


def _bare_query(raw: object) -> str | None:
    """A plain-text (or JSON string/number) argument is the query itself; JSON-looking text is not."""
    text = raw.strip() if isinstance(raw, str) else ""
    if not text or text[0] in "{[`":
        return None
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):
        return text
    if isinstance(decoded, str):
        return decoded
    return None if decoded is None or isinstance(decoded, bool) else text


def _first(args: dict, keys: tuple[str, ...]) -> object:
    for key in keys:
        value = args.get(key)
        if value is not None and value != "" and value != []:
            return value
    return None


def _query(args: dict) -> str:
    value = _first(args, _QUERY_KEYS)
    if isinstance(value, list | tuple):
        parts = [_scalar_text(item) for item in value]
        return " ".join(part for part in parts if part)
    return _scalar_text(value)


def _scalar_text(value: object) -> str:
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return ""


def _engine(value: object) -> str | None:
    if isinstance(value, list | tuple) and value:
        value = value[0]
    return value.strip() or None if isinstance(value, str) else None


def _recency(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    key = re.sub(r"[^a-z0-9]", "", value.lower())
    found = _RECENCY_WORDS.get(key)
    if found is None:
        found = _RECENCY_WORDS.get(_RECENCY_PREFIX.sub("", key, count=1))
    return found


def _count(value: object) -> int | None:
    number: float | None = None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return max(1, min(MAX_COUNT, value))
    if isinstance(value, float):
        number = value
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    if number is None or not math.isfinite(number):
        return None
    return max(1, min(MAX_COUNT, int(number)))


def _dumps(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)
