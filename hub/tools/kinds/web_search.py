"""The `web_search` server tool: the schema offered to the model, argument repair, execution through
the search service, the text the model receives, and its hosted shapes (Responses `web_search_call`
with a `search` action, Anthropic `server_tool_use` + `web_search_tool_result`)."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

from msgspec.structs import replace

from ...access.budget import Budget
from ...config.settings import WebSearchConfig
from ...fetcher.reading import PageReader
from ...observability import metrics
from ...observability.trace import PageVisit
from ...search import render
from ...search.base import BUDGET_EXHAUSTED, RECENCY, Hit, SearchRequest, SearchResult, failure
from ...search.metered import MeteredSearch
from ...search.service import SearchService
from ..arguments import ArgumentError, dumps, message, parse_arguments
from ..base import Hosted, HostedSearch, Rendered, ToolCall, ToolRequest
from ..kind import MESSAGES, OPENROUTER, RESPONSES, Offering, Parts, Reading, ToolKind
from ..offers import domains, location, loose_count, loose_domains

log = logging.getLogger("searchhub.tools")
WEB_SEARCH = "web_search"
MAX_COUNT = 50
HOSTED = Hosted(action="search", anthropic_name="web_search", anthropic_result="web_search_tool_result",
                usage_key="web_search_requests")
# error_code values Anthropic's web_search_tool_result_error allows
ERROR_CODES = frozenset({"invalid_tool_input", "unavailable", "max_uses_exceeded", "too_many_requests",
                         "query_too_long", "request_too_large"})

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_CONTEXT_COUNTS = {"low": 3, "medium": 5, "high": 10}


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


# --- arguments ----------------------------------------------------------------------------------


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


def search_args(raw: object, *, tool_name: str = WEB_SEARCH) -> SearchRequest:
    """Repair a web_search call's raw arguments into the search it asks for (query, engine as named,
    recency one of RECENCY, count 1..MAX_COUNT), or raise ArgumentError for the model."""
    args = _search_dict(raw, tool_name)
    query = _query(args)
    if not query:
        raise ArgumentError(message(tool_name, "", "the query is missing or empty", dumps(args)))
    return SearchRequest(
        query,
        count=_count(_first(args, _COUNT_KEYS)),
        recency=_recency(_first(args, _RECENCY_KEYS)),
        engine=_engine(_first(args, _ENGINE_KEYS)),
    )


def _search_dict(raw: object, tool_name: str) -> dict:
    try:
        args = parse_arguments(raw, tool_name=tool_name)
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
                    unwrapped = parse_arguments(inner, tool_name=tool_name)
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


# --- the call -----------------------------------------------------------------------------------


_QUOTES = "\"'`“”‘’ "


@dataclass(slots=True)
class SearchCall(ToolCall):
    """One server-side search: the search asked for, its engine resolved (WebSearch.call)."""

    request: SearchRequest
    result: SearchResult | None = None  # None while running
    chosen_by: str = "default"  # how the engine was chosen: model | default | google | baidu | fallback
    HOSTED: ClassVar[Hosted] = HOSTED

    @property
    def query(self) -> str:
        return self.request.query

    @property
    def engine(self) -> str | None:
        """The engine the search goes to (as named, when it names none configured)."""
        return self.request.engine

    @property
    def key(self) -> str:
        """The same search, however the model wrote it: engine resolved, query case- and space-folded."""
        query = " ".join(self.query.casefold().split()).strip(_QUOTES)
        return f"{query}|{self.engine or ''}"

    @property
    def label(self) -> str:
        return f"searched for '{self.query}'"

    @property
    def ran(self) -> bool:
        return getattr(self.result, "error_code", None) != "max_uses_exceeded"

    def shown_input(self) -> dict:
        return {"query": self.query}

    def action(self, *, done: bool) -> dict:
        """A failed search is still `completed`, with no sources (docs/responses.md). `queries` lists every
        query of the call (one: a call runs one query), beside `query`."""
        if not done:
            return {"type": HOSTED.action, "query": self.query, "queries": [self.query]}
        result = self.result
        sources = [{"type": "url", "url": h.url} for h in result.hits if h.url] if result is not None and result.ok else []
        return {"type": HOSTED.action, "query": self.query, "queries": [self.query], "sources": sources}

    def hosted_content(self) -> list[dict] | dict:
        result = self.result
        if result is None or not result.ok:
            return {"type": "web_search_tool_result_error", "error_code": error_code(result)}
        out = []
        for hit in result.hits:
            if not hit.url:
                continue
            title = hit.title or hit.url
            out.append({
                "type": "web_search_result",
                "url": hit.url,
                "title": title,
                "encrypted_content": encode_hit(hit.url, title, hit.snippet or ""),
                "page_age": hit.published or None,
            })
        return out

    def pages(self) -> Iterable[tuple[str, str | None, str]]:
        result = self.result
        return ((h.url, h.title, h.snippet or "") for h in (result.hits if result is not None else ()) if h.url)

    def trace_fields(self) -> dict:
        r = self.result
        fields = {"engine": (r.engine if r is not None else None) or self.engine, "chosen_by": self.chosen_by,
                  "query": self.query}
        if r is not None:
            fields.update(outcome=r.error_code, error=r.error, hits=len(r.hits) if r.ok else None, cached=r.cached)
            if r.pages:
                fields["pages"] = [PageVisit(p.url, p.outcome, p.chars, round(p.ms, 1), p.cached) for p in r.pages]
        return fields


def error_code(result: SearchResult | None) -> str:
    code = getattr(result, "error_code", None)
    if code == "invalid_input":
        return "invalid_tool_input"
    if code == BUDGET_EXHAUSTED:  # the key's budget: the nearest code Anthropic's shape has
        return "too_many_requests"
    return code if code in ERROR_CODES else "unavailable"


def encode_hit(url: str, title: str, snippet: str) -> str:
    """Our `encrypted_content`: an opaque payload a replayed block is turned back into text from."""
    raw = json.dumps({"url": url, "title": title, "snippet": snippet}, ensure_ascii=False)
    return base64.b64encode(raw.encode()).decode()


def decode_hit(encrypted_content: object) -> dict | None:
    """Our own encrypted_content back to {url, title, snippet}; None for anyone else's."""
    if not isinstance(encrypted_content, str) or not encrypted_content:
        return None
    try:
        value = json.loads(base64.b64decode(encrypted_content, validate=True))
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


