"""Request traces and the admin API, end to end over HTTP: what a trace holds for a searching request,
a failover, a guard, a stream; the admin key; filters; bodies only when asked; Redis sharing."""

from __future__ import annotations

import json
import time

import anthropic
import httpx
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.observability.activity import LATENCY_BOUNDS_MS, Activity, percentile
from hub.observability.trace import _FAMILIES, client_family

from .fakes.search_providers import KEYS
from .helpers import ServeProcess, base_config, searxng_engine, serper_engine

ADMIN = "admin-key-for-tests-0001"
CLIENT = "client-key-for-tests-01"
SECRET_TEXT = "the user's private question about zebras"


def cfg_with_search(model_url: str, engines: list[dict], **extra) -> dict:
    cfg = base_config(model_url, **extra)
    cfg.setdefault("server", {}).update({"apiKeys": [CLIENT, "second-client-key-02"], "adminKeys": [ADMIN]})
    cfg["webSearch"] = {"engines": engines, "cacheTtlMs": 60000}
    return cfg


def admin(gw, path: str, admin_key: str | None = ADMIN, **params) -> httpx.Response:
    headers = {"authorization": f"Bearer {admin_key}"} if admin_key else {}
    return httpx.get(gw.url + path, headers=headers, params=params, timeout=10)


def search_then_answer(body: dict) -> dict:
    if body["messages"][-1]["role"] == "tool":
        return {"content": "Rust 1.91.0 is out [1]."}
    return {"tool_calls": [{"name": "web_search", "arguments": {"query": "latest rust release"}}]}


def wait_trace(gw, **params) -> list[dict]:
    deadline = time.monotonic() + 5
    while True:
        rows = admin(gw, "/admin/traces", **params).json()["data"]
        if rows or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


