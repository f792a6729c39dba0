"""The `web_fetch` server tool: the model reads one page (or the passages of it that contain a
pattern) through the hardened fetcher (hub/fetcher/), under the conversation's URL rule; its hosted
shapes are Anthropic's `server_tool_use` named web_fetch + `web_fetch_tool_result`, and a Responses
`web_search_call` whose action is `open_page` (`find_in_page` with a pattern)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import msgspec

from ...access.budget import Budget
from ...config.keys import ANONYMOUS
from ...config.settings import WebFetchConfig
from ...core.citations import Source
from ...fetcher import Fetcher, FetchResult, UrlPolicy, normalize, redact, tool_content
from ...fetcher.content import UNTRUSTED_NOTE
from ...fetcher.result import MAX_USES_EXCEEDED, TOO_MANY_REQUESTS, failure
from ...observability import metrics
from ...search.sanitize import truncate
from .. import passages
from ..arguments import ArgumentError, dumps, parse_arguments
from ..base import Hosted, HostedFetch, Rendered, ToolCall, ToolRequest
from ..kind import MESSAGES, OPENROUTER, RESPONSES, Offering, Parts, Reading, ToolKind
from ..offers import domains, loose_count, loose_domains
from .web_search import RESPONSES_TOOLS

log = logging.getLogger("searchhub.tools")
WEB_FETCH = "web_fetch"
HOSTED = Hosted(action="open_page", anthropic_name="web_fetch", anthropic_result="web_fetch_tool_result",
                usage_key="web_fetch_requests")
MIN_CHARS = 200  # the smallest max_chars a call may ask for
MIN_ROOM = 600  # below this many bytes of budget a page is not worth cutting down to fit
CHARS_PER_TOKEN = 4  # Anthropic's max_content_tokens is approximate; so is this
_encode = msgspec.json.Encoder().encode

_URL_KEYS = ("url", "uri", "link", "href", "page", "address", "source")
_MAX_KEYS = ("max_chars", "maxChars", "max_length", "max_characters", "chars", "limit")
_FIND_KEYS = ("find", "pattern", "find_in_page", "search_text", "text_to_find")
_BARE_URL = re.compile(r"^\S+://\S+$")


# --- schema -------------------------------------------------------------------------------------


def web_fetch_tool(name: str = WEB_FETCH) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": (
                "Read a web page and get its main text (HTML, plain text, Markdown, JSON or PDF). Only URLs "
                "from the conversation or from web_search results can be fetched. The page is numbered "
                "like search results; cite it as [n]. With `find`, only the passages containing that text "
                "are returned."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "url": {"type": "string", "description": "The http(s) URL to read, exactly as it appeared."},
                    "max_chars": {"type": "integer", "minimum": MIN_CHARS,
                                  "description": "At most this many characters of page text."},
                    "find": {"type": "string", "description": "Text to look for in the page."},
                },
                "required": ["url"],
            },
        },
    }


# --- arguments ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FetchArgs:
    url: str
    max_chars: int | None = None
    find: str | None = None


def fetch_args(raw: object, *, tool_name: str = WEB_FETCH) -> FetchArgs:
    """Repair a web_fetch call's arguments, or raise ArgumentError for the model."""
    if isinstance(raw, str) and _BARE_URL.match(raw.strip().strip('"')):
        return FetchArgs(raw.strip().strip('"'))
    args = parse_arguments(raw, tool_name=tool_name)
    for key in ("arguments", "parameters", "input", "args"):  # {"name": "web_fetch", "arguments": {...}}
        if not _first(args, _URL_KEYS) and isinstance(args.get(key), dict | str):
            try:
                args = parse_arguments(args[key], tool_name=tool_name)
            except ArgumentError:
                continue
    url = _first(args, _URL_KEYS)
    if isinstance(url, list) and url:
        url = url[0]
    if not isinstance(url, str) or not url.strip():
        raise ArgumentError(f"{tool_name}: the url is missing. Received: `{truncate(dumps(args), 200)}`. "
                            'Send one JSON object, for example {"url": "https://example.com/page"}.')
    find = _first(args, _FIND_KEYS)
    return FetchArgs(url.strip(), _max_chars(_first(args, _MAX_KEYS)),
                     " ".join(find.split())[: passages.MAX_PATTERN] or None if isinstance(find, str) else None)