# --- the tool -----------------------------------------------------------------------------------


class WebSearch:
    """Built once per config; a call only looks things up."""

    call_type = SearchCall

    def __init__(self, config: WebSearchConfig, search: SearchService, budget: Budget | None = None,
                 reader: PageReader | None = None) -> None:
        self.name = config.tool_name
        self.config = config
        self.reader = reader
        self.search = search
        self._engines = bool(config.engines)
        self.budget = budget
        engine_required = config.default_engine is None and len(config.engines) > 1
        # the engine lists narrowed by intent, decided here once: (google, baidu) -> schema
        self._schemas: dict[tuple[bool, bool], dict] = {}
        for google, baidu in ((False, False), (True, False), (False, True)):
            engines = search.engines(google_only=google, baidu_only=baidu)
            self._schemas[(google, baidu)] = web_search_tool(
                [(e.id, e.description) for e in engines], engine_required=engine_required, name=self.name)

    def offered(self, request: ToolRequest) -> bool:
        """Whenever the gateway injects its tools and has an engine, unless the client's hosted tools
        leave search out (an Anthropic client that offers only web_fetch)."""
        return self._engines and (WEB_SEARCH in request.hosted or not request.client_hosted)

    def max_uses(self, request: ToolRequest) -> int | None:
        hosted = request.hosted.get(WEB_SEARCH)
        return hosted.max_uses if hosted is not None else None

    def schema(self, request: ToolRequest) -> dict:
        return self._schemas[(request.google and not request.baidu, request.baidu)]

    def call(self, call_id: str, raw_arguments: Any, request: ToolRequest) -> SearchCall:
        return self.prepare(call_id, search_args(raw_arguments, tool_name=self.name), request)

    def prepare(self, call_id: str, asked: SearchRequest, request: ToolRequest) -> SearchCall:
        """The search a call asks for, completed from the request (the hosted tool's domains, location,
        result count and engine; the intent's preferred index) and its engine resolved, once."""
        hosted: HostedSearch | None = request.hosted.get(WEB_SEARCH)
        engine, chosen_by = self.search.choose_engine(
            asked.engine, preferred=hosted.engine if hosted is not None else None,
            google=request.google, baidu=request.baidu)
        count = asked.count or (hosted.max_results if hosted is not None else None) or request.count_hint or (
            _CONTEXT_COUNTS.get(hosted.context_size or "") if hosted is not None else None)
        req = replace(
            asked, engine=engine, count=count,
            allowed_domains=hosted.allowed_domains if hosted is not None else (),
            blocked_domains=hosted.blocked_domains if hosted is not None else (),
            user_location=(hosted.user_location if hosted is not None else None) or request.user_location,
        )
        return SearchCall(call_id, req, chosen_by=chosen_by)

    async def run(self, call: SearchCall, request: ToolRequest) -> None:
        search = MeteredSearch(self.search, self.budget, request.key, request.bill) if self.budget else self.search
        try:
            call.result = await search.search(call.request)
            if self.reader is not None:
                reading = self.config.limits_for(request.provider).read_pages.sized(request.context_size)
                call.result = await self.reader.read(call.result, call.query, reading, request.key)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # engines return errors as data; this is a bug, not a reason to fail the turn
            log.error("search raised %s (a bug: engines return errors as data)", type(e).__name__)
            call.result = failure(call.engine or "", call.query, "search failed unexpectedly")
        call.chosen_by = record_selection(self.search, call.engine, call.result, call.chosen_by)

    def refuse(self, call: SearchCall, code: str, message: str) -> None:
        call.result = failure(call.engine or "", call.query, message, code)

    def render(self, call: SearchCall, first_n: int, room: int | None = None) -> Rendered:
        if call.result is None:
            return Rendered(render.error_text("search failed"), [])
        text, sources = render.tool_text(call.result, first_n)
        return Rendered(text, sources)

    def replay(self, shown_input: dict, content: Any) -> tuple[dict, str]:
        return replay(shown_input, content)


