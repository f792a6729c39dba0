"""The gateway's API keys as the config declares them: who is calling, under which name, with which limits."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

ANONYMOUS = "anonymous"  # the caller's name when the gateway has no keys


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One entry of server.apiKeys. `name` is what logs, metrics and budgets show; `key` never leaves."""

    key: str = field(repr=False)
    name: str
    searches_per_day: int | None = None
    searches_per_minute: int | None = None
    fetches_per_day: int | None = None
    max_cost_per_day: float | None = None

    @property
    def limited(self) -> bool:
        return any(v is not None for v in (self.searches_per_day, self.searches_per_minute,
                                           self.fetches_per_day, self.max_cost_per_day))


def parse_keys(entries: Iterable[str | dict], section: str = "apiKeys") -> tuple[ApiKey, ...]:
    """server.apiKeys (already schema-checked): a plain string is a key without limits, named by its place."""
    out = []
    for i, e in enumerate(entries):
        if isinstance(e, str):
            out.append(ApiKey(key=e, name=f"{section}[{i}]"))
        else:
            out.append(ApiKey(
                key=e["key"], name=e["name"],
                searches_per_day=e.get("searchesPerDay"),
                searches_per_minute=e.get("searchesPerMinute"),
                fetches_per_day=e.get("fetchesPerDay"),
                max_cost_per_day=e.get("maxCostPerDay"),
            ))
    return tuple(out)
