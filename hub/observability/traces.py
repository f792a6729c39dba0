"""The trace recorder: a bounded ring of recent request traces in memory, copied to the state store
(Redis when configured) with a TTL so any worker or replica can show them.

Cheap on the hot path: with `trace.enabled` off, `start()` returns None and every recording call
is skipped. With it on, a request costs one small object; finished traces go into a deque, and
the store writes happen in batches on a background task, never in the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
from collections import deque

import msgspec

from ..config.settings import TraceConfig
from ..store.base import Store, StoreUnavailable
from .trace import Trace

log = logging.getLogger("searchhub.traces")
_encode = msgspec.json.Encoder().encode
_decode_trace = msgspec.json.Decoder(Trace).decode
_decode_index = msgspec.json.Decoder(list[dict]).decode
INDEX_KEY = "traces:index"
INDEX_SIZE = 200
MAX_PENDING = 2000  # traces waiting for the store; more are not copied (counted in `dropped`)
MAX_FLUSH = 500  # traces written per flush (per second); the newest win
FLUSH_CONCURRENCY = 8


class TraceRecorder:
    def __init__(self, config: TraceConfig, store: Store | None = None) -> None:
        self.config = config
        self._ring: deque[Trace] = deque(maxlen=config.ring_size)
        self._seq = itertools.count(1)
        self._store = store if config.store_ttl_s > 0 else None
        self._pending: list[Trace] = []
        self._task: asyncio.Task | None = None
        self.dropped = 0

    @property
    def enabled(self) -> bool:
        return self.config.enabled

    def configure(self, config: TraceConfig) -> None:
        """A reload: new limits apply to the next request; the ring keeps what fits."""
        if config.ring_size != self.config.ring_size:
            self._ring = deque(self._ring, maxlen=config.ring_size)
        self.config = config

    # ------------------------------------------------------------ recording

    def finish(self, trace: Trace) -> None:
        keep = trace.calls or trace.status >= 400 or trace.error or self.config.sample_rate >= 1.0 \
            or random.random() < self.config.sample_rate
        if not keep:
            return
        trace.seq = next(self._seq)
        self._ring.append(trace)
        if self._store is not None:
            if len(self._pending) < MAX_PENDING:
                self._pending.append(trace)
            else:
                self.dropped += 1

    # ------------------------------------------------------------ reading

    def recent(self, *, since: float = 0.0, limit: int = 50, chain: str | None = None, key: str | None = None,
               searched: bool = False, errors: bool = False) -> list[Trace]:
        """Newest first, only local traces."""
        out: list[Trace] = []
        for t in reversed(self._ring):
            if t.started_at <= since:
                break
            if _matches(t.chain, t.key, t.searched, bool(t.error or t.status >= 400), chain, key, searched, errors):
                out.append(t)
                if len(out) >= limit:
                    break
        return out

    async def listing(self, *, since: float = 0.0, limit: int = 50, chain: str | None = None,
                      key: str | None = None, searched: bool = False, errors: bool = False) -> list[dict]:
        """Summaries, newest first: this process's ring merged with the store's index (other workers)."""
        rows = [t.summary() for t in self.recent(since=since, limit=limit, chain=chain, key=key,
                                                  searched=searched, errors=errors)]
        if self._store is None:
            return rows
        seen = {r["id"] for r in rows}
        for r in await self._index():
            if r.get("id") in seen or r.get("startedAt", 0) <= since:
                continue
            if _matches(r.get("chain"), r.get("key"), bool(r.get("searched")),
                        bool(r.get("error") or (r.get("status") or 0) >= 400), chain, key, searched, errors):
                rows.append(r)
        rows.sort(key=lambda r: r.get("startedAt", 0), reverse=True)
        return rows[:limit]

    async def get(self, trace_id: str) -> Trace | None:
        for t in reversed(self._ring):
            if t.id == trace_id:
                return t
        if self._store is None:
            return None
        try:
            raw = await self._store.get("trace:" + trace_id)
        except StoreUnavailable:
            return None
        if raw is None:
            return None
        try:
            return _decode_trace(raw)
        except msgspec.DecodeError:
            return None

    async def _index(self) -> list[dict]:
        assert self._store is not None
        try:
            raw = await self._store.get(INDEX_KEY)
            return _decode_index(raw) if raw else []
        except (StoreUnavailable, msgspec.DecodeError):
            return []

    # ------------------------------------------------------------ the store copy

    def start_flusher(self) -> None:
        if self._store is not None and self._task is None:
            self._task = asyncio.create_task(self._flush_loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        with contextlib.suppress(Exception):
            await self.flush()

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.flush_interval_s)
            try:
                await self.flush()
            except Exception:  # the flusher must outlive a bad moment of the store
                log.exception("writing traces to the state store failed")

    async def flush(self) -> None:
        """Write the pending traces and add their summaries to the shared index, in one batch."""
        if self._store is None or not self._pending:
            return
        pending, self._pending = self._pending, []
        batch = pending[-MAX_FLUSH:]
        self.dropped += len(pending) - len(batch)
        ttl = self.config.store_ttl_s
        try:
            # A few writes at a time: a burst of thousands would queue behind the pool, time out and
            # mark the shared store degraded for the chains and the cache too.
            for i in range(0, len(batch), FLUSH_CONCURRENCY):
                await asyncio.gather(*(self._store.set("trace:" + t.id, _encode(t), ttl)
                                       for t in batch[i:i + FLUSH_CONCURRENCY]))
            rows = [t.summary() for t in batch]

            def merge(old: bytes | None) -> bytes:
                try:
                    index = _decode_index(old) if old else []
                except msgspec.DecodeError:  # written by something else: start over
                    index = []
                return _encode((rows[::-1] + index)[:INDEX_SIZE])

            await self._store.update(INDEX_KEY, merge, ttl)
        except StoreUnavailable:
            self.dropped += len(batch)


def _matches(t_chain: str | None, t_key: str | None, t_searched: bool, t_error: bool,
             chain: str | None, key: str | None, searched: bool, errors: bool) -> bool:
    if chain and t_chain != chain:
        return False
    if key and t_key != key:
        return False
    if searched and not t_searched:
        return False
    return not (errors and not t_error)