def test_admin_paths_need_an_admin_key(gateway, fake_model) -> None:
    off = gateway(base_config(fake_model.url))
    for path in ("/ui", "/admin/traces", "/admin/status", "/admin/traces/x"):
        r = admin(off, path)
        assert r.status_code == 403 and "server.adminKeys" in r.json()["error"]["message"]
    gw = gateway(cfg_with_search(fake_model.url, []), name="b.json")
    for path in ("/ui", "/admin/traces", "/admin/status"):
        assert admin(gw, path, admin_key=None).status_code == 401
        assert admin(gw, path, admin_key="wrong").status_code == 401
        assert admin(gw, path, admin_key=CLIENT).status_code == 401  # a client key is not an admin key
        assert admin(gw, path).status_code == 200
    r = admin(gw, "/ui", admin_key=None)
    assert r.headers["www-authenticate"].startswith("Basic")
    basic = httpx.get(gw.url + "/ui", auth=("anyone", ADMIN), timeout=10)
    assert basic.status_code == 200 and "<title>searchhub</title>" in basic.text
    assert "default-src 'none'" in basic.headers["content-security-policy"]
    assert admin(gw, "/admin/traces", limit="0").status_code == 400
    assert admin(gw, "/admin/traces", since="yesterday").status_code == 400
    assert admin(gw, "/admin/traces/nope").status_code == 404
    # The admin key does not open the model endpoints either.
    r = httpx.post(gw.url + "/v1/chat/completions", headers={"authorization": f"Bearer {ADMIN}"},
                   json={"model": "d", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 401


def test_a_searching_request_explains_itself(gateway, fake_model, search_fakes) -> None:
    gw = gateway(cfg_with_search(fake_model.url, [searxng_engine(search_fakes, default=True)]))
    fake_model.default = search_then_answer
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="second-client-key-02", max_retries=0)
    r = client.chat.completions.create(
        model="default", messages=[{"role": "user", "content": f"search the web for the latest Rust release. {SECRET_TEXT}"}])
    assert r.choices[0].message.content == "Rust 1.91.0 is out [1]."
    rid = r._request_id if hasattr(r, "_request_id") else None
    rows = wait_trace(gw)
    assert len(rows) == 1
    row = rows[0]
    assert rid in (None, row["id"])
    assert row["searched"] and row["calls"] == 1 and row["engines"] == ["searxng"]
    assert row["client"] == "openai-sdk" and row["key"] == "apiKeys[1]" and row["status"] == 200
    t = admin(gw, f"/admin/traces/{row['id']}").json()
    assert t["endpoint"] == "chat" and t["model"] == "default" and t["route"] == "default"
    assert t["target"] == "local.m" and t["rounds"] == 2
    assert [a["outcome"] for a in t["targets"]] == ["ok", "ok"]
    assert t["intent"]["decision"] is True and t["intent"]["rule"] == "en-hard" and t["intent"]["reason"]
    inj = t["injection"]
    assert (inj["decision"], inj["reason"], inj["policy"], inj["mode"]) == (True, "search intent", "selective", "tool")
    (call,) = t["calls"]
    assert call["tool"] == "web_search" and call["engine"] == "searxng" and call["chosenBy"] == "default"
    assert call["query"] == "latest rust release" and call["outcome"] == "ok" and call["hits"] >= 1
    assert call["latencyMs"] >= 0 and call["round"] == 1 and call["cached"] is False
    assert t["sources"][0]["url"] == "https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/"
    assert t["usage"]["total_tokens"] == 30
    assert t["totalMs"] >= t["ttftMs"] > 0
    raw = json.dumps(t)
    assert SECRET_TEXT not in raw and "zebras" not in raw  # no bodies unless trace.bodies
    assert CLIENT not in raw and "second-client-key-02" not in raw and ADMIN not in raw
    assert t["bodies"] is None

    # The same search again is a cache hit, and the trace says so.
    client.chat.completions.create(
        model="default", messages=[{"role": "user", "content": "search the web for the latest Rust release"}])
    latest = admin(gw, "/admin/traces").json()["data"][0]
    assert admin(gw, f"/admin/traces/{latest['id']}").json()["calls"][0]["cached"] is True


def test_failover_guards_and_filters(gateway, fake_model, fake_model_b, search_fakes) -> None:
    cfg = cfg_with_search(fake_model.url, [serper_engine(search_fakes), searxng_engine(search_fakes)])
    cfg["providers"]["b"] = {"type": "vllm", "baseURL": fake_model_b.url}
    cfg["virtualrouter"]["routing"]["default"] = [{"id": "p", "priority": 100, "targets": ["local.m", "b.m"]}]
    cfg["webSearch"]["maxToolIterations"] = 1
    gw = gateway(cfg)
    fake_model.script({"status": 500})
    queries = iter(["q one", "q two", "q three"])
    fake_model_b.default = lambda body: (
        {"content": "done"} if not any(t["function"]["name"] == "web_search" for t in body.get("tools", []))
        else {"tool_calls": [{"name": "web_search", "arguments": {"query": next(queries), "engine": "serper"}}]})
    headers = {"authorization": f"Bearer {CLIENT}", "x-searchhub-chain": "chain-abc", "user-agent": "claude-cli/2.1.330 (external, cli)"}
    r = httpx.post(gw.url + "/v1/chat/completions", headers=headers, timeout=30, json={
        "model": "default", "messages": [{"role": "user", "content": "google the news about rust"}]})
    assert r.status_code == 200, r.text
    # A plain request and a failing one beside it.
    httpx.post(gw.url + "/v1/chat/completions", headers={"authorization": f"Bearer {CLIENT}"}, timeout=30,
               json={"model": "default", "messages": [{"role": "user", "content": "write a haiku"}]})
    bad = httpx.post(gw.url + "/v1/chat/completions", headers={"authorization": f"Bearer {CLIENT}"}, timeout=30,
                     json={"model": "default", "messages": "not a list"})
    assert bad.status_code == 400
    rows = admin(gw, "/admin/traces").json()["data"]
    assert len(rows) == 3
    searched = admin(gw, "/admin/traces", searched="1").json()["data"]
    assert len(searched) == 1 and searched[0]["client"] == "claude-cli"
    t = admin(gw, f"/admin/traces/{searched[0]['id']}").json()
    assert t["targets"][0] == {"target": "local.m", "outcome": "failed", "reason": "upstream answered HTTP 500: boom",
                               "status": 500, "atMs": t["targets"][0]["atMs"], "ms": t["targets"][0]["ms"]}
    assert t["targets"][1]["target"] == "b.m" and t["targets"][1]["outcome"] == "ok"
    assert t["calls"][0]["engine"] == "serper" and t["calls"][0]["chosenBy"] == "model"
    assert t["guards"] == ["max_tool_iterations"]
    chain = t["chain"]
    assert chain and [x["id"] for x in admin(gw, "/admin/traces", chain=chain).json()["data"]] == [t["id"]]
    errors = admin(gw, "/admin/traces", errors="1").json()["data"]
    assert len(errors) == 1 and errors[0]["status"] == 400 and "messages" in errors[0]["error"]
    assert admin(gw, "/admin/traces", key="apiKeys[1]").json()["data"] == []
    assert len(admin(gw, "/admin/traces", key="apiKeys[0]").json()["data"]) == 3
    assert admin(gw, "/admin/traces", since=str(time.time() + 10)).json()["data"] == []


def test_streams_and_messages_are_traced(gateway, fake_model, search_fakes) -> None:
    gw = gateway(cfg_with_search(fake_model.url, [searxng_engine(search_fakes, default=True)]))
    fake_model.default = search_then_answer
    client = anthropic.Anthropic(base_url=gw.url, api_key=CLIENT, max_retries=0)
    with client.messages.stream(model="default", max_tokens=100, messages=[
            {"role": "user", "content": "search the web for the latest Rust release"}]) as s:
        text = s.get_final_text()
    assert "Rust 1.91.0" in text
    row = wait_trace(gw)[0]
    assert row["endpoint"] == "messages" and row["stream"] and row["client"] == "anthropic-sdk"
    t = admin(gw, f"/admin/traces/{row['id']}").json()
    assert t["calls"][0]["engine"] == "searxng" and t["sources"] and t["ttftMs"] is not None
    assert t["ttftMs"] <= t["totalMs"]


def test_bodies_only_when_switched_on_and_tracing_off(gateway, fake_model) -> None:
    cfg = cfg_with_search(fake_model.url, [])
    cfg["trace"] = {"bodies": True}
    gw = gateway(cfg)
    httpx.post(gw.url + "/v1/chat/completions", headers={"authorization": f"Bearer {CLIENT}"}, timeout=30,
               json={"model": "default", "messages": [{"role": "user", "content": SECRET_TEXT}]})
    t = admin(gw, f"/admin/traces/{wait_trace(gw)[0]['id']}").json()
    assert SECRET_TEXT in json.dumps(t["bodies"])
    assert CLIENT not in json.dumps(t)

    cfg["trace"] = {"enabled": False}
    off = gateway(cfg, name="off.json")
    httpx.post(off.url + "/v1/chat/completions", headers={"authorization": f"Bearer {CLIENT}"}, timeout=30,
               json={"model": "default", "messages": [{"role": "user", "content": "hi"}]})
    listing = admin(off, "/admin/traces").json()
    assert listing["enabled"] is False and listing["data"] == []


def test_status_shows_routes_engines_and_reload_errors(gateway, fake_model, search_fakes) -> None:
    cfg = cfg_with_search(fake_model.url, [searxng_engine(search_fakes, default=True)])
    gw = gateway(cfg)
    fake_model.default = search_then_answer
    openai.OpenAI(base_url=gw.url + "/v1", api_key=CLIENT, max_retries=0).chat.completions.create(
        model="default", messages=[{"role": "user", "content": "search the web for the latest Rust release"}])
    s = admin(gw, "/admin/status").json()
    (target,) = s["routes"][0]["pools"][0]["targets"]
    assert target["key"] == "local.m" and target["health"] == "ok" and target["recent"] == {"ok": 2, "failed": 0}
    (engine,) = s["engines"]
    assert engine["id"] == "searxng" and engine["calls"] == 1 and engine["successRate"] == 1.0
    assert engine["p50Ms"] in LATENCY_BOUNDS_MS and engine["cacheHitRatio"] == 0.0
    assert s["series"][-1]["searches"] == 1 and s["series"][-1]["requests"] == 1
    assert s["config"]["hash"] and s["config"]["lastReloadError"] is None
    gw.write_config("{not json")
    deadline = time.monotonic() + 5
    while admin(gw, "/admin/status").json()["config"]["lastReloadError"] is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert KEYS["serper"] not in admin(gw, "/admin/status").text


def test_traces_are_shared_through_redis(gateway, fake_model, search_fakes, redis_server) -> None:
    cfg = cfg_with_search(fake_model.url, [searxng_engine(search_fakes, default=True)])
    cfg["state"] = {"backend": "redis", "url": redis_server.url, "keyPrefix": f"tr{time.time_ns()}:"}
    a = gateway(cfg, name="a.json")
    b = gateway(cfg, name="b.json")
    fake_model.default = search_then_answer
    openai.OpenAI(base_url=a.url + "/v1", api_key=CLIENT, max_retries=0).chat.completions.create(
        model="default", messages=[{"role": "user", "content": "search the web for the latest Rust release"}])
    rows = wait_trace(b)  # written by a's flusher within about a second
    assert len(rows) == 1 and rows[0]["searched"]
    t = admin(b, f"/admin/traces/{rows[0]['id']}").json()
    assert t["calls"][0]["engine"] == "searxng"


# ---------------------------------------------------------------- pure parts


@pytest.mark.parametrize("ua, family", [
    ("claude-cli/2.1.330 (external, cli)", "claude-cli"),
    ("codex_exec/0.169.0 (Debian 12.0.0; x86_64) xterm (codex_exec; 0.169.0)", "codex"),
    ("opencode/1.18.33 ai-sdk/provider-utils/4.0.23 runtime/bun/1.3.14", "opencode"),
    ("QwenCode/0.24.4 (linux; x64)", "qwen-code"),
    ("OpenAI/Python 1.99.0", "openai-sdk"),
    ("AsyncOpenAI/Python 1.99.0", "openai-sdk"),
    ("Anthropic/Python 0.60.0", "anthropic-sdk"),
    ("curl/8.5.0", "curl"),
    ("Mozilla/5.0 (X11; Linux x86_64)", "browser"),
    ("", "other"),
    (None, "other"),
])
def test_client_family(ua, family) -> None:
    assert client_family(ua) == family


def test_codex_originator_wins() -> None:
    assert client_family("node", "codex_cli_rs") == "codex"


@given(st.text(max_size=500), st.one_of(st.none(), st.text(max_size=50)))
def test_client_family_is_a_fixed_vocabulary(ua: str, originator: str | None) -> None:
    assert client_family(ua, originator) in {name for name, _ in _FAMILIES} | {"other"}


def test_activity_percentiles_and_window() -> None:
    now = [1000.0]
    act = Activity(bucket_s=10, keep_s=60, clock=lambda: now[0])
    for ms in (10, 20, 30, 40, 1000):
        act.search("serper", ok=ms < 1000, cached=ms == 10, seconds=ms / 1000)
    e = act.snapshot(60)["engines"]["serper"]
    assert e["calls"] == 5 and e["successRate"] == 0.8 and e["cacheHitRatio"] == 0.2
    assert e["p50Ms"] == 35 and e["p95Ms"] == 1000
    now[0] += 120  # past the kept window
    act.request()
    snap = act.snapshot(60)
    assert snap["engines"] == {} and len(snap["series"]) == 7  # every slot of the kept minute
    assert snap["series"][-1]["requests"] == 1 and sum(b["searches"] for b in snap["series"]) == 0
    assert percentile([0] * len(LATENCY_BOUNDS_MS), 0.5) is None


@given(st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), min_size=1, max_size=50))
def test_percentiles_are_ordered_bounds(seconds: list[float]) -> None:
    act = Activity()
    for s in seconds:
        act.search("e", True, False, s)
    e = act.snapshot()["engines"]["e"]
    assert e["p50Ms"] <= e["p95Ms"]
    # An upper bucket bound, so never below the fastest call (the open last bucket reads as its floor).
    assert e["p50Ms"] >= min(min(seconds) * 1000, LATENCY_BOUNDS_MS[-2])
    ceiling = next((b for b in LATENCY_BOUNDS_MS[:-1] if b >= max(seconds) * 1000), LATENCY_BOUNDS_MS[-2])
    assert e["p95Ms"] <= ceiling  # and never above the bucket of the slowest call