def _first(args: dict, keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = args.get(key)
        if value not in (None, "", []):
            return value
    return None


def _max_chars(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = int(float(value))
    except (ValueError, OverflowError):
        return None
    return max(MIN_CHARS, number) if number > 0 else None


# --- url_sources: where fetchable URLs may come from -----------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolFilter:
    """One tool-results source of Anthropic's `url_sources`: `all`, `none`, `only` or `except` the named tools."""

    kind: str = "all"
    names: frozenset[str] = frozenset()

    def admits(self, name: str) -> bool:
        if self.kind == "all":
            return True
        if self.kind == "none":
            return False
        return (name in self.names) == (self.kind == "only")


@dataclass(frozen=True, slots=True)
class UrlSources:
    """Which parts of the conversation may contribute the URLs a fetch may ask for (Anthropic's
    `url_sources` on a web_fetch tool; omitted means every source). The conversation is the chat form's
    user and tool messages (`Transcript`); a tool message is a client tool's result or a server tool's
    by its tool_call_id: `origins` maps the ids of the request's history (tool_use -> client, a replayed
    server_tool_use -> server, with the tool's name). Any other tool message is a result of this
    gateway's own loop: a web_fetch result when the id is one of the fetches this request made
    (`fetch_ids`, noted by WebFetch.call), otherwise a web_search result."""

    user_input: bool = True
    server_tool_results: ToolFilter = ToolFilter()
    client_tool_results: ToolFilter = ToolFilter()
    origins: Mapping[str, tuple[bool, str]] = field(default_factory=dict)  # tool_call_id -> (server?, name)
    fetch_ids: set[str] = field(default_factory=set)  # this request's web_fetch calls (filled as they come)

    @property
    def restricts(self) -> bool:
        return not (self.user_input and self.server_tool_results.kind == "all"
                    and self.client_tool_results.kind == "all")

    def origin(self, call_id: object) -> tuple[bool, str]:
        known = self.origins.get(call_id) if isinstance(call_id, str) else None
        if known is not None:
            return known
        return True, WEB_FETCH if call_id in self.fetch_ids else "web_search"

    def admitted(self, messages: Iterable[dict]) -> Iterator[dict]:
        """The messages whose URLs count."""
        for m in messages:
            role = m.get("role")
            if role == "user":
                if self.user_input:
                    yield m
            elif role == "tool":
                server, name = self.origin(m.get("tool_call_id"))
                if (self.server_tool_results if server else self.client_tool_results).admits(name):
                    yield m


@dataclass(frozen=True, slots=True)
class SourcedFetch(HostedFetch):
    """A hosted fetch offer whose client said where fetchable URLs may come from (`url_sources`)."""

    url_sources: UrlSources = field(kw_only=True)


# --- the call -----------------------------------------------------------------------------------


@dataclass(slots=True)
class FetchCall(ToolCall):
    """One server-side fetch."""

    url: str = ""
    max_chars: int | None = None
    find: str | None = None
    result: FetchResult | None = None  # None while running
    text: str = ""  # the document text the model read (citations index into it)
    citations: bool = False  # the client asked for char_location citations
    HOSTED: ClassVar[Hosted] = HOSTED

    @property
    def key(self) -> str:
        return f"{normalize(self.url) or self.url}|{(self.find or '').casefold()}"

    @property
    def label(self) -> str:
        return f"searched {self.url} for '{self.find}'" if self.find else f"fetched {self.url}"

    @property
    def ran(self) -> bool:
        return getattr(self.result, "error_code", None) != MAX_USES_EXCEEDED

    @property
    def page_url(self) -> str:
        result = self.result
        return (result.final_url or result.url) if result is not None and result.ok else self.url

    def shown_input(self) -> dict:
        return {"url": self.url}

    def action(self, *, done: bool) -> dict:
        if self.find:
            return {"type": "find_in_page", "url": self.url, "pattern": self.find}
        return {"type": HOSTED.action, "url": self.url}

    def hosted_content(self) -> dict:
        result = self.result
        if result is None or not result.ok:
            return {"type": "web_fetch_tool_result_error", "error_code": getattr(result, "error_code", None)
                    or "unavailable"}
        return {
            "type": "web_fetch_result",
            "url": self.url,
            "retrieved_at": result.retrieved_at,
            "content": {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": self.text},
                "title": result.title,
                "citations": {"enabled": self.citations},
            },
        }

    def pages(self) -> Iterable[tuple[str, str | None, str]]:
        if not self.ok:
            return ()
        assert self.result is not None
        return ((self.page_url, self.result.title, truncate(self.text, 300)),)

    def trace_fields(self) -> dict:
        """The URL without its query string (it may carry tokens), never the page text."""
        fields: dict[str, Any] = {"url": redact(self.url)}
        if self.find:
            fields["query"] = self.find
        r = self.result
        if r is not None:
            fields.update(outcome=r.error_code, error=r.error, cached=r.cached)
        return fields

    @property
    def document(self) -> bool:
        return self.ok

    def citation(self, claim: str, document_index: int) -> dict | None:
        """An Anthropic `char_location` citation into the fetched document for a claim it supports (the
        best-matching sentence, else the document's start); None when citations were not asked for."""
        if not self.citations or not self.ok or not self.text:
            return None
        span = passages.locate(self.text, claim)
        start, end = span if span is not None else (0, min(len(self.text), passages.MAX_CITED))
        return {"type": "char_location", "cited_text": self.text[start:end], "document_index": document_index,
                "document_title": self.result.title if self.result else None,
                "start_char_index": start, "end_char_index": end}


# --- the tool -----------------------------------------------------------------------------------


class WebFetch:
    """Built once per config, with the fetcher and the operator's URL policy."""

    call_type = FetchCall

    def __init__(self, config: WebFetchConfig, fetcher: Fetcher, policy: UrlPolicy, budget: Budget | None = None) -> None:
        self.name = WEB_FETCH
        self.config = config
        self.fetcher = fetcher
        self.policy = policy
        self.budget = budget  # the calling key's fetchesPerDay (hub/access/budget.py)
        self._schema = web_fetch_tool(self.name)

    def offered(self, request: ToolRequest) -> bool:
        """`always`: beside every web_search the gateway injects; `hosted`: only when the client's hosted
        tools include a fetch (Anthropic web_fetch, Responses web_search); `never`: not at all."""
        offer = self.config.offer_for(request.provider)
        if not offer.enabled or offer.inject_policy == "never":
            return False
        if request.client_hosted:
            return WEB_FETCH in request.hosted
        return offer.inject_policy == "always"

    def max_uses(self, request: ToolRequest) -> int | None:
        limit = self.config.offer_for(request.provider).max_fetches_per_turn
        hosted = request.hosted.get(WEB_FETCH)
        return min(limit, hosted.max_uses) if hosted is not None and hosted.max_uses is not None else limit

    def schema(self, request: ToolRequest) -> dict:
        return self._schema

    def call(self, call_id: str, raw_arguments: Any, request: ToolRequest) -> FetchCall:
        args = fetch_args(raw_arguments, tool_name=self.name)
        hosted = request.hosted.get(WEB_FETCH)
        cap = args.max_chars
        if hosted is not None and hosted.max_content_tokens:
            tokens_cap = max(MIN_CHARS, hosted.max_content_tokens * CHARS_PER_TOKEN)
            cap = min(cap, tokens_cap) if cap else tokens_cap
        if isinstance(hosted, SourcedFetch):
            hosted.url_sources.fetch_ids.add(call_id)
        return FetchCall(call_id, args.url, cap, args.find, citations=bool(hosted and hosted.citations))

    async def run(self, call: FetchCall, request: ToolRequest) -> None:
        denial = await self.budget.take_fetch(request.key) if self.budget is not None else None
        if denial is not None:
            if request.bill is not None:
                request.bill.denied = denial
            metrics.SEARCH_BUDGET_DENIALS.labels(request.key.name if request.key else ANONYMOUS, denial.limit).inc()
            call.result = failure(call.url, denial.message, TOO_MANY_REQUESTS)
            return
        hosted = request.hosted.get(WEB_FETCH)
        policy, messages = self.policy, request.transcript.messages
        if isinstance(hosted, SourcedFetch) and hosted.url_sources.restricts:
            # the client's url_sources narrow the prior-context rule, even where the operator turned it off
            policy, messages = replace(policy, require_prior_context=True), hosted.url_sources.admitted(messages)
        scope = policy.scope(hosted.allowed_domains if hosted else (), hosted.blocked_domains if hosted else ())
        scope.remember_messages(messages)
        try:
            call.result = await self.fetcher.fetch(call.url, scope, use_cache=hosted.use_cache if hosted else True)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # the fetcher returns errors as data; this is a bug, not a reason to fail the turn
            log.error("fetch raised %s (a bug: the fetcher returns errors as data)", type(e).__name__)
            call.result = failure(call.url, "the fetch failed unexpectedly")

    def refuse(self, call: FetchCall, code: str, message: str) -> None:
        metrics.WEB_FETCH_BLOCKED.labels("max_uses").inc()
        call.result = failure(call.url, message, code)

    def render(self, call: FetchCall, first_n: int, room: int | None = None) -> Rendered:
        result = call.result
        if result is None or not result.ok:
            code = getattr(result, "error_code", None) or "unavailable"
            message = getattr(result, "error", None) or "the fetch failed"
            return Rendered(_encode({"url": call.url, "error": message, "error_code": code}).decode(), [])
        text = result.text
        if call.find:
            spans = passages.find(text, call.find)
            text = passages.excerpts(text, spans) if spans else ""
        cut = call.max_chars is not None and len(text) > call.max_chars
        if cut:
            text = truncate(text, call.max_chars or 0)
        out = tool_content(result, n=first_n, text=text, truncated=cut, find=call.find)
        if room is not None and len(out.encode()) > room >= MIN_ROOM:
            text, out = _fit(result, first_n, text, call.find, room)
        call.text = text
        source = Source(first_n, call.page_url, result.title or call.page_url, truncate(text, 300))
        return Rendered(out, [source])

    def replay(self, shown_input: dict, content: Any) -> tuple[dict, str]:
        return replay(shown_input, content)


def _fit(result: FetchResult, n: int, text: str, find: str | None, room: int) -> tuple[str, str]:
    """Cut the page text until the whole tool content fits in `room` bytes."""

    def render(part: str) -> str:
        return tool_content(result, n=n, text=part, truncated=True, find=find)

    overhead = len(render("").encode())
    keep = len(text)
    while keep > 0:
        # the JSON-encoded text is at least as long as its UTF-8 bytes: scale the cut by the overshoot
        encoded = len(_encode(text[:keep]))
        if encoded <= room - overhead:
            break
        keep = max(0, min(keep - 1, keep * (room - overhead) // max(encoded, 1) - 2))
    cut = truncate(text, keep) if keep < len(text) else text
    out = render(cut)
    while len(out.encode()) > room and cut:  # the ellipsis may tip it over
        cut = cut[:-8]
        out = render(cut)
    return cut, out


def replay(shown_input: dict, content: Any) -> tuple[dict, str]:
    """A replayed `web_fetch_tool_result` as the fetch call and the tool message the model saw."""
    url = shown_input.get("url") if isinstance(shown_input.get("url"), str) else ""
    if not isinstance(content, dict) or content.get("type") != "web_fetch_result":
        code = content.get("error_code") if isinstance(content, dict) and isinstance(content.get("error_code"),
                                                                                      str) else "unavailable"
        return {"url": url}, _encode({"url": url, "error": f"web fetch failed ({code})", "error_code": code}).decode()
    url = content.get("url") if isinstance(content.get("url"), str) else url
    doc = content.get("content") if isinstance(content.get("content"), dict) else {}
    title = doc.get("title") if isinstance(doc.get("title"), str) else None
    payload = {"note": UNTRUSTED_NOTE, "url": url, "title": title, "retrieved_at": content.get("retrieved_at"),
               "text": _document_text(doc.get("source"))}
    return {"url": url}, _encode(payload).decode()


def _document_text(source: object) -> str:
    """The text of a replayed document's source: text, content blocks, a PDF (base64) or a URL."""
    if not isinstance(source, dict):
        return ""
    kind = source.get("type")
    if kind == "text" and isinstance(source.get("data"), str):
        return source["data"]
    if kind == "content" and isinstance(source.get("content"), list):
        return "\n\n".join(b["text"] for b in source["content"] if isinstance(b, dict) and isinstance(b.get("text"), str))
    if kind == "base64":
        data = source.get("data")
        size = len(data) * 3 // 4 if isinstance(data, str) else 0
        return f"[{source.get('media_type') or 'binary'} document, about {size} bytes; its text is not available]"
    if kind == "url" and isinstance(source.get("url"), str):
        return f"[document at {source['url']}]"
    return ""


def _build(parts: Parts) -> WebFetch | None:
    """Only with webFetch enabled and the fetcher built (hub/runtime.py)."""
    if parts.fetch is None or not parts.config.web_fetch.enabled:
        return None
    return WebFetch(parts.config.web_fetch, *parts.fetch, parts.budget)


# --- the client's hosted fetch tool -------------------------------------------------------------

OPENROUTER_TOOL = "openrouter:web_fetch"


def _source(value: Any) -> ToolFilter:
    """One tool-results source of `url_sources`: "all" / "none", or only / except the named tools (that
    they are the request's tools is checked at decode)."""
    if value is None:
        return ToolFilter()
    kind = value if isinstance(value, str) else value.type
    if kind in ("all", "none"):
        return ToolFilter(kind)
    return ToolFilter(kind, frozenset(ref.name for ref in value.tools or ()))


def _from_messages(tool: Any, reading: Reading) -> HostedFetch:
    """An Anthropic web_fetch_* server tool (hub/protocols/messages/wire.py WebFetchTool; every version:
    the later ones add `use_cache`; `url_sources` narrows where fetchable URLs may come from, UrlSources
    above, which keeps the history's tool calls the translation collects in `reading.origins`)."""
    fields = dict(
        allowed_domains=domains(tool.allowed_domains), blocked_domains=domains(tool.blocked_domains),
        max_uses=tool.max_uses, citations=tool.citations is not None and tool.citations.enabled is True,
        max_content_tokens=tool.max_content_tokens, use_cache=tool.use_cache is not False,
    )
    raw = tool.url_sources
    if raw is None:
        return HostedFetch(**fields)
    reading.uses_origins = True
    user = raw.user_input
    return SourcedFetch(**fields, url_sources=UrlSources(
        user_input=user is None or (user if isinstance(user, str) else user.type) == "all",
        server_tool_results=_source(raw.server_tool_results),
        client_tool_results=_source(raw.client_tool_results),
        origins=reading.origins,
    ))


def _from_responses(tool: Any, reading: Reading) -> HostedFetch:
    """OpenAI's built-in web_search opens pages too (open_page actions): the same domain filters and
    the request's max_tool_calls apply."""
    filters = tool.filters
    return HostedFetch(allowed_domains=tuple(filters.allowed_domains or ()) if filters is not None else (),
                       blocked_domains=tuple(filters.blocked_domains or ()) if filters is not None else (),
                       max_uses=reading.max_tool_calls)


def _from_openrouter(params: dict, reading: Reading) -> HostedFetch:
    """`openrouter:web_fetch` parameters (hub/injection/openrouter.py)."""
    return HostedFetch(
        allowed_domains=loose_domains(params.get("allowed_domains")),
        blocked_domains=loose_domains(params.get("blocked_domains")),
        max_uses=loose_count(params.get("max_uses")),
        max_content_tokens=loose_count(params.get("max_content_tokens")),
    )


TOOL = ToolKind(WEB_FETCH, build=_build, order=10, hosted=HOSTED, offers={
    MESSAGES: Offering(_from_messages, prefix="web_fetch_"),
    RESPONSES: Offering(_from_responses, names=RESPONSES_TOOLS),
    OPENROUTER: Offering(_from_openrouter, names=frozenset({OPENROUTER_TOOL})),
})
