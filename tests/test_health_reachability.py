"""/health reports whether each provider's base URL accepts a TCP connection and whether each route
has a reachable target, over HTTP against fake upstreams on loopback; HTTP 200 either way."""

from __future__ import annotations

import time

import httpx

from hub.upstream.reachability import THROUGH_PROXY, Reachability

from .fakes.model import FakeModel
from .helpers import base_config, free_port

PASSWORD = "hunter2-very-secret"


def health(gw) -> dict:
    r = httpx.get(gw.url + "/health", timeout=10, trust_env=False)  # the tests' own proxy settings are not ours
    assert r.status_code == 200  # whatever the upstreams do: a load balancer must not flap
    return r.json()


def probe_every(gw, ttl_s: float) -> None:
    """The gateway's probes with a short cache (before its first /health makes the default one)."""
    gw.server.app.reachability = Reachability(ttl_s=ttl_s)


def test_a_route_whose_only_target_is_down_is_degraded(gateway) -> None:
    port = free_port()
    gw = gateway(base_config(f"http://127.0.0.1:{port}/v1"))
    started = time.monotonic()
    h = health(gw)
    assert time.monotonic() - started < 2  # the probe's deadline bounds the wait
    assert h["status"] == "degraded"
    url = f"http://127.0.0.1:{port}/v1"
    assert h["reasons"] == [f"route 'default' has no reachable target: {url}: connection refused"]
    local = h["providers"]["local"]
    assert local["reachable"] is False and local["url"] == url and local["reason"] == "connection refused"
    assert isinstance(local["checkedAt"], float) and abs(local["checkedAt"] - time.time()) < 60
    assert local["type"] == "vllm" and local["selfHosted"] is True  # what it reported before stays
    assert h["reachability"]["routes"] == {"default": {"reachable": False, "targets": {"local.m": False}}}
    assert h["reachability"]["cacheSeconds"] == 10.0
    # Everything /health said before is still there.
    assert h["routes"] == {"default": ["local.m"]}
    assert {"pid", "config", "cooldowns", "inFlight", "state"} <= h.keys()


def test_ok_while_listening_cached_then_degraded_once_it_stops(gateway) -> None:
    model = FakeModel("reach").start()
    stopped = False
    try:
        gw = gateway(base_config(model.url))
        probe_every(gw, 0.3)
        h = health(gw)
        assert h["status"] == "ok" and h["reasons"] == []
        local = h["providers"]["local"]
        assert local["reachable"] is True and local["url"] == model.url
        assert h["reachability"]["routes"]["default"]["reachable"] is True
        assert health(gw)["providers"]["local"]["checkedAt"] == local["checkedAt"]  # served from the cache
        model.stop()
        stopped = True
        deadline = time.monotonic() + 5
        while (h := health(gw))["status"] == "ok":
            assert time.monotonic() < deadline, h
            time.sleep(0.05)
        assert h["status"] == "degraded"
        assert h["providers"]["local"]["reachable"] is False
        assert h["providers"]["local"]["checkedAt"] > local["checkedAt"]
        assert h["reasons"] == [f"route 'default' has no reachable target: {model.url}: connection refused"]
    finally:
        if not stopped:
            model.stop()


def test_one_reachable_target_is_enough(gateway, fake_model) -> None:
    port = free_port()
    cfg = base_config(f"http://127.0.0.1:{port}/v1")
    cfg["providers"]["up"] = {"type": "vllm", "baseURL": fake_model.url}
    cfg["virtualrouter"]["routing"]["default"].append({"id": "b", "priority": 50, "targets": ["up.m"]})
    cfg["virtualrouter"]["routing"]["coding"] = [{"targets": ["local.coder"]}]
    gw = gateway(cfg)
    h = health(gw)
    assert h["reachability"]["routes"]["default"] == {"reachable": True, "targets": {"local.m": False, "up.m": True}}
    assert h["reachability"]["routes"]["coding"]["reachable"] is False
    assert h["status"] == "degraded" and len(h["reasons"]) == 1 and h["reasons"][0].startswith("route 'coding'")


def test_credentials_in_the_base_url_are_masked(gateway) -> None:
    port = free_port()
    gw = gateway(base_config(f"http://admin:{PASSWORD}@127.0.0.1:{port}/v1"))
    r = httpx.get(gw.url + "/health", timeout=10)
    assert PASSWORD not in r.text
    assert r.json()["providers"]["local"]["url"] == f"http://****@127.0.0.1:{port}/v1"


def test_a_provider_behind_its_own_proxy_is_not_probed(gateway) -> None:
    port = free_port()
    cfg = base_config("http://model.test/v1")
    cfg["providers"]["local"]["proxy"] = f"http://user:{PASSWORD}@127.0.0.1:{port}"
    gw = gateway(cfg)
    r = httpx.get(gw.url + "/health", timeout=10)
    assert PASSWORD not in r.text
    h = r.json()
    assert h["providers"]["local"]["reachable"] is None and h["providers"]["local"]["reason"] == THROUGH_PROXY
    assert h["reachability"]["routes"]["default"]["reachable"] is None
    assert h["status"] == "ok" and h["reasons"] == []


def test_a_provider_behind_the_environments_proxy_is_not_probed(gateway, monkeypatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")
    port = free_port()
    cfg = base_config("http://model.test/v1")
    cfg["providers"]["near"] = {"type": "vllm", "baseURL": f"http://127.0.0.1:{port}/v1"}  # loopback: no proxy
    cfg["virtualrouter"]["routing"]["near"] = [{"targets": ["near.m"]}]
    gw = gateway(cfg)
    h = health(gw)
    assert h["providers"]["local"]["reachable"] is None and h["providers"]["local"]["reason"] == THROUGH_PROXY
    assert h["providers"]["near"]["reachable"] is False
    assert h["reasons"] == [
        f"route 'near' has no reachable target: http://127.0.0.1:{port}/v1: connection refused"]


def test_a_host_that_does_not_resolve_is_unreachable(gateway, monkeypatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    gw = gateway(base_config("http://searchhub-no-such-host.invalid/v1"))
    started = time.monotonic()
    h = health(gw)
    assert time.monotonic() - started < 2
    local = h["providers"]["local"]
    assert local["reachable"] is False and local["url"] == "http://searchhub-no-such-host.invalid/v1"
    assert h["status"] == "degraded"