def test_config_keys_for_the_operator_window() -> None:
    from hub import config as cfgmod
    from hub.runtime import PLUGINS

    base = {"providers": {"local": {"type": "vllm", "baseURL": "http://127.0.0.1:9/v1"}},
            "virtualrouter": {"routing": {"default": [{"id": "p", "targets": ["local.m"]}]}}}
    cfg = cfgmod.build({**base, "server": {"adminKeys": ["${ADMIN}"]},
                        "trace": {"ringSize": 50, "sampleRate": 0.25, "bodies": True, "storeTtlMs": 0},
                        "telemetry": {"otlpEndpoint": "http://c:4318/v1/traces", "headers": {"authorization": "t0k"}}},
                       env={"ADMIN": "admin-secret-xyz"}, plugins=PLUGINS)
    assert [k.key for k in cfg.server.admin_keys] == ["admin-secret-xyz"]
    assert (cfg.trace.ring_size, cfg.trace.sample_rate, cfg.trace.bodies, cfg.trace.store_ttl_s) == (50, 0.25, True, 0)
    assert cfg.telemetry.otlp_endpoint == "http://c:4318/v1/traces"
    assert "admin-secret-xyz" not in repr(cfg) and "t0k" not in repr(cfg)
    defaults = cfgmod.build(base, env={}, plugins=PLUGINS)
    assert defaults.trace.enabled and defaults.trace.ring_size == 2000 and not defaults.trace.bodies
    assert defaults.telemetry.otlp_endpoint is None and defaults.server.admin_keys == ()
    for bad, path in (({"trace": {"sampleRate": 2}}, "trace.sampleRate"), ({"trace": {"ringSize": 1}}, "trace.ringSize"),
                      ({"trace": {"color": "red"}}, "trace"), ({"telemetry": {"otlpEndpoint": "grpc://x"}}, "telemetry.otlpEndpoint"),
                      ({"server": {"adminKeys": [""]}}, "server.adminKeys")):
        with pytest.raises(cfgmod.ConfigError) as e:
            cfgmod.build({**base, **bad}, env={}, plugins=PLUGINS)
        assert any(path in err for err in e.value.errors), e.value.errors


