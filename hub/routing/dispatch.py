"""Failover: try a route's candidate targets in order until one answers, each provider behind its
concurrency gate."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx

from ..backends import openai_compat
from ..config.settings import Provider, Target, mask_url
from ..observability import metrics
from ..observability.activity import Activity
from ..observability.trace import Trace
from ..streams.watch import Opened, Watched, by_deadline, first_content, watched_reads
from ..upstream.http import UpstreamError
from .router import Router

log = logging.getLogger("searchhub.dispatch")
T = TypeVar("T")
Body = dict | Callable[[Target], dict]  # a request body, or the body for each target as it is tried


def _for(value, target: Target):
    return value(target) if callable(value) else value


CONNECT_FAILED = "cannot connect to upstream"  # hub/upstream/http.py's reason for a refused or timed-out connect
BACKENDS_DOC = "docs/backends.md; `searchhub doctor` checks each one"
@dataclass(slots=True)
class Attempt:
    target: str
    provider: str
    reason: str
    status: int | None = None
    url: str = ""  # the provider's base URL, mask_url's way
    env: tuple[str, ...] = ()  # the environment variables its baseURL was written with

    @classmethod
    def of(cls, target: Target, reason: str, status: int | None) -> Attempt:
        p = target.provider
        return cls(target.key, p.id, reason, status, mask_url(p.base_url), p.base_url_env)

    @property
    def not_connected(self) -> bool:
        """No TCP connection could be made: nothing listens there (or nothing answers in time)."""
        return self.status is None and self.reason == CONNECT_FAILED

    def describe(self) -> str:
        if self.not_connected and self.url:
            return f"{self.target}: cannot connect to {self.url}"
        return f"{self.target} ({self.url}): {self.reason}" if self.url else f"{self.target}: {self.reason}"

    def as_dict(self) -> dict:
        return {"target": self.target, "provider": self.provider, "reason": self.reason, "status": self.status,
                "url": self.url}


class AllTargetsFailed(Exception):
    def __init__(self, route: str, attempts: list[Attempt], config_path: str | None = None) -> None:
        self.route = route
        self.attempts = attempts
        self.config_path = config_path  # the engines.json in use, for the next step a message names
        super().__init__(f"all targets of route '{route}' failed")

    def message(self) -> str:
        """What the client is told: each attempt with the URL it tried, and, when some could not
        connect, how to point the gateway at a model server. Never a secret: URLs are mask_url's."""
        text = f"all upstream targets of route '{self.route}' failed: " + "; ".join(a.describe() for a in self.attempts)
        hint = self.next_step()
        return f"{text}. {hint}" if hint else text

    def next_step(self) -> str:
        dead = [a for a in self.attempts if a.not_connected]
        if not dead:
            return ""
        where = "" if len(dead) == len(self.attempts) else " at " + ", ".join(dict.fromkeys(a.url for a in dead))
        names = list(dict.fromkeys(v for a in dead for v in a.env))
        keys = list(dict.fromkeys(f"providers.{a.provider}.baseURL" for a in dead if not a.env))
        file = f" in {self.config_path}" if self.config_path else " in the config file"
        if names and keys:
            how = f"{' / '.join(names)}, or {', '.join(keys)}{file}"
        elif names:
            how = f"{' / '.join(names)} (or providers.<id>.baseURL{file})"
        else:
            how = f"{', '.join(keys)}{file}"
        return (f"No model server answered{where}: start one there, or point searchhub at yours with {how}; "
                f"see {BACKENDS_DOC}")

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
                attempts.append(Attempt.of(target, e.reason, e.status))
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
                attempt = Attempt.of(target, e.reason, e.status)
                log.warning("target %s at %s failed: %s; %s", target.key, attempt.url, e.reason, nxt)
                self.router.cool(target, e.reason)
                attempts.append(attempt)
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
        raise AllTargetsFailed(route, attempts, self.router.config.path)

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
        (hub/streams/watch.py), which each attempt must bring within its provider's
        `firstTokenTimeoutMs`. The stream comes as decoded chunks, a list per network read, or
        with `raw` as the `data:` payloads of each read; `body` and `raw` may be decided per target."""
        retries = self.router.config.router.retries

        def open_one(t: Target) -> Awaitable[Opened]:  # within the target's first-content deadline
            async def opening(deadline: asyncio.Timeout | None) -> Opened:
                batches = await openai_compat.stream(self.client, t, _for(body, t), retries=retries,
                                                      server_tools=server_tools, deadline=deadline)
                return await first_content(batches, t.provider)

            return by_deadline(t.provider, opening)

        opened, target = await self.run(route, candidates, open_one, hold=True, trace=trace)
        provider = target.provider

        def release() -> None:
            self.gate.leave(provider)

        if _for(raw, target):  # the relay reads it with the watch's rules itself (hub/streams/relay.py)
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
