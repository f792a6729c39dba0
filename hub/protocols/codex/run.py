"""One Codex web search call, run: its searches through the caller's metered search (budget, cost,
cache, failover), its pages through the direct fetcher (the SSRF policy and the key's fetch
budget), ref ids through the thread's entry in the state store. Never raises for anything a
client, an engine or a site can do: every failure is a line of the answer.

Commands run in phases so that later ones can use earlier ones' results in the same call:
searches (concurrently), then `open`, then `click`, then `find`; a page is fetched once per call
whatever number of commands read it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...access.budget import Denial
from ...config.settings import ReadPages
from ...fetcher.direct import DirectFetch
from ...fetcher.policy import DomainRules
from ...fetcher.reading import PageReader
from ...fetcher.result import FetchResult, Refusal
from ...fetcher.urls import parse
from ...search.base import BUDGET_EXHAUSTED, INVALID_TOOL_INPUT, QUERY_TOO_LONG, SearchRequest, SearchResult
from ...search.metered import MeteredSearch
from ...search.sanitize import domain_matches
from ...store.base import Store
from . import render
from .pages import Page, matches, page_of
from .refs import REF_ID, Ref, Thread, begin, commit, ref, thread_key
from .request import Call, Click, Find, Malformed, Open, Problem, Search, Time, Unsupported, decode

log = logging.getLogger("searchhub.codex")
MIN_PAGE_CHARS = 400


@dataclass(frozen=True, slots=True)
class Parts:
    """What a call runs on, on behalf of one caller: its metered search (key, budget, bill), the
    direct fetcher (None when webFetch is off), the state store and how long a thread is kept."""

    search: MeteredSearch
    fetch: DirectFetch | None
    store: Store
    ttl_s: float
    reader: PageReader | None = None  # reads the top result pages of a search (webSearch.readPages)
    reading: ReadPages = ReadPages()


async def answer(body: Any, parts: Parts, *, now: datetime | None = None) -> str:
    """The `output` text for one call's body (a decoded JSON value)."""
    try:
        call = decode(body)
    except Malformed as e:
        return f"searchhub could not run this web.run call: {e}."
    return await _Run(call, parts, now).run()


def domains_for(asked: Iterable[str], allowed: tuple[str, ...]) -> tuple[str, ...]:
    """A query's own domains, kept within the settings' allowed domains when there are any."""
    asked = tuple(asked)
    if not asked:
        return allowed
    if not allowed:
        return asked
    kept = tuple(d for d in asked if domain_matches(d, allowed))
    return kept or allowed


Fetched = FetchResult | Denial | str  # a str: why nothing was fetched


