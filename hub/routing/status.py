"""The status page's view of the gateway: routes and targets with health, engines with recent
figures, the activity series. A pure function of the parts it reads; no secrets in it."""

from __future__ import annotations

from ..config.settings import Config
from ..observability.activity import Activity
from .dispatch import Gate
from .router import Cooldowns


def target_health(cooling: dict | None, recent: dict | None) -> str:
    """cooling: in cooldown now; failing: most recent calls failed; ok otherwise; idle: no recent calls."""
    if cooling:
        return "cooling"
    if not recent or not (recent["ok"] + recent["failed"]):
        return "idle"
    return "failing" if recent["failed"] > recent["ok"] else "ok"


def status_view(config: Config, cooldowns: Cooldowns, gate: Gate, activity: Activity, *,
                window_s: float = 300.0) -> dict:
    act = activity.snapshot(window_s)
    cooling = cooldowns.snapshot()
    in_flight = gate.snapshot()
    routes = []
    for name, pools in config.router.routes.items():
        out_pools = []
        for pool in pools:
            targets = []
            for t in pool.targets:
                recent = act["targets"].get(t.key)
                targets.append({
                    "key": t.key, "provider": t.provider.id, "model": t.model,
                    "health": target_health(cooling.get(t.key), recent),
                    "cooldown": cooling.get(t.key),
                    "inFlight": in_flight.get(t.provider.id, 0),
                    "maxConcurrency": t.provider.max_concurrency,
                    "recent": recent or {"ok": 0, "failed": 0},
                })
            out_pools.append({"id": pool.id, "priority": pool.priority, "targets": targets})
        routes.append({"name": name, "pools": out_pools})
    ws = config.web_search
    default = ws.default_engine
    engines = [{
        "id": e.id, "kind": "llm" if e.provider_key else e.type, "google": e.google,
        "default": default is not None and e.id == default.id,
        **(act["engines"].get(e.id) or {"calls": 0, "ok": 0, "successRate": None, "cacheHitRatio": None,
                                          "p50Ms": None, "p95Ms": None}),
    } for e in ws.engines]
    return {"routes": routes, "engines": engines, "series": act["series"],
            "bucketSeconds": act["bucketSeconds"], "windowSeconds": window_s}
