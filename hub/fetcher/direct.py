"""Fetches for a caller that names the URL itself (the MCP server's web_fetch, hub/mcp/tools.py; the
result pages read after a search, hub/fetcher/reading.py),
on behalf of an API key: its `fetchesPerDay` is taken first (hub/access/budget.py), then the same fetcher,
cache, address policy (SSRF guard) and operator domain lists as the model's web_fetch.

The prior-context rule is off here: it keeps a prompt-injected model from fetching URLs nobody gave
it, and a direct call has no conversation — the URL is the caller's own choice, as with curl. The
operator's `allowedDomains` / `blockedDomains` and the address policy are what bound it."""

from __future__ import annotations

from dataclasses import replace

from ..access.budget import Budget, Denial
from ..config.keys import ANONYMOUS, ApiKey
from ..observability import metrics
from ..search.metered import SearchBill
from .fetcher import Fetcher
from .policy import UrlPolicy
from .result import FetchResult


class DirectFetch:
    """Built once per config from the fetcher and the operator's URL policy."""

    def __init__(self, fetcher: Fetcher, policy: UrlPolicy, budget: Budget) -> None:
        self.fetcher = fetcher
        self.policy = replace(policy, require_prior_context=False)
        self.budget = budget

    async def fetch(self, url: object, key: ApiKey | None, bill: SearchBill | None = None) -> FetchResult | Denial:
        """The page or a FetchResult error; a Denial (nothing fetched) when the key's budget is spent,
        recorded on `bill` when the caller reports one."""
        denial = await self.budget.take_fetch(key)
        if denial is not None:
            if bill is not None:
                bill.denied = denial
            metrics.SEARCH_BUDGET_DENIALS.labels(key.name if key else ANONYMOUS, denial.limit).inc()
            return denial
        return await self.fetcher.fetch(url, self.policy.scope())
