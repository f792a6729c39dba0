"""What a search cost: the engine's price per call plus, for model engines, the tokens they reported."""

from __future__ import annotations

from ..config.settings import EngineConfig
from .base import SearchResult


def price(engine: EngineConfig, result: SearchResult) -> float:
    """The price of a result the engine answered (a cache hit costs nothing)."""
    if result.cached:
        return 0.0
    cost = engine.cost_per_call
    if result.usage is not None:
        n_in, n_out = result.usage
        cost += n_in * engine.cost_per_input_token + n_out * engine.cost_per_output_token
    return cost
