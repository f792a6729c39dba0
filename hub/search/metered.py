"""Search on behalf of one API key: its budget is taken before, its cost counted after.

The in-loop tools, `/v1/search` and the MCP server all search through this, so a key's
allowance is one allowance whatever door it came in by.
"""

from __future__ import annotations

import msgspec

from ..access.budget import Budget, Denial
from ..config.keys import ANONYMOUS, ApiKey
from ..observability import metrics
from .base import BUDGET_EXHAUSTED, SearchRequest, SearchResult, failure
from .sanitize import clean_text
from .service import SearchService


class SearchBill(msgspec.Struct):
    """What one client request spent on searches; the HTTP layer reports it in a header and the log."""

    cost: float = 0.0
    searches: int = 0
    denied: Denial | None = None


class MeteredSearch:
    """SearchService.search with the calling key's budget and cost accounting around it."""

    def __init__(self, service: SearchService, budget: Budget, key: ApiKey | None,
                 bill: SearchBill | None = None) -> None:
        self.service = service
        self.budget = budget
        self.key = key
        self.key_name = key.name if key else ANONYMOUS
        self.bill = bill if bill is not None else SearchBill()

    async def search(self, req: SearchRequest) -> SearchResult:
        denial = await self.budget.take_search(self.key)
        if denial is not None:
            self.bill.denied = denial
            metrics.SEARCH_BUDGET_DENIALS.labels(self.key_name, denial.limit).inc()
            shown_engine = clean_text(req.engine, 64) if req.engine and req.engine.strip() else "none"
            return failure(shown_engine, clean_text(req.query, 200), denial.message, BUDGET_EXHAUSTED)
        result = await self.service.search(req)
        self.bill.searches += 1
        if result.cost > 0:
            self.bill.cost += result.cost
            metrics.child(metrics.SEARCH_COST, self.key_name, result.engine).inc(result.cost)
            await self.budget.spend(self.key, result.cost)
        return result