def test_a_reload_resizes_the_ring(gateway, fake_model) -> None:
    cfg = cfg_with_search(fake_model.url, [])
    gw = gateway(cfg)
    for _ in range(3):
        httpx.post(gw.url + "/v1/chat/completions", headers={"authorization": f"Bearer {CLIENT}"}, timeout=30,
                   json={"model": "default", "messages": [{"role": "user", "content": "hi"}]})
    assert len(admin(gw, "/admin/traces").json()["data"]) == 3
    cfg["trace"] = {"ringSize": 10, "sampleRate": 0}
    gw.write_config(cfg)
    deadline = time.monotonic() + 5
    while admin(gw, "/admin/status").json()["traces"]["ringSize"] != 10:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    for _ in range(12):  # plain requests are no longer kept (sampleRate 0); failed ones are
        httpx.post(gw.url + "/v1/chat/completions", headers={"authorization": f"Bearer {CLIENT}"}, timeout=30,
                   json={"model": "default", "messages": [{"role": "user", "content": "hi"}]})
    httpx.post(gw.url + "/v1/chat/completions", headers={"authorization": f"Bearer {CLIENT}"}, timeout=30,
               json={"model": "default"})
    rows = admin(gw, "/admin/traces", limit="100").json()["data"]
    assert len(rows) == 4 and rows[0]["status"] == 400


