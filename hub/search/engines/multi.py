"""Fan-out: one search on several engines at once, merged by URL with reciprocal-rank fusion.

A hit's score is the sum over the engines that found it of 1 / (K + its rank there), so a page
several engines rank high comes first; the first engine's title and snippet for a URL are kept.
Members fail on their own: their errors are reported beside the merged hits, and only when every
member failed is the search a failure. Each member keeps its own timeout, proxy and key."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import ClassVar

import msgspec

from ...config.engine_kinds import EngineKind
from ...config.settings import EngineConfig
from ..base import TOO_MANY_REQUESTS, UNAVAILABLE, Hit, Parsed, RawHit, SearchRequest, SearchResult, failure
from ..engine import Engine, EngineContext
from ..sanitize import bound, dedup_key

RRF_K = 60  # the usual constant of reciprocal-rank fusion (Cormack et al., 2009)


def fuse(rankings: Sequence[Sequence[Hit]], k: int = RRF_K) -> list[Hit]:
    """Hits of several rankings, merged by URL and ordered by fused score (ties: first seen first)."""
    scores: dict[tuple[str, str, str], float] = {}
    first: dict[tuple[str, str, str], Hit] = {}
    for hits in rankings:
        seen: set[tuple[str, str, str]] = set()
        for rank, hit in enumerate(hits, 1):
            key = dedup_key(hit.url)
            if key in seen:  # an engine listing a URL twice counts once, at its better rank
                continue
            seen.add(key)
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
            first.setdefault(key, hit)
    order = sorted(first, key=lambda key: -scores[key])  # stable: equal scores keep first-seen order
    return [first[key] for key in order]


class MultiEngine(Engine):
    TYPE: ClassVar[str] = "multi"  # webSearch.engines[].type
    KIND: ClassVar[EngineKind] = EngineKind(keyless=True, members=True)  # its members carry the keys

    def __init__(self, config: EngineConfig, ctx: EngineContext, *, members: Mapping[str, Engine]) -> None:
        super().__init__(config, ctx)
        self.members = tuple(members[m] for m in config.members)

    async def search(self, req: SearchRequest) -> SearchResult:
        results = await asyncio.gather(*(
            m.search(msgspec.structs.replace(req, count=max(1, min(req.count, m.max_count))))
            for m in self.members
        ))
        ok = [r for r in results if r.ok]
        failed = tuple((m.config.id, r.error or "failed") for m, r in zip(self.members, results, strict=True)
                       if not r.ok)
        if not ok:
            code = TOO_MANY_REQUESTS if all(r.error_code == TOO_MANY_REQUESTS for r in results) else UNAVAILABLE
            reasons = "; ".join(f"{e}: {msg}" for e, msg in failed)
            return replace(failure(self.config.id, req.query, f"every engine failed: {reasons}", code),
                           engine_errors=failed)
        merged = fuse([r.hits for r in ok])
        raw = [RawHit(h.title, h.url, h.snippet, h.source, h.published) for h in merged]
        # Member summaries are dropped: their [n] markers number the member's own hits.
        ws = self.ctx.web_search
        result = bound(self.config.id, req, Parsed(raw), char_cap=ws.result_char_cap,
                       max_bytes=ws.limits.max_total_result_bytes)
        return replace(result, engine_errors=failed)
