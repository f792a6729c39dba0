"""Per-key budgets: searches per minute and per UTC day, fetches per day, search cost per day.

Counters live in the store (`Store.incr`), one per key, kind and window, so replicas sharing Redis
share them and two racing requests never both get the last search. Windows are fixed: a minute,
a UTC day; a counter expires with its window.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from ..config.keys import ApiKey
from ..store.base import Store

log = logging.getLogger("searchhub.budget")
PREFIX = "budget:"
DAY = 86400
MINUTE = 60
MICRO = 1_000_000  # cost is counted in millionths of the price unit: integer counters stay exact


@dataclass(frozen=True, slots=True)
class Denial:
    """A spent budget: the message for the caller (or the model) and when it renews."""

    message: str
    retry_after: int  # whole seconds, at least 1
    limit: str  # the config key that was hit, e.g. "searchesPerDay"


class Budget:
    """Takes searches and fetches from a key's allowance and adds up its cost."""

    def __init__(self, store: Store, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock

    async def take_search(self, key: ApiKey | None) -> Denial | None:
        """Count one search against the key, or say why it may not search now (counting nothing)."""
        if key is None or not key.limited:
            return None
        now = self.clock()
        if key.max_cost_per_day is not None:
            spent = await self._count(key, "cost", DAY, now, 0)
            if spent is not None and spent >= round(key.max_cost_per_day * MICRO):
                return _denial("search", now, DAY, "maxCostPerDay")
        windows = [w for w in (("searches-min", key.searches_per_minute, MINUTE, "searchesPerMinute"),
                               ("searches-day", key.searches_per_day, DAY, "searchesPerDay")) if w[1] is not None]
        return await self._take(key, windows, now, "search")

    async def take_fetch(self, key: ApiKey | None) -> Denial | None:
        """Count one page fetch against the key, or say why it may not fetch now."""
        if key is None or key.fetches_per_day is None:
            return None
        return await self._take(key, [("fetches-day", key.fetches_per_day, DAY, "fetchesPerDay")], self.clock(),
                                "fetch")

    async def spend(self, key: ApiKey | None, cost: float) -> None:
        """Add a search's cost to the key's day (only keys with a cost limit keep that count)."""
        if key is None or key.max_cost_per_day is None or cost <= 0:
            return
        await self._count(key, "cost", DAY, self.clock(), round(cost * MICRO))

    async def _take(self, key: ApiKey, windows: list, now: float, what: str) -> Denial | None:
        """windows: (counter kind, limit, period in seconds, the limit's config name)."""
        taken: list[tuple[str, int]] = []
        for kind, limit, period, name in windows:
            n = await self._count(key, kind, period, now, 1)
            if n is None:
                continue
            taken.append((kind, period))
            if n > limit:
                for k, p in taken:  # give back what this attempt took: a refused call costs nothing
                    await self._count(key, k, p, now, -1)
                return _denial(what, now, period, name)
        return None

    async def _count(self, key: ApiKey, kind: str, period: int, now: float, amount: int) -> int | None:
        window = int(now // period)
        try:
            return await self.store.incr(f"{PREFIX}{key.name}:{kind}:{window}", amount, period + MINUTE)
        except Exception as e:  # a store that cannot count must not stop searches
            log.warning("budget counter unavailable (%s); not enforcing it for this call", type(e).__name__)
            return None


def _denial(what: str, now: float, period: int, limit: str) -> Denial:
    renews = (int(now // period) + 1) * period
    until = datetime.fromtimestamp(renews, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Denial(f"{what} budget for this key is exhausted until {until} ({limit})",
                  max(1, int(renews - now + 0.999)), limit)