@given(st.binary(max_size=300))
def test_error_message_of_any_body(body: bytes) -> None:
    from routes.app import error_message

    msg = error_message(body)
    assert isinstance(msg, str) and 0 < len(msg) <= 300


@given(st.one_of(st.none(), st.text(max_size=400), st.integers()))
def test_error_message_of_any_error_shape(message) -> None:
    from routes.app import error_message

    body = json.dumps({"type": "error", "error": {"type": "x", "message": message}}).encode()
    msg = error_message(body)
    assert 0 < len(msg) <= 300 and (msg == message[:300] if isinstance(message, str) and message else msg == "error")


def test_claude_codes_websearch_call_is_traced(gateway, fake_model, search_fakes) -> None:
    from .test_claude_code import EXEC, load, replay
    from .test_messages_gateway import ws_config

    cfg = ws_config(fake_model.url, search_fakes)
    cfg["server"]["adminKeys"] = [ADMIN]
    gw = gateway(cfg)

    def estimated() -> float:
        text = httpx.get(gw.url + "/metrics").text
        return float(text.split("\nsearchhub_estimated_usage_total ")[1].split()[0])

    before = estimated()
    replay(gw, load(EXEC[0])["request"])
    assert estimated() == before + 1  # no model ran: the usage is the gateway's estimate
    row = wait_trace(gw)[0]
    assert row["client"] == "claude-cli" and row["endpoint"] == "messages" and row["engines"] == ["google"]
    t = admin(gw, f"/admin/traces/{row['id']}").json()
    assert t["sideRequest"] == "claude-code-websearch"
    assert t["injection"]["decision"] is True and t["injection"]["mode"] == "side-call"
    (call,) = t["calls"]
    assert call["engine"] == "google" and call["chosenBy"] == "default" and call["hits"] >= 1
    assert call["query"] == "latest stable Rust release version"
    assert t["sources"][0]["url"].startswith("https://") and t["rounds"] == 0
    assert t["usageEstimated"] is True and t["usage"]["prompt_tokens"] > 0


