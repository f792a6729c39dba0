"""hub/routing/router.py directly: route choice, candidate order (priority, rotation, cooling last), pins."""

from __future__ import annotations

import json

import pytest

from hub.config import parse
from hub.routing.router import Cooldowns, Router, UnknownTarget
from hub.runtime import PLUGINS


def router(**vr) -> Router:
    cfg = {
        "providers": {"a": {"type": "vllm", "baseURL": "http://127.0.0.1:9/v1"},
                      "b": {"type": "vllm", "baseURL": "http://127.0.0.1:9/v1"},
                      "oa": {"type": "openai", "baseURL": "http://127.0.0.1:9/v1", "apiKey": "sk-test-000000"}},
        "virtualrouter": {"routing": {
            "default": [{"id": "low", "priority": 10, "targets": ["b.m"]},
                        {"id": "high", "priority": 100, "targets": ["a.x", "a.y"]}],
            "thinking": [{"targets": ["b.think"]}],
            "gpt": [{"targets": ["oa.gpt-5", "a.x"]}]}, **vr},
    }
    return Router(parse(json.dumps(cfg), env={}, plugins=PLUGINS), Cooldowns())


def keys(targets) -> list[str]:
    return [t.key for t in targets]


def test_pools_by_priority_and_rotation_inside_a_pool() -> None:
    r = router()
    first = keys(r.candidates("default"))
    second = keys(r.candidates("default"))
    assert first[-1] == second[-1] == "b.m"  # the low-priority pool comes last
    assert {first[0], second[0]} == {"a.x", "a.y"} and first[0] != second[0]  # round-robin in the pool


def test_cooling_targets_go_last_in_order_of_time_left() -> None:
    r = router(cooldownMs=60000)
    r.cool(r.config.target("a.x"), "boom")
    r.cooldowns.cool("a.y", 1, "short")
    for _ in range(3):
        assert keys(r.candidates("default")) == ["b.m", "a.y", "a.x"]


def test_route_classes_and_pins() -> None:
    r = router()
    assert r.resolve("default").route == "default"
    assert r.resolve("anything", thinking=True).route == "thinking"
    pinned = r.resolve("b.custom-model")
    assert pinned.pinned and keys(pinned.candidates) == ["b.custom-model"]
    assert r.pinned("gpt") is None and r.known("gpt") and r.known("a.whatever") and not r.known("nope.x")
    with pytest.raises(UnknownTarget):
        r.resolve("a.")


def test_serving_keeps_only_targets_of_the_type() -> None:
    r = router()
    gpt = r.serving("gpt", "openai")
    assert gpt is not None and gpt.route == "gpt" and keys(gpt.candidates) == ["oa.gpt-5"]
    assert r.serving("default", "openai") is None
    assert keys(r.serving("oa.gpt-4o", "openai").candidates) == ["oa.gpt-4o"]
    assert r.serving("a.x", "openai") is None
