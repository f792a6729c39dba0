"""The virtual router: model name -> route -> ordered candidate targets, with cooldown."""

from __future__ import annotations

import itertools
import time

import msgspec

from ..config.settings import SEARCH_ROUTE, Config, Pool, Target


class UnknownTarget(Exception):
    """A pinned 'provider.model' whose provider is not configured."""


class Resolution(msgspec.Struct, frozen=True):
    route: str  # the route name, or "pinned"
    candidates: tuple[Target, ...]
    pinned: bool = False


class Cooldowns:
    """Targets that failed recently. Survives config reloads (keyed by target key)."""

    def __init__(self) -> None:
        self._until: dict[str, tuple[float, str]] = {}

    def cool(self, key: str, seconds: float, reason: str) -> None:
        if seconds > 0:
            self._until[key] = (time.monotonic() + seconds, reason)

    def remaining(self, key: str) -> float:
        item = self._until.get(key)
        if item is None:
            return 0.0
        left = item[0] - time.monotonic()
        if left <= 0:
            del self._until[key]
            return 0.0
        return left

    def snapshot(self) -> dict[str, dict]:
        now = time.monotonic()
        return {k: {"seconds": round(u - now, 1), "reason": r} for k, (u, r) in self._until.items() if u > now}


class Router:
    """Built once per config; a request only looks things up."""

    def __init__(self, config: Config, cooldowns: Cooldowns) -> None:
        self.config = config
        self.cooldowns = cooldowns
        self._routes = config.router.routes
        # Per-pool round-robin counters: targets in a pool rotate.
        self._turn = {id(pool): itertools.count() for pools in self._routes.values() for pool in pools}

    def route_for(self, model: str | None, *, prompt_tokens: int = 0, thinking: bool = False) -> str:
        """Which route serves a client model name (pins are handled by resolve)."""
        routes = self._routes
        name = (model or "").strip()
        if name in routes and name != SEARCH_ROUTE:
            return name
        if "longcontext" in routes and prompt_tokens > self.config.router.long_context_threshold:
            return "longcontext"
        if "thinking" in routes and thinking:
            return "thinking"
        if "background" in routes:
            low = name.lower()
            if any(p in low for p in self.config.router.background_patterns):
                return "background"
        return "default"

    def pinned(self, model: str | None) -> Target | None:
        """The target a pinned 'provider.model' names: a configured provider, a dot, a model, and not
        a route's name. None for any other name. The one place this rule lives."""
        name = (model or "").strip()
        if name in self._routes:
            return None
        return self.config.target(name)

    def known(self, model: str) -> bool:
        """A route name or a pinned provider.model: names the operator's own config defines."""
        return model in self._routes or self.pinned(model) is not None

    def resolve(self, model: str | None, *, prompt_tokens: int = 0, thinking: bool = False) -> Resolution:
        name = (model or "").strip()
        target = self.pinned(name)
        if target is not None:
            return Resolution("pinned", (target,), pinned=True)
        if name.endswith(".") and name[:-1] in self.config.providers:
            raise UnknownTarget(name)  # a provider with no model: a pin that names nothing
        route = self.route_for(name, prompt_tokens=prompt_tokens, thinking=thinking)
        return Resolution(route, self.candidates(route))

    def serving(self, model: str, provider_type: str, *, thinking: bool = False) -> Resolution | None:
        """The route (or pin) for a model when it is served by providers of one type, with only those
        targets; None when its first target is of another type (commercial pass-through uses this)."""
        target = self.pinned(model)
        if target is not None:
            return Resolution("pinned", (target,), pinned=True) if target.provider.type == provider_type else None
        route = self.route_for(model, thinking=thinking)
        first = next((t for pool in self._routes.get(route, ()) for t in pool.targets), None)
        if first is None or first.provider.type != provider_type:
            return None
        return Resolution(route, tuple(t for t in self.candidates(route) if t.provider.type == provider_type))

    def candidates(self, route: str, prefer: str | None = None) -> tuple[Target, ...]:
        """Targets in the order to try them: pools by priority, rotating inside a pool,
        cooling targets last (better a likely failure than a certain 503)."""
        ready: list[Target] = []
        cooling: list[tuple[float, Target]] = []
        for pool in self._routes.get(route, ()):
            for t in self._rotated(pool):
                left = self.cooldowns.remaining(t.key)
                if left:
                    cooling.append((left, t))
                else:
                    ready.append(t)
        if prefer:
            ready.sort(key=lambda t: t.key != prefer)  # a cooling preferred target waits its turn
        return tuple(ready + [t for _, t in sorted(cooling, key=lambda x: x[0])])

    def _rotated(self, pool: Pool) -> tuple[Target, ...]:
        ts = pool.targets
        if len(ts) < 2:
            return ts
        k = next(self._turn[id(pool)]) % len(ts)
        return ts[k:] + ts[:k]

    def cool(self, target: Target, reason: str) -> None:
        self.cooldowns.cool(target.key, self.config.router.cooldown_s, reason)

    def models(self) -> list[str]:
        """Route names and pinned targets, for GET /v1/models."""
        names = [r for r in self._routes if r != SEARCH_ROUTE]
        seen = set(names)
        for route, pools in self._routes.items():
            if route == SEARCH_ROUTE:
                continue
            for pool in pools:
                for t in pool.targets:
                    if t.key not in seen:
                        seen.add(t.key)
                        names.append(t.key)
        return names
