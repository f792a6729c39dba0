"""The bounded server-side search loop: executes one round of web_search calls under the guards.

Independent of HTTP and of the client protocol: it takes the model's tool calls and gives back
the tool messages to append, plus whether a guard ended the loop.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from . import metrics
from .citations import Source, error_content, tool_content
from .config import Limits
from .events import HostedSearch, SearchCall, SearchFinished, SearchStarted
from .tools import ArgumentError, search_args

log = logging.getLogger("searchhub.loop")
BUDGET_EXHAUSTED = "tool-result budget exhausted: answer with the results you already have"
_SPACE = re.compile(r"\s+")


def _norm(query: str) -> str:
    return _SPACE.sub(" ", query.strip().lower())


@dataclass
class LoopState:
    limits: Limits
    hosted: HostedSearch | None = None
    engine_hint: str | None = None
    started: float = field(default_factory=time.monotonic)
    rounds: int = 0  # rounds in which the model called web_search
    result_bytes: int = 0
    consecutive_errors: int = 0
    seen: set[str] = field(default_factory=set)
    searches: list[SearchCall] = field(default_factory=list)
    sources: dict[int, Source] = field(default_factory=dict)
    next_n: int = 1
    stopped: str | None = None  # the guard that ended the loop

    def stop(self, guard: str) -> None:
        if self.stopped is None:
            self.stopped = guard
            metrics.WEB_SEARCH_ITERATION_CAP.labels("loop", guard).inc()
            log.info("search loop ended by guard: %s", guard)

    def tool_allowed(self) -> bool:
        """May the next model round still call web_search?"""
        if self.stopped:
            return False
        if self.rounds >= self.limits.max_tool_iterations:
            self.stop("max_tool_iterations")
            return False
        if time.monotonic() - self.started > self.limits.loop_wall_clock_s:
            self.stop("loop_wall_clock")
            return False
        return True


Emit = Callable[[object], None]


async def run_round(state: LoopState, calls: list[dict], search, *, emit: Emit | None = None,
                    count_hint: int | None = None) -> list[dict]:
    """Execute the round's web_search calls (concurrently) and return one tool message per call."""
    state.rounds += 1
    messages: list[dict | None] = [None] * len(calls)
    ran: list[SearchCall | None] = [None] * len(calls)  # searches in call order, for clients that show them
    jobs: list[tuple[int, SearchCall, object]] = []
    for i, call in enumerate(calls):
        fn = call.get("function") or {}
        call_id = call.get("id") or ""
        try:
            args = search_args(fn.get("arguments"))
        except ArgumentError as e:
            messages[i] = _tool(call_id, f"Error: {e}")
            continue
        engine = args.engine or state.engine_hint
        key = f"{_norm(args.query)}|{engine or ''}"
        if key in state.seen:
            messages[i] = _tool(call_id, error_content(
                f"you already searched for '{args.query}'; answer from the results above"))
            state.stop("repeated_query")
            continue
        hosted = state.hosted
        if hosted and hosted.max_uses is not None and len(state.searches) + len(jobs) >= hosted.max_uses:
            sc = SearchCall(call_id, args.query, engine)
            sc.result = _max_uses_result(args.query, engine)
            ran[i] = sc
            if emit:
                emit(SearchStarted(sc))
                emit(SearchFinished(sc))
            messages[i] = _tool(call_id, error_content("max_uses_exceeded: no more searches are allowed"))
            state.stop("max_uses")
            continue
        state.seen.add(key)
        sc = SearchCall(call_id, args.query, engine)
        count = args.count or count_hint
        coro = search.search(
            args.query, engine=engine, count=count, recency=args.recency,
            allowed_domains=hosted.allowed_domains if hosted else (),
            blocked_domains=hosted.blocked_domains if hosted else (),
            user_location=hosted.user_location if hosted else None,
        )
        jobs.append((i, sc, coro))
        if emit:
            emit(SearchStarted(sc))

    if jobs:
        results = await asyncio.gather(*(c for _, _, c in jobs), return_exceptions=True)
        errors = 0
        for (i, sc, _), result in zip(jobs, results, strict=True):
            if isinstance(result, BaseException):
                log.error("search raised %s (a bug: engines return errors as data)", type(result).__name__)
                result = _failed(sc.query, sc.engine, "search failed unexpectedly")
            sc.result = result
            if sc.engine is None:
                sc.engine = result.engine
            ran[i] = sc
            if not result.ok:
                errors += 1
                content = error_content(result.error or "search failed", result.engine)
            else:
                content, sources = tool_content(result, state.next_n)
                size = len(content.encode())
                if state.result_bytes + size > state.limits.max_total_result_bytes:
                    content = error_content(BUDGET_EXHAUSTED)
                    state.stop("max_total_result_bytes")
                else:
                    state.result_bytes += size
                    for s in sources:
                        state.sources[s.n] = s
                    state.next_n += len(sources)
            messages[i] = _tool(sc.id, content)
            if emit:
                emit(SearchFinished(sc))
        if errors == len(jobs):
            state.consecutive_errors += 1
            if state.consecutive_errors >= state.limits.max_consecutive_errors:
                state.stop("consecutive_errors")
        else:
            state.consecutive_errors = 0
    state.searches.extend(sc for sc in ran if sc is not None)
    return [m for m in messages if m is not None]


def _tool(call_id: str, content: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def _failed(query: str, engine: str | None, message: str, code: str = "unavailable"):
    from .search.base import SearchResult

    return SearchResult(engine=engine or "", query=query, error=message, error_code=code)


def _max_uses_result(query: str, engine: str | None):
    return _failed(query, engine, "max_uses exceeded", "max_uses_exceeded")
