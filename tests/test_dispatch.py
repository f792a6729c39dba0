"""hub/routing/dispatch.py directly: gate accounting, failover order, the held stream's slot."""

from __future__ import annotations

import asyncio
import json

import pytest

from hub.config import parse
from hub.routing.dispatch import AllTargetsFailed, Dispatcher, Gate
from hub.routing.router import Cooldowns, Router
from hub.runtime import PLUGINS
from hub.upstream.http import UpstreamError


def setup(max_concurrency: int | None = 1) -> tuple[Dispatcher, Router]:
    cfg = {"providers": {"a": {"type": "vllm", "baseURL": "http://127.0.0.1:9/v1"},
                         "b": {"type": "vllm", "baseURL": "http://127.0.0.1:9/v1"}},
           "virtualrouter": {"routing": {"default": [{"targets": ["a.m"]}, {"priority": 50, "targets": ["b.m"]}]}}}
    if max_concurrency is not None:
        cfg["providers"]["a"]["maxConcurrency"] = max_concurrency
    router = Router(parse(json.dumps(cfg), env={}, plugins=PLUGINS), Cooldowns())
    return Dispatcher(None, router, Gate()), router  # type: ignore[arg-type]  # no HTTP in these calls


def test_gate_counts_and_refuses_when_full() -> None:
    d, router = setup()
    a = router.config.providers["a"]
    d.gate.enter(a)
    assert d.gate.snapshot() == {"a": 1}
    with pytest.raises(UpstreamError) as e:
        d.gate.enter(a)
    assert e.value.status == 503
    d.gate.leave(a)
    assert d.gate.snapshot() == {}


def test_failover_cools_and_releases_every_slot() -> None:
    d, router = setup()
    tried = []

    async def call(target):
        tried.append(target.key)
        if target.key == "a.m":
            raise UpstreamError("upstream answered HTTP 500", status=500)
        return "ok"

    result, target = asyncio.run(d.run("default", router.candidates("default"), call))
    assert (result, target.key, tried) == ("ok", "b.m", ["a.m", "b.m"])
    assert d.gate.snapshot() == {} and "a.m" in router.cooldowns.snapshot()


def test_a_full_gate_is_skipped_and_all_failed_says_why() -> None:
    d, router = setup()
    d.gate.enter(router.config.providers["a"])

    async def call(target):
        raise UpstreamError("upstream answered HTTP 429", status=429)

    with pytest.raises(AllTargetsFailed) as e:
        asyncio.run(d.run("default", router.candidates("default"), call))
    assert [(a.target, a.status) for a in e.value.attempts] == [("a.m", 503), ("b.m", 429)]
    assert e.value.status == 503  # saturated or rate limited everywhere


def test_a_held_stream_keeps_its_slot_until_closed() -> None:
    d, router = setup()

    async def chunks():
        yield 1
        yield 2

    async def scenario() -> list:
        async def open_one(target):
            return chunks()

        it, target = await d.run("default", router.candidates("default"), open_one, hold=True)
        held = d.held(it, target)
        seen = [await held.__anext__()]
        during = d.gate.snapshot()
        await held.aclose()
        return [seen, during, d.gate.snapshot()]

    assert asyncio.run(scenario()) == [[1], {"a": 1}, {}]