def replay(shown_input: dict, content: Any) -> tuple[dict, str]:
    """A replayed `web_search_tool_result` as the search call and the tool message the model saw."""
    query = shown_input.get("query")
    query = query if isinstance(query, str) else ""
    if isinstance(content, dict):
        code = content.get("error_code") if isinstance(content.get("error_code"), str) else "unavailable"
        return {"query": query}, render.error_text(f"web search failed ({code})")
    hits = []
    for item in content if isinstance(content, list) else ():
        if not isinstance(item, dict):
            continue
        hit = decode_hit(item.get("encrypted_content")) or {}
        url = item.get("url") or hit.get("url")
        if not isinstance(url, str) or not url:
            continue
        title = item.get("title") or hit.get("title") or ""
        published = item.get("page_age") if isinstance(item.get("page_age"), str) else None
        hits.append(Hit(str(title), url, str(hit.get("snippet") or ""), published=published or None))
    if not hits:
        return {"query": query}, render.error_text("no results")
    text, _ = render.tool_text(SearchResult("replayed", query, tuple(hits)), 1)
    return {"query": query}, text


def record_selection(search: SearchService, engine: str | None, result: SearchResult, source: str) -> str:
    """Count how a search's engine was chosen (`searchhub_engine_selections_total`); `fallback` when
    another engine than the one it went to (its resolved `engine`) answered."""
    answered = result.engine if search.configured(result.engine) else None
    if answered is not None and search.configured(engine) and answered != engine:
        source = "fallback"
    metrics.child(metrics.ENGINE_SELECTIONS, answered or "none", source).inc()
    return source


def _build(parts: Parts) -> WebSearch:
    return WebSearch(parts.config.web_search, parts.search, parts.budget, parts.reader)


# --- the client's hosted search tool ------------------------------------------------------------

# OpenAI's built-in search tool (Responses), every name it has had
RESPONSES_TOOLS = frozenset({"web_search", "web_search_2025_08_26", "web_search_preview",
                             "web_search_preview_2025_03_11"})
OPENROUTER_TOOL = "openrouter:web_search"
_OPENROUTER_AUTO_ENGINES = ("native", "auto", "exa", "")  # OpenRouter's engines: all mean "the gateway's own"


def _from_messages(tool: Any, reading: Reading) -> HostedSearch:
    """An Anthropic web_search_* server tool (hub/protocols/messages/wire.py WebSearchTool)."""
    return HostedSearch(
        allowed_domains=domains(tool.allowed_domains), blocked_domains=domains(tool.blocked_domains),
        max_uses=tool.max_uses, user_location=location(tool.user_location, ("city", "region", "country", "timezone")),
    )


def _from_responses(tool: Any, reading: Reading) -> HostedSearch:
    """The Responses built-in web_search tool (hub/protocols/responses/wire.py WebSearchTool); the
    request's max_tool_calls caps its calls. `external_web_access: false` (cache only) still searches
    live: the gateway has no offline index."""
    filters = tool.filters
    return HostedSearch(
        allowed_domains=tuple(filters.allowed_domains or ()) if filters is not None else (),
        blocked_domains=tuple(filters.blocked_domains or ()) if filters is not None else (),
        max_uses=reading.max_tool_calls,
        user_location=location(tool.user_location, ("country", "city", "region", "timezone")),
        context_size=tool.search_context_size,
    )


def _from_openrouter(params: dict, reading: Reading) -> HostedSearch:
    """`openrouter:web_search` parameters (hub/injection/openrouter.py)."""
    context = params.get("search_context_size")
    engine = params.get("engine")
    return HostedSearch(
        allowed_domains=loose_domains(params.get("allowed_domains")),
        blocked_domains=loose_domains(params.get("excluded_domains")),
        max_uses=loose_count(params.get("max_uses")),
        context_size=context if context in ("low", "medium", "high") else None,
        max_results=loose_count(params.get("max_results")),
        engine=engine if isinstance(engine, str) and engine not in _OPENROUTER_AUTO_ENGINES else None,
    )


TOOL = ToolKind(WEB_SEARCH, build=_build, order=0, hosted=HOSTED, offers={
    MESSAGES: Offering(_from_messages, prefix="web_search_"),
    RESPONSES: Offering(_from_responses, names=RESPONSES_TOOLS),
    OPENROUTER: Offering(_from_openrouter, names=frozenset({OPENROUTER_TOOL})),
})
