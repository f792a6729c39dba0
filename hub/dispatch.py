"""Failover: try a route's candidate targets in order until one answers, each provider behind its
concurrency gate."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx

from . import metrics
from .activity import Activity
from .backends import openai_compat
from .backends.http import UpstreamError
from .router import Router
from .settings import Provider, Target
from .stream_watch import Opened, Watched, first_content, watched_reads
from .trace import Trace

log = logging.getLogger("searchhub.dispatch")
T = TypeVar("T")
Body = dict | Callable[[Target], dict]  # a request body, or the body for each target as it is tried


def _for(value, target: Target):
    return value(target) if callable(value) else value


@dataclass(slots=True)
class Attempt:
    target: str
    provider: str
    reason: str
    status: int | None = None

    def as_dict(self) -> dict:
        return {"target": self.target, "provider": self.provider, "reason": self.reason, "status": self.status}


class AllTargetsFailed(Exception):
    def __init__(self, route: str, attempts: list[Attempt]) -> None:
        self.route = route
        self.attempts = attempts
        super().__init__(f"all targets of route '{route}' failed")

    @property
    def status(self) -> int:
        # 503 when everything was merely saturated or rate limited, 502 when upstreams broke.
        if self.attempts and all(a.status in (429, 503) for a in self.attempts):
            return 503
        if self.attempts and all(a.status == 504 for a in self.attempts):
            return 504
        return 502


class Gate:
    """Bounded concurrency per provider: a full gate refuses at once (the router fails over)."""

    def __init__(self) -> None:
        self._in_flight: dict[str, int] = {}

    def enter(self, provider: Provider) -> None:
        n = self._in_flight.get(provider.id, 0)
        if provider.max_concurrency is not None and n >= provider.max_concurrency:
            raise UpstreamError("provider saturated (maxConcurrency reached)", status=503)
        self._in_flight[provider.id] = n + 1

    def leave(self, provider: Provider) -> None:
        self._in_flight[provider.id] -= 1

    def snapshot(self) -> dict[str, int]:
        return {k: v for k, v in self._in_flight.items() if v}


class Dispatcher:
    def __init__(self, client: httpx.AsyncClient, router: Router, gate: Gate,
                 activity: Activity | None = None) -> None:
        self.client = client
        self.router = router
        self.gate = gate
        self.activity = activity or Activity()

    async def run(
        self, route: str, candidates: tuple[Target, ...], call: Callable[[Target], Awaitable[T]],
        *, hold: bool = False, trace: Trace | None = None,
    ) -> tuple[T, Target]:
        """call(target) on each candidate until one succeeds. Retryable failures cool the target;
        a client error (4xx other than 408/429) is the client's and is raised as is. With hold, the
        winner keeps its concurrency slot (a stream releases it when it ends)."""
        attempts: list[Attempt] = []
        for i, target in enumerate(candidates):
            provider = target.provider
            try:
                self.gate.enter(provider)
            except UpstreamError as e:
                attempts.append(Attempt(target.key, provider.id, e.reason, e.status))
                if trace is not None:
                    trace.tried(target.key, e.reason, e.status)
                continue
            started = time.perf_counter()
            try:
                result = await call(target)
            except UpstreamError as e:
                self.gate.leave(provider)
                metrics.child(metrics.UPSTREAM_LATENCY, provider.id, "error").observe(time.perf_counter() - started)
                self.activity.upstream(target.key, False)
                if trace is not None:
                    trace.tried(target.key, e.reason, e.status, time.perf_counter() - started)
                if not e.retryable:
                    log.warning("target %s rejected the request: %s; answering the client with it",
                                target.key, e.reason)
                    raise
                nxt = "trying the next one" if i + 1 < len(candidates) else "no other target to try"
                log.warning("target %s failed: %s; %s", target.key, e.reason, nxt)
                self.router.cool(target, e.reason)
                attempts.append(Attempt(target.key, provider.id, e.reason, e.status))
                continue
            except BaseException:
                self.gate.leave(provider)
                raise
            if not hold:
                self.gate.leave(provider)
            metrics.child(metrics.UPSTREAM_LATENCY, provider.id, "ok").observe(time.perf_counter() - started)
            self.activity.upstream(target.key, True)
            if trace is not None:
                trace.answered(target.key, time.perf_counter() - started)
            return result, target
        raise AllTargetsFailed(route, attempts)

    def complete(self, route: str, candidates: tuple[Target, ...], body: Body,
                 *, trace: Trace | None = None,
                 server_tools: frozenset[str] = frozenset()) -> Awaitable[tuple[dict, Target]]:
        """The first answer of the candidates; `body` may be decided per target. (Returns `run`'s
        coroutine: one frame less on every model call.)"""
        retries = self.router.config.router.retries
        return self.run(
            route, candidates,
            lambda t: openai_compat.complete(self.client, t, _for(body, t), retries=retries, server_tools=server_tools),
            trace=trace,
        )

    async def stream(
        self, route: str, candidates: tuple[Target, ...], body: Body, *, raw: bool | Callable[[Target], bool] = False,
        trace: Trace | None = None,
        server_tools: frozenset[str] = frozenset(),
    ) -> tuple[AsyncIterator, Target]:
        """Fails over while nothing reached the client: until the upstream's first content
        (hub/stream_watch.py). The stream comes as decoded chunks, a list per network read, or
        with `raw` as the `data:` payloads of each read; `body` and `raw` may be decided per target."""
        retries = self.router.config.router.retries

        async def open_one(t: Target) -> Opened:
            batches = await openai_compat.stream(self.client, t, _for(body, t), retries=retries, raw=True,
                                                  server_tools=server_tools)
            return await first_content(batches, t.provider)

        opened, target = await self.run(route, candidates, open_one, hold=True, trace=trace)
        provider = target.provider

        def release() -> None:
            self.gate.leave(provider)

        if _for(raw, target):  # the relay reads it with the watch's rules itself (hub/relay.py)
            return Watched(opened, release), target
        return watched_reads(opened, release=release), target

    async def held(self, it: AsyncIterator[T], target: Target) -> AsyncIterator[T]:
        """A stream opened with hold: it keeps its concurrency slot until it is consumed or closed."""
        try:
            async for chunk in it:
                yield chunk
        finally:
            self.gate.leave(target.provider)
            await it.aclose()
