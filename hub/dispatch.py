"""Failover: try a route's candidate targets in order until one answers."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import httpx

from . import metrics
from .backends import openai_compat
from .backends.http import AllTargetsFailed, Attempt, Gate, UpstreamError
from .config import Target
from .router import Router

log = logging.getLogger("searchhub.dispatch")
T = TypeVar("T")


class Dispatcher:
    def __init__(self, client: httpx.AsyncClient, router: Router, gate: Gate) -> None:
        self.client = client
        self.router = router
        self.gate = gate

    async def run(
        self, route: str, candidates: tuple[Target, ...], call: Callable[[Target], Awaitable[T]],
        *, hold: bool = False,
    ) -> tuple[T, Target]:
        """call(target) on each candidate until one succeeds. Retryable failures cool the target;
        a client error (4xx other than 408/429) is the client's and is raised as is. With hold, the
        winner keeps its concurrency slot (a stream releases it when it ends)."""
        attempts: list[Attempt] = []
        for target in candidates:
            provider = target.provider
            try:
                self.gate.enter(provider)
            except UpstreamError as e:
                attempts.append(Attempt(target.key, provider.id, e.reason, e.status))
                continue
            started = time.perf_counter()
            try:
                result = await call(target)
            except UpstreamError as e:
                self.gate.leave(provider)
                metrics.UPSTREAM_LATENCY.labels(provider.id, "error").observe(time.perf_counter() - started)
                if not e.retryable:
                    raise
                log.warning("target %s failed: %s; trying the next one", target.key, e.reason)
                self.router.cool(target, e.reason)
                attempts.append(Attempt(target.key, provider.id, e.reason, e.status))
                continue
            except BaseException:
                self.gate.leave(provider)
                raise
            if not hold:
                self.gate.leave(provider)
            metrics.UPSTREAM_LATENCY.labels(provider.id, "ok").observe(time.perf_counter() - started)
            return result, target
        raise AllTargetsFailed(route, attempts)

    async def complete(self, route: str, candidates: tuple[Target, ...], body: dict) -> tuple[dict, Target]:
        retries = self.router.config.router.retries
        return await self.run(
            route, candidates, lambda t: openai_compat.complete(self.client, t, body, retries=retries)
        )

    async def stream(
        self, route: str, candidates: tuple[Target, ...], body: dict, *, raw: bool = False
    ) -> tuple[AsyncIterator, Target]:
        """Fails over only while nothing reached the client: until the upstream answered 200."""
        retries = self.router.config.router.retries

        async def open_one(t: Target) -> AsyncIterator:
            return await openai_compat.stream(self.client, t, body, retries=retries, raw=raw)

        it, target = await self.run(route, candidates, open_one, hold=True)
        return _gated(it, self.gate, target), target


async def _gated(it: AsyncIterator[dict], gate: Gate, target: Target) -> AsyncIterator[dict]:
    """The stream holds its concurrency slot until it is consumed or closed."""
    try:
        async for chunk in it:
            yield chunk
    finally:
        gate.leave(target.provider)
        aclose = getattr(it, "aclose", None)
        if aclose is not None:
            await aclose()
