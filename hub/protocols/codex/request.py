"""The body of Codex CLI's standalone web search call (`POST /v1/alpha/search`) -> one `Call`.

Liberal and bounded: unknown fields, `input` and `model` are ignored; a field of the wrong type
costs only the command it belongs to (it becomes a `Problem` the answer names), never the call; at
most MAX_COMMANDS commands run per call. Pure: no I/O.

Wire shape (../shared/reference/protocols-2026-11.md §3; codex-rs/codex-api/src/search.rs):
`{"id", "model", "input", "commands": {"search_query": [{"q", "recency", "domains"}], "open":
[{"ref_id", "lineno"}], "click": [{"ref_id", "id"}], "find": [{"ref_id", "pattern"}], "time":
[{"utc_offset"}], "image_query", "screenshot", "finance", "weather", "sports": [...],
"response_length": "short|medium|long"}, "settings": {"external_web_access", "user_location",
"search_context_size", "filters": {"allowed_domains", "blocked_domains"}, "allowed_callers"},
"max_output_tokens"}`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from ...search.base import RECENCY_DAYS
from ...search.sanitize import clean_query, clean_text, normalize_domain

MAX_COMMANDS = 16  # per call, all kinds together; the rest is named in the answer, not run
MAX_DOMAINS = 100  # per list (OpenAI's documented limit for allowed_domains)
MAX_THREAD_ID = 256
MAX_REF_CHARS = 2048
MAX_PATTERN_CHARS = 200
CHARS_PER_TOKEN = 4
DEFAULT_OUTPUT_TOKENS = 2500  # what Codex 0.171.0 sends
MIN_OUTPUT_CHARS = 1_000  # a tiny max_output_tokens still leaves room to say what happened
MAX_OUTPUT_CHARS = 100_000  # the ceiling whatever max_output_tokens asks for
LENGTHS = ("short", "medium", "long")
CONTEXT_SIZES = {"low": "short", "medium": "medium", "high": "long"}
UNSUPPORTED = ("image_query", "screenshot", "finance", "weather", "sports")


# ---------------------------------------------------------------- wire structs (lenient at the edges)


class Settings(msgspec.Struct):
    external_web_access: Any = None
    user_location: Any = None
    search_context_size: Any = None
    filters: Any = None
    allowed_callers: Any = None


class Commands(msgspec.Struct):
    search_query: Any = None
    open: Any = None
    click: Any = None
    find: Any = None
    time: Any = None
    image_query: Any = None
    screenshot: Any = None
    finance: Any = None
    weather: Any = None
    sports: Any = None
    response_length: Any = None


class Body(msgspec.Struct):
    """The top level; every field typed loosely here and checked one by one below, so one bad
    field never hides the rest of the call."""

    id: Any = None
    commands: Any = None
    settings: Any = None
    max_output_tokens: Any = None


class SearchQuery(msgspec.Struct):
    q: str
    recency: int | None = None
    domains: list[str] | None = None


class OpenOp(msgspec.Struct):
    ref_id: str
    lineno: int | None = None


class ClickOp(msgspec.Struct):
    ref_id: str
    id: int


class FindOp(msgspec.Struct):
    ref_id: str
    pattern: str


class TimeOp(msgspec.Struct):
    utc_offset: str


# ---------------------------------------------------------------- the decoded call


@dataclass(frozen=True, slots=True)
class Search:
    query: str
    recency: str | None  # the engines' vocabulary (hub/search/base.py RECENCY), None for no limit
    days: int | None  # as asked, for the answer
    domains: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Open:
    ref: str
    lineno: int  # 1-based; 0 and negatives start at the top


@dataclass(frozen=True, slots=True)
class Click:
    ref: str
    link: int


@dataclass(frozen=True, slots=True)
class Find:
    ref: str
    pattern: str


@dataclass(frozen=True, slots=True)
class Time:
    offset: str


@dataclass(frozen=True, slots=True)
class Unsupported:
    command: str


@dataclass(frozen=True, slots=True)
class Problem:
    """A command (or field) that could not be read: said in the answer, one line."""

    command: str
    message: str


Op = Search | Open | Click | Find | Time | Unsupported | Problem


@dataclass(frozen=True, slots=True)
class Call:
    thread: str  # the Codex thread id ("" when absent: ref ids then live for this call only)
    ops: tuple[Op, ...]
    length: str  # short | medium | long
    budget: int  # characters the answer may take
    allowed: tuple[str, ...] = ()  # settings.filters, normalized
    blocked: tuple[str, ...] = ()
    user_location: dict | None = None
    context_size: str | None = None  # settings.search_context_size: how much of the result pages is read
    notes: tuple[str, ...] = field(default=())  # what was ignored or bounded, said once in the answer


class Malformed(Exception):
    """The body is not a web search call at all (not an object, no commands): the one line the
    answer gives instead."""


def recency_of(days: int | None) -> str | None:
    """Days -> the smallest engine recency window that covers them (3 -> oneWeek); None for no
    limit (absent, 0 or less, or more than a year)."""
    if days is None or days <= 0:
        return None
    for name, span in sorted(RECENCY_DAYS.items(), key=lambda kv: kv[1]):
        if days <= span:
            return name
    return None


def _domains(value: Any) -> tuple[tuple[str, ...], bool]:
    """(normalized domains, whether some entries were dropped) from a list of strings."""
    if not isinstance(value, list):
        return (), value is not None
    out = [d for d in (normalize_domain(v) for v in value[:MAX_DOMAINS]) if d]
    return tuple(dict.fromkeys(out)), len(out) != len(value)


def _convert(value: Any, kind: type[msgspec.Struct]) -> Any:
    return msgspec.convert(value, kind, strict=False)  # "7" and 7.0 are a 7, as a model may write them


def _problem(command: str, e: Exception) -> Problem:
    detail = str(e) if isinstance(e, msgspec.ValidationError) else "not an object"
    return Problem(command, clean_text(detail, 200) or "invalid")


def _items(commands: Commands, name: str) -> list[Any]:
    value = getattr(commands, name)
    if value is None:
        return []
    return value if isinstance(value, list) else [_NotAList()]


class _NotAList:
    pass


def _one(name: str, item: Any) -> Op:
    """One command item -> its op, or the Problem that says what is wrong with it."""
    if isinstance(item, _NotAList):
        return Problem(name, f"'{name}' must be a list of objects")
    try:
        if name == "search_query":
            s = _convert(item, SearchQuery)
            query = clean_query(s.q)
            if not query:
                return Problem(name, "the query 'q' is empty")
            domains, _ = _domains(s.domains)
            return Search(query, recency_of(s.recency), s.recency, domains)
        if name == "open":
            o = _convert(item, OpenOp)
            return Open(o.ref_id.strip()[:MAX_REF_CHARS], max(1, o.lineno or 1))
        if name == "click":
            c = _convert(item, ClickOp)
            return Click(c.ref_id.strip()[:MAX_REF_CHARS], c.id)
        if name == "find":
            f = _convert(item, FindOp)
            pattern = " ".join(f.pattern.split())[:MAX_PATTERN_CHARS]
            if not pattern:
                return Problem(name, "the pattern is empty")
            return Find(f.ref_id.strip()[:MAX_REF_CHARS], pattern)
        if name == "time":
            return Time(_convert(item, TimeOp).utc_offset.strip()[:32])
    except (msgspec.ValidationError, TypeError, ValueError, OverflowError) as e:
        return _problem(name, e)
    return Unsupported(name)


# The order commands run in: searches first, so an `open` of a ref id this very call's search made
# resolves; then pages (open, click), then what reads them (find); the rest last.
ORDER = ("search_query", "open", "click", "find", "time", *UNSUPPORTED)


def decode(body: Any) -> Call:
    """The call, or Malformed with the reason in one line."""
    if not isinstance(body, dict):
        raise Malformed("the body must be a JSON object")
    try:
        top = _convert(body, Body)
    except msgspec.ValidationError as e:  # only possible for a non-object, checked above
        raise Malformed(f"the body could not be read: {e}") from None
    notes: list[str] = []
    thread = top.id if isinstance(top.id, str) else ""
    thread = thread.strip()[:MAX_THREAD_ID]
    if top.id is not None and not isinstance(top.id, str):
        notes.append("'id' is not a string: ref ids from this call are not kept")
    if top.commands is None:
        raise Malformed("the call has no 'commands' (expected e.g. {\"commands\": {\"search_query\": [{\"q\": "
                        "\"...\"}]}})")
    try:
        commands = _convert(top.commands, Commands)
    except msgspec.ValidationError:
        raise Malformed("'commands' must be an object") from None

    settings = _settings(top.settings, notes)
    length = commands.response_length if commands.response_length in LENGTHS else None
    if commands.response_length is not None and length is None:
        notes.append(f"response_length must be one of {', '.join(LENGTHS)}: using medium")
    if length is None:
        length = CONTEXT_SIZES.get(settings.search_context_size, "medium") \
            if isinstance(settings.search_context_size, str) else "medium"

    ops: list[Op] = []
    dropped = 0
    for name in ORDER:
        items = _items(commands, name)
        if name in UNSUPPORTED and items:
            ops.append(Unsupported(name))  # one line per command kind, whatever the number of items
            continue
        for item in items:
            if len(ops) >= MAX_COMMANDS:
                dropped += 1
                continue
            ops.append(_one(name, item))
    if dropped:
        notes.append(f"{dropped} more command(s) not run: at most {MAX_COMMANDS} per call")

    allowed, blocked, location = (), (), None
    if isinstance(settings.filters, dict):
        allowed, lossy_a = _domains(settings.filters.get("allowed_domains"))
        blocked, lossy_b = _domains(settings.filters.get("blocked_domains"))
        if lossy_a or lossy_b:
            notes.append("some filter domains were not usable and were left out")
    if isinstance(settings.user_location, dict):
        location = {k: v for k, v in settings.user_location.items()
                    if k in ("country", "city", "region", "timezone") and isinstance(v, str)}
    return Call(thread=thread, ops=tuple(ops), length=length, budget=output_budget(top.max_output_tokens),
                allowed=allowed, blocked=blocked, user_location=location or None,
                context_size=settings.search_context_size if isinstance(settings.search_context_size, str) else None,
                notes=tuple(notes))


def _settings(value: Any, notes: list[str]) -> Settings:
    if value is None:
        return Settings()
    try:
        return _convert(value, Settings)
    except msgspec.ValidationError:
        notes.append("'settings' is not an object: ignored")
        return Settings()


def output_budget(max_output_tokens: Any) -> int:
    """Characters the answer may take: max_output_tokens * CHARS_PER_TOKEN, within
    [MIN_OUTPUT_CHARS, MAX_OUTPUT_CHARS]; DEFAULT_OUTPUT_TOKENS when absent or not a number."""
    tokens = max_output_tokens if isinstance(max_output_tokens, int) and not isinstance(max_output_tokens, bool) \
        else DEFAULT_OUTPUT_TOKENS
    return max(MIN_OUTPUT_CHARS, min(MAX_OUTPUT_CHARS, tokens * CHARS_PER_TOKEN))