@pytest.mark.parametrize("policy, body, expected", [
    ("selective", {"messages": [{"role": "user", "content": "search the web for rust news"}]}, (True, "search intent")),
    ("selective", {"messages": [{"role": "user", "content": "write a haiku"}]}, (False, "no search intent")),
    ("selective", {"messages": [{"role": "user", "content": "hi"}], "enable_web_search": True}, (True, "the client opted in")),
    ("always", {"messages": [{"role": "user", "content": "hi"}]}, (True, "injectPolicy always")),
    ("never", {"messages": [{"role": "user", "content": "search the web for x"}]}, (False, "injectPolicy never")),
    ("auto", {"messages": [{"role": "user", "content": "search the web for x"}]},
     (False, "injectPolicy auto: the client did not opt in")),
    ("selective", {"messages": [{"role": "user", "content": "search the web"}],
                   "tools": [{"type": "function", "function": {"name": "WebSearch"}}]},
     (False, "the client has its own search tool")),
])
def test_injection_reasons(policy: str, body: dict, expected: tuple) -> None:
    from hub import config as cfgmod
    from hub.injection.decide import decide, request_of
    from hub.runtime import PLUGINS

    cfg = cfgmod.build({"providers": {"local": {"type": "vllm", "baseURL": "http://127.0.0.1:9/v1"}},
                        "virtualrouter": {"routing": {"default": [{"targets": ["local.m"]}]}},
                        "webSearch": {"injectPolicy": policy, "engines": [
                            {"id": "s", "type": "searxng", "baseURL": "http://127.0.0.1:9"}]}}, env={},
                       plugins=PLUGINS)
    provider = cfg.providers["local"]
    d = decide(cfg.web_search, provider, request_of(body, body["messages"], force=None, hosted={}))
    assert (d.inject, d.reason) == expected
    off = decide(cfg.web_search, provider, request_of(body, body["messages"], force=False, hosted={}))
    assert (off.inject, off.reason) == (False, "the client switched search off")


