"""The one search interface: a request, a normalized result (hits or a structured error), an engine."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import msgspec

if TYPE_CHECKING:
    from ..config.settings import EngineConfig

RECENCY = ("oneDay", "oneWeek", "oneMonth", "oneYear", "noLimit")
RECENCY_DAYS = {"oneDay": 1, "oneWeek": 7, "oneMonth": 31, "oneYear": 365}
MAX_QUERY_CHARS = 500

# error_code values, named as Anthropic's web_search_tool_result_error names them.
UNAVAILABLE = "unavailable"
TOO_MANY_REQUESTS = "too_many_requests"
INVALID_TOOL_INPUT = "invalid_tool_input"
QUERY_TOO_LONG = "query_too_long"
BUDGET_EXHAUSTED = "budget_exhausted"  # the calling key's search budget is spent (hub/access/budget.py)



@dataclass(frozen=True, slots=True)
class Hit:
    title: str
    url: str
    snippet: str
    source: str | None = None
    published: str | None = None
    passages: tuple[str, ...] = ()  # read from the page (hub/fetcher/reading.py): shown instead of the snippet


@dataclass(frozen=True, slots=True)
class PageRead:
    """One result page read after a search: what a trace shows."""

    url: str
    outcome: str  # ok | timeout | blocked | error | skipped | budget
    chars: int = 0  # passage characters given to the model
    ms: float = 0.0
    cached: bool = False


class SearchRequest(msgspec.Struct, frozen=True):
    """A search someone asked for, whatever door it came in by: a model's web_search call (repaired into
    it by hub/tools/kinds/web_search.py `search_args`), the body of POST /v1/search (decoded into it), an MCP
    call, the CLI, Codex's and Ollama's searches. SearchService.search checks it, resolves its engine
    and fills in its count; an engine receives it so."""

    query: str
    count: int | None = None  # None (or 0 or less): webSearch.maxResults; clamped to the engine's maximum
    recency: str | None = None  # one of RECENCY; None or "noLimit": any time
    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()
    user_location: dict | None = None  # {"country","city","region","timezone"} where the engine supports it
    # The engine id as asked (None: the default). SearchService.choose_engine resolves it, once: the
    # web_search tool at the call (its repeated-call key needs it), the service for every other door.
    engine: str | None = None
    read_pages: bool | None = None  # read the top result pages; None: the door's default

    @property
    def country(self) -> str | None:
        """The two-letter country of user_location, upper case, if it has a usable one."""
        loc = self.user_location
        c = loc.get("country") if isinstance(loc, Mapping) else None
        if isinstance(c, str) and len(c) == 2 and c.isascii() and c.isalpha():
            return c.upper()
        return None


@dataclass(frozen=True, slots=True)
class SearchResult:
    engine: str
    query: str
    hits: tuple[Hit, ...] = ()
    summary: str | None = None
    error: str | None = None
    error_code: str | None = None
    cached: bool = False
    engine_errors: tuple[tuple[str, str], ...] = ()  # (engine, error) of a multi engine's failed members
    usage: tuple[int, int] | None = None  # (input, output) tokens a model engine reported
    cost: float = 0.0  # what answering cost, by the engine's prices; 0 for a cache hit
    pages: tuple[PageRead, ...] = ()  # the result pages read for passages, in hit order

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_payload(self) -> dict:
        """{"engine","query","summary"?,"hits":[{"n":1,...}]} or {"error","engine"} (the `search --json` output)."""
        if self.error is not None:
            return {"error": self.error, "engine": self.engine}
        out: dict[str, Any] = {"engine": self.engine, "query": self.query}
        if self.summary:
            out["summary"] = self.summary
        out["hits"] = [_hit_payload(n, h) for n, h in enumerate(self.hits, 1)]
        if self.engine_errors:
            out["failed_engines"] = [{"engine": e, "error": msg} for e, msg in self.engine_errors]
        return out

    def to_document(self) -> dict:
        """The result for programs (`/v1/search`, MCP structured content): hits as title, url, snippet,
        source, date; the same fields whatever engine answered."""
        return {
            "engine": self.engine,
            "query": self.query,
            "summary": self.summary,
            "cached": self.cached,
            "hits": [{"title": h.title, "url": h.url, "snippet": h.snippet, "source": h.source, "date": h.published}
                     | ({"passages": list(h.passages)} if h.passages else {}) for h in self.hits],
        }


def _hit_payload(n: int, h: Hit) -> dict:
    d: dict[str, Any] = {"n": n, "title": h.title, "url": h.url, "snippet": h.snippet}
    if h.source:
        d["source"] = h.source
    if h.published:
        d["published"] = h.published
    return d


def failure(engine: str, query: str, message: str, code: str = UNAVAILABLE) -> SearchResult:
    return SearchResult(engine=engine, query=query, error=message, error_code=code)


class SearchEngine(Protocol):
    config: EngineConfig

    async def search(self, req: SearchRequest) -> SearchResult: ...


class EngineError(Exception):
    """Raised inside an engine; its search() turns it into an error result. Messages hold no secrets."""

    def __init__(self, message: str, code: str = UNAVAILABLE, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status  # the provider's HTTP status, when it answered with an error


class RawHit(NamedTuple):
    """A hit as a provider sent it: any field may be missing or of the wrong type until sanitized."""

    title: Any
    url: Any
    snippet: Any
    source: Any = None
    published: Any = None
    ref: Any = None  # the provider's citation marker in the summary (GLM "ref_1")


class Parsed(NamedTuple):
    hits: list[RawHit]
    summary: Any = None
    usage: tuple[int, int] | None = None  # (input, output) tokens, for model engines


def recency_start(recency: str | None, now: datetime | None = None) -> datetime | None:
    """The start of a recency window (oneWeek -> now minus 7 days); None for noLimit."""
    days = RECENCY_DAYS.get(recency or "")
    if days is None:
        return None
    return (now or datetime.now(UTC)) - timedelta(days=days)


def as_dict(x: Any) -> dict:
    return x if isinstance(x, dict) else {}


def as_list(x: Any) -> list:
    return x if isinstance(x, list) else []


def first_str(*values: Any) -> str | None:
    for v in values:
        if isinstance(v, str) and v.strip():
            return v
    return None