class _Run:
    def __init__(self, call: Call, parts: Parts, now: datetime | None) -> None:
        self.call, self.parts, self.now = call, parts, now
        self.length = call.length
        self.key = thread_key(parts.search.key_name, call.thread) if call.thread else None
        self.turn = 0
        self.known: dict[str, Ref] = {}
        self.known_links: dict[str, list[str]] = {}
        self.new_refs: dict[str, Ref] = {}
        self.new_links: dict[str, list[str]] = {}
        self.fetched: dict[str, Fetched] = {}  # by URL: a page is fetched once per call
        self.pages: dict[str, Page] = {}
        self.searches = 0
        self.opened = 0
        self.rules = DomainRules.build(call.allowed, call.blocked)
        self.sections: dict[int, str] = {}
        self.pending: dict[int, Callable[[int], str]] = {}  # page sections, sized once the rest is known

    async def run(self) -> str:
        thread = await begin(self.parts.store, self.key, self.parts.ttl_s) if self.key else Thread()
        self.turn = thread.turns
        self.known, self.known_links = thread.refs, thread.links
        ops = list(enumerate(self.call.ops))
        await self._searches([(i, op) for i, op in ops if isinstance(op, Search)])
        await self._opens([(i, op) for i, op in ops if isinstance(op, Open)])
        await self._clicks([(i, op) for i, op in ops if isinstance(op, Click)])
        await self._finds([(i, op) for i, op in ops if isinstance(op, Find)])
        for i, op in ops:
            if isinstance(op, Time):
                self.sections[i] = render.time_line(op.offset, self.now)
            elif isinstance(op, Unsupported):
                self.sections[i] = render.unsupported_line(op.command)
            elif isinstance(op, Problem):
                self.sections[i] = f"{op.command}: this command could not be read: {op.message}"
        if self.key:
            await commit(self.parts.store, self.key, self.parts.ttl_s, self.new_refs, self.new_links)
        return self._text()

    def _text(self) -> str:
        header = any(isinstance(op, Search | Open | Click | Find) for op in self.call.ops)
        fixed = render.assemble(list(self.sections.values()), self.call.notes, 10**9, header=header)
        if self.pending:
            share = max(MIN_PAGE_CHARS, (self.call.budget - len(fixed) - 4 * len(self.pending)) // len(self.pending))
            for i, make in self.pending.items():
                self.sections[i] = make(share)
        ordered = [self.sections[i] for i in sorted(self.sections)]
        return render.assemble(ordered, self.call.notes, self.call.budget, header=header)

    # ---------------------------------------------------------------- search_query

    async def _searches(self, ops: list[tuple[int, Search]]) -> None:
        results = await asyncio.gather(*(self._search(op) for _, op in ops))
        for (i, op), result in zip(ops, results, strict=True):
            if isinstance(result, str):
                self.sections[i] = render.search_failed(op, result)
            elif not result.ok:
                self.sections[i] = render.search_failed(op, _search_error(result))
            else:
                ids = []
                for hit in result.hits:
                    ref_id = f"turn{self.turn}search{self.searches}"
                    self.searches += 1
                    self.new_refs[ref_id] = ref(hit.url, hit.title)
                    ids.append(ref_id)
                self.sections[i] = render.search_block(op, result, ids, self.length)

    async def _search(self, op: Search) -> SearchResult | str:
        try:
            result = await self.parts.search.search(SearchRequest(
                op.query, render.RESULTS[self.length], op.recency,
                allowed_domains=domains_for(op.domains, self.call.allowed), blocked_domains=self.call.blocked,
                user_location=self.call.user_location))
            if self.parts.reader is not None:
                reading = self.parts.reading.sized(self.call.context_size)
                result = await self.parts.reader.read(result, op.query, reading, self.parts.search.key)
            return result
        except Exception:
            log.exception("codex search: the search failed")
            return "the search failed inside the gateway (logged there)"

    # ---------------------------------------------------------------- open, click, find

    def _resolve(self, ref_id: str) -> tuple[str | None, str | None, str]:
        """(url, title, why not): a ref id of this thread, or an http(s) URL as it is."""
        known = self.new_refs.get(ref_id) or self.known.get(ref_id)
        if known is not None:
            return known.url, known.title or None, ""
        if ref_id[:8].lower().startswith(("http://", "https://")):
            return ref_id, None, ""
        shown = render.quoted(ref_id, 80)
        if REF_ID.match(ref_id):
            why = "this conversation has no such ref id" if self.key else \
                "ref ids are kept per conversation and this call had no thread id"
            hours = self.parts.ttl_s / 3600
            return None, None, (f"unknown ref id {shown}: {why} (they expire {hours:g} h after the "
                                "conversation's last search); search again or open the URL itself")
        return None, None, f"{shown} is neither a ref id from an earlier result (like turn0search0) nor an http(s) URL"

    async def _fetch_all(self, urls: Iterable[str]) -> None:
        todo = [u for u in dict.fromkeys(urls) if u not in self.fetched]
        for url, got in zip(todo, await asyncio.gather(*(self._fetch(u) for u in todo)), strict=True):
            self.fetched[url] = got

    async def _fetch(self, url: str) -> Fetched:
        if self.parts.fetch is None:
            return "reading pages is turned off on this gateway (webFetch.enabled is false)"
        target = parse(url)
        if isinstance(target, Refusal):
            return target.message
        refusal = self.rules.refuses(target.host, "search settings")
        if refusal is not None:
            return refusal.message
        try:
            return await self.parts.fetch.fetch(url, self.parts.search.key, self.parts.search.bill)
        except Exception:
            log.exception("codex search: the fetch failed")
            return "the fetch failed inside the gateway (logged there)"

    def _page(self, url: str) -> tuple[FetchResult | None, Page | None, str]:
        got = self.fetched.get(url, "not fetched")
        if isinstance(got, str):
            return None, None, got
        if isinstance(got, Denial):
            return None, None, f"not fetched: {got.message}"
        if not got.ok:
            return None, None, got.error or "the page could not be read"
        page = self.pages.get(url)
        if page is None:
            page = self.pages[url] = page_of(got.text, got.final_url or url, got.links)
        return got, page, ""

    def _show(self, i: int, url: str, start: int, *, via: str = "", also: str | None = None,
              title: str | None = None) -> str:
        """Make the fetched `url` section i as a new fetch ref id; '' when shown, else why not."""
        result, page, why = self._page(url)
        if result is None or page is None:
            return why
        ref_id = f"turn{self.turn}fetch{self.opened}"
        self.opened += 1
        shown_url = result.final_url or url
        title = result.title or title  # a page without a title keeps its search result's
        self.new_refs[ref_id] = ref(shown_url, title)
        self.new_links[ref_id] = list(page.links)
        if also is not None and also != ref_id:
            self.new_links[also] = list(page.links)  # a click on the ref id that was opened works too
        length, truncated = self.length, result.truncated
        self.pending[i] = lambda room: render.page_block(ref_id, shown_url, title, page, start, length, room,
                                                         via=via, truncated=truncated)
        return ""

    async def _opens(self, ops: list[tuple[int, Open]]) -> None:
        urls: dict[int, tuple[str, str | None]] = {}
        for i, op in ops:
            url, title, why = self._resolve(op.ref)
            if url is None:
                self.sections[i] = f"open {render.quoted(op.ref, 80)}: {why}"
            else:
                urls[i] = (url, title)
        await self._fetch_all(url for url, _ in urls.values())
        for i, op in ops:
            if i not in urls:
                continue
            url, title = urls[i]
            also = op.ref if op.ref in self.known or op.ref in self.new_refs else None
            if why := self._show(i, url, op.lineno, also=also, title=title):
                self.sections[i] = f"open {render.quoted(op.ref, 80)}: {why}"

    def _links(self, ref_id: str) -> list[str] | None:
        links = self.new_links.get(ref_id)
        return links if links is not None else self.known_links.get(ref_id)

    async def _clicks(self, ops: list[tuple[int, Click]]) -> None:
        sources: dict[int, str] = {}  # pages whose links this call has not seen yet
        for i, op in ops:
            if self._links(op.ref) is None:
                url, _, why = self._resolve(op.ref)
                if url is None:
                    self.sections[i] = f"click {render.quoted(op.ref, 80)}: {why}"
                else:
                    sources[i] = url
        await self._fetch_all(sources.values())
        targets: dict[int, str] = {}
        for i, op in ops:
            if i in self.sections:
                continue
            links = self._links(op.ref)
            if links is None:
                _, page, why = self._page(sources[i])
                if page is None:
                    self.sections[i] = f"click {render.quoted(op.ref, 80)}: {why}"
                    continue
                links = self.new_links[op.ref] = list(page.links)
            if not 0 <= op.link < len(links):
                have = f"links 0-{len(links) - 1}" if links else "no numbered links"
                self.sections[i] = f"click {render.quoted(op.ref, 80)} id {op.link}: the page has {have}"
                continue
            targets[i] = links[op.link]
        await self._fetch_all(targets.values())
        for i, op in ops:
            if i in targets and (why := self._show(i, targets[i], 1, via=f"link {op.link} of {op.ref}")):
                self.sections[i] = f"click {render.quoted(op.ref, 80)} id {op.link} ({targets[i]}): {why}"

    async def _finds(self, ops: list[tuple[int, Find]]) -> None:
        urls: dict[int, str] = {}
        for i, op in ops:
            url, _, why = self._resolve(op.ref)
            if url is None:
                self.sections[i] = f"find {render.quoted(op.pattern)} in {render.quoted(op.ref, 80)}: {why}"
            else:
                urls[i] = url
        await self._fetch_all(urls.values())
        limit = render.FIND_LINES[self.length]
        for i, op in ops:
            if i not in urls:
                continue
            result, page, why = self._page(urls[i])
            if result is None or page is None:
                self.sections[i] = f"find {render.quoted(op.pattern)} in {render.quoted(op.ref, 80)}: {why}"
                continue
            found, more = matches(page, op.pattern, limit)
            self.sections[i] = render.find_block(op.ref, result.final_url or urls[i], op.pattern, page, found, more)


def _search_error(result: SearchResult) -> str:
    message = result.error or "the search failed"
    if result.error_code == BUDGET_EXHAUSTED:
        return f"not run: {message}"
    if result.error_code in (INVALID_TOOL_INPUT, QUERY_TOO_LONG):
        return message
    return f"search failed (engine {result.engine}): {message}"