def test_the_ring_is_bounded_and_the_listing_incremental() -> None:
    import asyncio

    from hub.config import TraceConfig
    from hub.observability.trace import Trace
    from hub.observability.traces import TraceRecorder

    rec = TraceRecorder(TraceConfig(ring_size=100))
    for i in range(1000):
        t = Trace(f"req_{i}", 1000.0 + i, "chat", status=500 if i % 10 == 0 else 200)
        rec.finish(t)
    rows = asyncio.run(rec.listing(limit=500))
    assert len(rows) == 100 and rows[0]["id"] == "req_999" and rows[-1]["id"] == "req_900"
    newer = asyncio.run(rec.listing(since=1000.0 + 995, limit=500))
    assert [r["id"] for r in newer] == ["req_999", "req_998", "req_997", "req_996"]
    assert [r["id"] for r in asyncio.run(rec.listing(errors=True, limit=3))] == ["req_990", "req_980", "req_970"]
    assert asyncio.run(rec.get("req_950")).id == "req_950" and asyncio.run(rec.get("req_10")) is None
    sampled = TraceRecorder(TraceConfig(sample_rate=0.0))
    for i in range(50):
        sampled.finish(Trace(f"r{i}", 1.0, "chat", status=200))
    sampled.finish(Trace("failed", 2.0, "chat", status=502))
    assert [r["id"] for r in asyncio.run(sampled.listing())] == ["failed"]


def test_responses_requests_are_traced(gateway, fake_model, search_fakes) -> None:
    gw = gateway(cfg_with_search(fake_model.url, [searxng_engine(search_fakes, default=True)]))
    fake_model.default = search_then_answer
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key=CLIENT, max_retries=0)
    r = client.responses.create(model="default", input="search the web for the latest Rust release",
                                tools=[{"type": "web_search"}])
    assert "Rust 1.91.0" in r.output_text
    row = wait_trace(gw)[0]
    assert row["endpoint"] == "responses" and row["searched"] and not row["stream"]
    t = admin(gw, f"/admin/traces/{row['id']}").json()
    assert t["injection"]["reason"] == "the client offered hosted web search" and t["intent"]["decision"] is True
    assert t["calls"][0]["engine"] == "searxng" and t["sources"]


def test_a_trace_reaches_redis_when_the_gateway_stops_right_after_it(gateway, fake_model, redis_server,
                                                                     tmp_path) -> None:
    """The trace of a request answered just before SIGTERM is not lost: it is kept with its batch of
    finished requests (up to 0.1 s later, hub/observability/requests.py), and a graceful shutdown
    writes that batch, then the trace store's last copy (the store's own flusher runs once a second)."""
    cfg = base_config(fake_model.url)
    cfg["server"] = {"adminKeys": [ADMIN]}
    cfg["state"] = {"backend": "redis", "url": redis_server.url, "keyPrefix": f"tr{time.time_ns()}:"}
    fake_model.default = {"content": "hello"}
    proc = ServeProcess(tmp_path, cfg)
    try:
        proc.wait_for("searchhub listening")
        deadline = time.monotonic() + 30
        while True:  # up once /health answers
            try:
                if httpx.get(proc.url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline
            time.sleep(0.05)
        r = httpx.post(proc.url + "/v1/chat/completions", timeout=10,
                       json={"model": "default", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200
        rid = r.headers["x-request-id"]
    finally:
        proc.stop()
    b = gateway(cfg, name="b.json")
    t = admin(b, f"/admin/traces/{rid}")
    assert t.status_code == 200, t.text
    assert t.json()["status"] == 200 and t.json()["target"]
