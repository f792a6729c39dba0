"""Recent activity in time buckets, for the status page: per engine searches, successes, cache hits
and a latency histogram; per target upstream outcomes; requests. Each observation is a few dict
increments in the current bucket; old buckets fall off the end. Per process, like the metrics.
"""

from __future__ import annotations

import bisect
import time
from collections import deque
from dataclasses import dataclass, field

# Latency bucket upper bounds in ms (log-spaced): p50/p95 are read off the cumulative counts.
LATENCY_BOUNDS_MS = (5, 10, 20, 35, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000,
                     8000, 12000, 20000, 30000, float("inf"))


@dataclass(slots=True)
class EngineBucket:
    calls: int = 0
    ok: int = 0
    cached: int = 0
    latency: list[int] = field(default_factory=lambda: [0] * len(LATENCY_BOUNDS_MS))

    def add(self, other: EngineBucket) -> None:
        self.calls += other.calls
        self.ok += other.ok
        self.cached += other.cached
        for i, n in enumerate(other.latency):
            self.latency[i] += n


@dataclass(slots=True)
class Bucket:
    start: float
    requests: int = 0
    searches: int = 0
    engines: dict[str, EngineBucket] = field(default_factory=dict)
    targets: dict[str, list[int]] = field(default_factory=dict)  # target -> [ok, failed]
    search_latency: list[int] = field(default_factory=lambda: [0] * len(LATENCY_BOUNDS_MS))


class Activity:
    def __init__(self, bucket_s: float = 10.0, keep_s: float = 900.0, clock=time.time) -> None:
        self.bucket_s = bucket_s
        self._buckets: deque[Bucket] = deque(maxlen=int(keep_s // bucket_s) + 1)
        self._clock = clock

    def _current(self) -> Bucket:
        now = self._clock()
        start = now - now % self.bucket_s
        if not self._buckets or self._buckets[-1].start != start:
            self._buckets.append(Bucket(start))
        return self._buckets[-1]

    # ------------------------------------------------------------ observations

    def request(self) -> None:
        self._current().requests += 1

    def search(self, engine: str, ok: bool, cached: bool, seconds: float) -> None:
        b = self._current()
        b.searches += 1
        e = b.engines.get(engine)
        if e is None:
            if len(b.engines) >= 64:  # engine ids come from the config; the cap is a seatbelt
                return
            e = b.engines[engine] = EngineBucket()
        e.calls += 1
        e.ok += ok
        e.cached += cached
        i = bisect.bisect_left(LATENCY_BOUNDS_MS, seconds * 1000)
        e.latency[i] += 1
        b.search_latency[i] += 1

    def upstream(self, target: str, ok: bool) -> None:
        t = self._current().targets.get(target)
        if t is None:
            t = self._current().targets[target] = [0, 0]
        t[0 if ok else 1] += 1

    # ------------------------------------------------------------ views

    def snapshot(self, window_s: float = 300.0) -> dict:
        """Engines and targets over the last window_s; per-bucket series over all kept buckets."""
        now = self._clock()
        engines: dict[str, EngineBucket] = {}
        targets: dict[str, list[int]] = {}
        for b in self._buckets:
            if b.start < now - window_s:
                continue
            for name, e in b.engines.items():
                engines.setdefault(name, EngineBucket()).add(e)
            for name, (ok, failed) in b.targets.items():
                t = targets.setdefault(name, [0, 0])
                t[0] += ok
                t[1] += failed
        by_start = {b.start: b for b in self._buckets}
        current = now - now % self.bucket_s
        series = []
        for i in range(self._buckets.maxlen - 1, -1, -1):  # every slot of the kept span, empty ones too
            start = current - i * self.bucket_s
            b = by_start.get(start)
            series.append({"t": start, "requests": b.requests if b else 0, "searches": b.searches if b else 0,
                           "p50": percentile(b.search_latency, 0.5) if b else None,
                           "p95": percentile(b.search_latency, 0.95) if b else None})
        return {
            "bucketSeconds": self.bucket_s,
            "windowSeconds": window_s,
            "engines": {name: {
                "calls": e.calls, "ok": e.ok,
                "successRate": e.ok / e.calls if e.calls else None,
                "cacheHitRatio": e.cached / e.calls if e.calls else None,
                "p50Ms": percentile(e.latency, 0.5), "p95Ms": percentile(e.latency, 0.95),
            } for name, e in sorted(engines.items())},
            "targets": {name: {"ok": ok, "failed": failed} for name, (ok, failed) in sorted(targets.items())},
            "series": series,
        }


def percentile(counts: list[int], q: float) -> float | None:
    """The upper bound of the latency bucket holding the q-th observation (None without any)."""
    total = sum(counts)
    if not total:
        return None
    rank = q * total
    seen = 0
    for bound, n in zip(LATENCY_BOUNDS_MS, counts, strict=True):
        seen += n
        if seen >= rank and n:
            return bound if bound != float("inf") else LATENCY_BOUNDS_MS[-2]
    return LATENCY_BOUNDS_MS[-2]
