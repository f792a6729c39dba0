"""Several gateway replicas sharing one real redis-server: chains, stored responses and the search cache
move between them, concurrent chains stay apart, and Redis going away costs sharing, never requests."""

from __future__ import annotations

import asyncio
import itertools
import re
import threading
import time
import uuid

import httpx
import msgspec
import openai
import pytest
import redis

from hub.injection.chain import ChainState, chain_key
from hub.upstream.transport import LeanAiohttpTransport

from .fakes.redis_server import SilentListener, free_port
from .helpers import base_config, searxng_engine

CLIENT_KEY = "client-key"
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
FAST = 1.0  # seconds: no request may take longer while Redis misbehaves (timeoutMs is 250)


def replica_config(model_url: str, fakes, redis_url: str, *, prefix: str | None = None, timeout_ms: int = 250,
                   **ws) -> dict:
    cfg = base_config(model_url)
    cfg["webSearch"] = {"engines": [searxng_engine(fakes)], "cacheTtlMs": 0, **ws}
    cfg["state"] = {"backend": "redis", "url": redis_url, "keyPrefix": prefix or f"t{uuid.uuid4().hex[:8]}:",
                    "timeoutMs": timeout_ms}
    return cfg


def replicas(gateway, cfg: dict) -> tuple:
    return gateway(cfg, name="a.json"), gateway(cfg, name="b.json")


def sdk(gw) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key=CLIENT_KEY, max_retries=0)


def tool_names(req: dict) -> list[str]:
    return [t["function"]["name"] for t in req.get("tools", [])]


def mixed_turn(n: int | str):
    """Fake model: search and call the client's get_weather in one turn, answer once both results are in."""
    def reply(body: dict) -> dict:
        if body["messages"][-1]["role"] == "tool":
            return {"content": f"answer {n} [1]"}
        return {"tool_calls": [{"name": "web_search", "arguments": {"query": f"events {n}"}, "id": f"call_ws_{n}"},
                               {"name": "get_weather", "arguments": {"city": f"c{n}"}, "id": f"call_w_{n}"}]}
    return reply

def interleaved_chains(fake_model, urls, answers: dict[int, str]):
    """Answer each topic with mixed turns; returns `chain(client, n)`: topic n's first turn on one
    replica, its follow-up (after the client's weather result) on the other, its answer in `answers`."""

    def reply(body: dict) -> dict:
        n = re.search(r"topic (\d+)", body["messages"][0]["content"]).group(1)
        return mixed_turn(n)(body)

    fake_model.default = reply

    async def chain(client: httpx.AsyncClient, n: int) -> None:
        history = [{"role": "user", "content": f"search the web for news on topic {n} and check the weather"}]
        r = await client.post(urls[n % 2] + "/v1/chat/completions",
                              json={"model": "d", "messages": history, "tools": [WEATHER]})
        assert r.status_code == 200, r.text
        msg = r.json()["choices"][0]["message"]
        assert [c["id"] for c in msg["tool_calls"]] == [f"call_w_{n}"]
        history += [msg, {"role": "tool", "tool_call_id": f"call_w_{n}", "content": f"weather {n}"}]
        r = await client.post(urls[(n + 1) % 2] + "/v1/chat/completions",  # the other replica
                              json={"model": "d", "messages": history, "tools": [WEATHER]})
        assert r.status_code == 200, r.text
        answers[n] = r.json()["choices"][0]["message"]["content"]

    return chain



def health(gw) -> dict:
    return httpx.get(gw.url + "/health", timeout=5).json()


def metric(gw, name: str) -> float:
    for line in httpx.get(gw.url + "/metrics", timeout=5).text.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


def assert_spliced(sent: list[dict], n: int | str) -> None:
    """The history the model got on the follow-up holds this chain's hidden search, and nothing else."""
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"], sent
    assert sorted(c["id"] for c in sent[1]["tool_calls"]) == sorted([f"call_w_{n}", f"call_ws_{n}"])
    assert sent[2]["tool_call_id"] == f"call_ws_{n}" and "results" in sent[2]["content"]
    assert sent[3] == {"role": "tool", "tool_call_id": f"call_w_{n}", "content": f"weather {n}"}


# ---------------------------------------------------------------- state moves between replicas


@pytest.mark.parametrize("stream", [False, True])
def test_chain_started_on_a_continues_on_b(gateway, fake_model, search_fakes, redis_server, stream) -> None:
    a, b = replicas(gateway, replica_config(fake_model.url, search_fakes, redis_server.url))
    fake_model.default = mixed_turn(1)
    history = [{"role": "user", "content": "search the web for events in Paris and check the weather"}]
    if stream:
        with sdk(a).chat.completions.stream(model="d", messages=history, tools=[WEATHER]) as s:
            r = s.get_final_completion()
    else:
        r = sdk(a).chat.completions.create(model="d", messages=history, tools=[WEATHER])
    msg = r.choices[0].message
    assert r.choices[0].finish_reason == "tool_calls"
    assert [c.function.name for c in msg.tool_calls] == ["get_weather"]
    history += [msg.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": "call_w_1", "content": "weather 1"}]
    r = sdk(b).chat.completions.create(model="d", messages=history, tools=[WEATHER])
    assert r.choices[0].message.content == "answer 1 [1]"
    follow_up = fake_model.requests[-1]
    assert tool_names(follow_up) == ["get_weather", "web_search", "web_fetch"]  # still injected: the chain is sticky on B
    assert_spliced(follow_up["messages"], 1)
    assert r.choices[0].message.annotations  # the hidden search's sources cite on B
    assert len(search_fakes.calls("searxng")) == 1


def test_response_stored_on_a_resolves_on_b(gateway, fake_model, search_fakes, redis_server) -> None:
    a, b = replicas(gateway, replica_config(fake_model.url, search_fakes, redis_server.url))
    fake_model.script({"content": "Nice to meet you, Bob."}, {"content": "Your name is Bob."})
    first = sdk(a).responses.create(model="default", input="My name is Bob.", store=True)
    got = sdk(b).responses.retrieve(first.id)  # at once: stored before A's answer ended
    assert got.id == first.id and got.output_text == "Nice to meet you, Bob."
    second = sdk(b).responses.create(model="default", input="What is my name?", previous_response_id=first.id)
    assert second.output_text == "Your name is Bob."
    assert fake_model.requests[-1]["messages"] == [
        {"role": "user", "content": "My name is Bob."},
        {"role": "assistant", "content": "Nice to meet you, Bob."},
        {"role": "user", "content": "What is my name?"},
    ]
    sdk(b).responses.delete(first.id)
    with pytest.raises(openai.NotFoundError):
        sdk(a).responses.retrieve(first.id)


def test_search_cached_by_a_is_a_hit_on_b(gateway, fake_model, search_fakes, redis_server) -> None:
    a, b = replicas(gateway, replica_config(fake_model.url, search_fakes, redis_server.url, cacheTtlMs=60_000))

    def reply(body: dict) -> dict:
        if body["messages"][-1]["role"] == "tool":
            return {"content": "Rust 1.91.0 is out [1]."}
        return {"tool_calls": [{"name": "web_search", "arguments": {"query": "latest rust release"}}]}

    fake_model.default = reply
    for gw in (a, b):
        r = sdk(gw).chat.completions.create(
            model="d", messages=[{"role": "user", "content": "search the web for the latest Rust release"}])
        assert r.choices[0].message.content == "Rust 1.91.0 is out [1]."
        assert r.choices[0].message.annotations
    assert len(search_fakes.calls("searxng")) == 1
    assert fake_model.requests[1]["messages"][-1]["content"] == fake_model.requests[3]["messages"][-1]["content"]


# ---------------------------------------------------------------- concurrency


def test_200_interleaved_chains_never_see_each_other(gateway, fake_model, search_fakes, redis_server) -> None:
    # Both replicas, the fake model, the fake search and this client share one GIL here, so a burst of
    # 400 requests can stall a replica's event loop past 250 ms and degrade it to memory (correct, but
    # it is not what this test is about). A generous store timeout keeps the test on Redis.
    a, b = replicas(gateway, replica_config(fake_model.url, search_fakes, redis_server.url, timeout_ms=3000))

    answers: dict[int, str] = {}
    chain = interleaved_chains(fake_model, (a.url, b.url), answers)

    async def run() -> None:
        # The aiohttp transport: httpx's own pool spends quadratic time over 400 connections.
        transport = LeanAiohttpTransport(max_connections=400)
        async with httpx.AsyncClient(timeout=30, transport=transport,
                                     headers={"authorization": f"Bearer {CLIENT_KEY}"}) as c:
            await asyncio.gather(*(chain(c, n) for n in range(200)))

    asyncio.run(run())
    assert [health(gw)["state"]["errors"] for gw in (a, b)] == [0, 0]
    assert answers == {n: f"answer {n} [1]" for n in range(200)}
    follow_ups = [r for r in fake_model.requests if r["messages"][-1]["role"] == "tool"]
    assert len(follow_ups) == 200
    for req in follow_ups:
        n = re.search(r"topic (\d+)", req["messages"][0]["content"]).group(1)
        assert_spliced(req["messages"], n)
        assert tool_names(req) == ["get_weather", "web_search", "web_fetch"]
        assert f"events {n}" in req["messages"][2]["content"]  # the search this chain ran, not another's


def test_racing_updates_of_one_chain_lose_nothing(gateway, fake_model, search_fakes, redis_server) -> None:
    """Eight mixed turns of one chain at once, half on each replica: all eight hidden rounds are kept."""
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    a, b = replicas(gateway, replica_config(fake_model.url, search_fakes, redis_server.url, prefix=prefix))
    counter = itertools.count()

    def reply(body: dict) -> dict:
        last = body["messages"][-1]
        n = last["tool_call_id"].removeprefix("call_w_") if last["role"] == "tool" else next(counter)
        return mixed_turn(n)(body)

    fake_model.default = reply
    raw = redis.Redis.from_url(redis_server.url)
    try:
        for round_ in range(3):
            history = [{"role": "user", "content": f"search the web for events, round {round_}, and the weather"}]

            async def turn(client: httpx.AsyncClient, i: int, history=history) -> dict:
                r = await client.post((a, b)[i % 2].url + "/v1/chat/completions",
                                      json={"model": "d", "messages": history, "tools": [WEATHER]})
                assert r.status_code == 200, r.text
                return r.json()["choices"][0]["message"]

            async def race(history=history) -> list[dict]:
                async with httpx.AsyncClient(timeout=30, headers={"authorization": f"Bearer {CLIENT_KEY}"}) as c:
                    return await asyncio.gather(*(turn(c, i) for i in range(8)))

            msgs = asyncio.run(race())
            ids = {m["tool_calls"][0]["id"] for m in msgs}
            assert len(ids) == 8
            stored = raw.get(prefix + chain_key(CLIENT_KEY, history))
            state = msgspec.json.decode(stored[1:], type=ChainState)
            assert state.sticky and {h.client_call_ids[0] for h in state.hidden} == ids
            # Any one of them continues on B with exactly its own hidden search.
            mine = msgs[5]
            n = mine["tool_calls"][0]["id"].removeprefix("call_w_")
            follow = [*history, mine, {"role": "tool", "tool_call_id": f"call_w_{n}", "content": f"weather {n}"}]
            r = sdk(b).chat.completions.create(model="d", messages=follow, tools=[WEATHER])
            assert r.choices[0].message.content == f"answer {n} [1]"
            assert_spliced(fake_model.requests[-1]["messages"], n)
    finally:
        raw.close()


# ---------------------------------------------------------------- Redis faults


@pytest.mark.parametrize("kind", ["refused", "silent"])
def test_redis_unreachable_at_start(gateway, fake_model, search_fakes, kind) -> None:
    listener = SilentListener() if kind == "silent" else None
    url = listener.url if listener else f"redis://127.0.0.1:{free_port()}/0"
    try:
        gw = gateway(replica_config(fake_model.url, search_fakes, url, cacheTtlMs=60_000))
        state = health(gw)["state"]
        assert state["degraded"] is True and state["primary"]["ok"] is False
        assert metric(gw, "searchhub_state_degraded") == 1
        assert metric(gw, "searchhub_state_errors_total") >= 1
        # It serves, and a mixed turn still continues on the same replica from process memory.
        fake_model.default = mixed_turn(7)
        history = [{"role": "user", "content": "search the web for events in Lyon and check the weather"}]
        started = time.monotonic()
        r = sdk(gw).chat.completions.create(model="d", messages=history, tools=[WEATHER])
        history += [r.choices[0].message.model_dump(exclude_none=True),
                    {"role": "tool", "tool_call_id": "call_w_7", "content": "weather 7"}]
        r = sdk(gw).chat.completions.create(model="d", messages=history, tools=[WEATHER])
        assert time.monotonic() - started < 2 * FAST
        assert r.choices[0].message.content == "answer 7 [1]"
        assert_spliced(fake_model.requests[-1]["messages"], 7)
    finally:
        if listener:
            listener.close()


class Traffic(threading.Thread):
    """Mixed turns in a loop, each started on A and continued on B, recording status and latency."""

    def __init__(self, a, b) -> None:
        super().__init__(daemon=True)
        self.a, self.b = a, b
        self.results: list[tuple[int, float]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        with httpx.Client(timeout=10, headers={"authorization": f"Bearer {CLIENT_KEY}"}) as c:
            for n in itertools.count():
                if self.stop.is_set():
                    return
                history = [{"role": "user", "content": f"search the web for traffic item {n} and the weather"}]
                status, msg = self._post(c, self.a, history)
                if status == 200:
                    history += [msg, {"role": "tool", "tool_call_id": msg["tool_calls"][0]["id"], "content": "w"}]
                    self._post(c, self.b, history)

    def _post(self, c: httpx.Client, gw, history: list[dict]) -> tuple[int, dict | None]:
        started = time.monotonic()
        r = c.post(gw.url + "/v1/chat/completions", json={"model": "d", "messages": history, "tools": [WEATHER]})
        self.results.append((r.status_code, time.monotonic() - started))
        return r.status_code, r.json()["choices"][0]["message"] if r.status_code == 200 else None


def _wait_for(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_redis_stopped_mid_traffic_then_restarted(gateway, fake_model, search_fakes, own_redis) -> None:
    a, b = replicas(gateway, replica_config(fake_model.url, search_fakes, own_redis.url, cacheTtlMs=60_000))
    fake_model.default = lambda body: mixed_turn(len(body["messages"]))(body)
    traffic = Traffic(a, b)
    traffic.start()
    try:
        _wait_for(lambda: len(traffic.results) >= 10, 5, "traffic")
        errors_before = metric(a, "searchhub_state_errors_total")
        own_redis.stop()
        _wait_for(lambda: health(a)["state"]["degraded"], 3, "A to notice")
        served = len(traffic.results)
        _wait_for(lambda: len(traffic.results) >= served + 10, 5, "traffic while Redis is down")
        state = health(a)["state"]
        assert state["primary"]["ok"] is False and state["last_error"]
        assert metric(a, "searchhub_state_degraded") == 1
        assert metric(a, "searchhub_state_errors_total") > errors_before

        own_redis.start()  # same port, empty: no persistence
        _wait_for(lambda: not health(a)["state"]["degraded"] and not health(b)["state"]["degraded"], 6,
                  "recovery without a restart")
        assert metric(a, "searchhub_state_degraded") == 0
    finally:
        traffic.stop.set()
        traffic.join(10)
    assert traffic.results and all(status == 200 for status, _ in traffic.results)
    assert max(latency for _, latency in traffic.results) < FAST
    # Shared again: a chain started on A continues on B with its hidden search.
    fake_model.default = mixed_turn("again")
    history = [{"role": "user", "content": "search the web for events in Nice and check the weather"}]
    r = sdk(a).chat.completions.create(model="d", messages=history, tools=[WEATHER])
    history += [r.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": "call_w_again", "content": "weather again"}]
    sdk(b).chat.completions.create(model="d", messages=history, tools=[WEATHER])
    assert_spliced(fake_model.requests[-1]["messages"], "again")


def test_paused_redis_never_holds_a_request(gateway, fake_model, search_fakes, own_redis) -> None:
    gw = gateway(replica_config(fake_model.url, search_fakes, own_redis.url, cacheTtlMs=60_000))
    fake_model.default = lambda body: mixed_turn(len(body["messages"]))(body)
    own_redis.pause()
    latencies: list[float] = []

    def one(n: int, client: httpx.Client) -> None:
        history = [{"role": "user", "content": f"search the web for paused item {n} and the weather"}]
        started = time.monotonic()
        r = client.post("/v1/chat/completions", json={"model": "d", "messages": history, "tools": [WEATHER]})
        msg = r.json()["choices"][0]["message"]
        history += [msg, {"role": "tool", "tool_call_id": msg["tool_calls"][0]["id"], "content": "w"}]
        r2 = client.post("/v1/chat/completions", json={"model": "d", "messages": history, "tools": [WEATHER]})
        latencies.append(time.monotonic() - started)
        assert r.status_code == r2.status_code == 200

    try:
        with gw.client() as client:
            threads = [threading.Thread(target=one, args=(n, client)) for n in range(8)]  # at once
            for t in threads:
                t.start()
            for t in threads:
                t.join(10)
            for n in range(8, 40):  # then in a row, across the 2 s probe interval
                one(n, client)
                time.sleep(0.05)
        assert len(latencies) == 40
        assert max(latencies) < FAST, sorted(latencies)[-5:]
        state = health(gw)["state"]
        assert state["degraded"] is True and "no answer within 250 ms" in state["last_error"]
    finally:
        own_redis.resume()
    _wait_for(lambda: (sdk(gw).chat.completions.create(
        model="d", messages=[{"role": "user", "content": "search the web for resumed"}]) and
        not health(gw)["state"]["degraded"]), 6, "recovery after SIGCONT")


def test_chain_state_keys_expire(gateway, fake_model, search_fakes, redis_server) -> None:
    """What lives in Redis carries a TTL: chain state chainTtlMs, stored responses storeTtlMs, cache cacheTtlMs."""
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    cfg = replica_config(fake_model.url, search_fakes, redis_server.url, prefix=prefix, cacheTtlMs=120_000,
                         chainTtlMs=600_000)
    cfg["responses"] = {"storeTtlMs": 300_000}
    gw = gateway(cfg)
    fake_model.default = mixed_turn(3)
    sdk(gw).chat.completions.create(
        model="d", messages=[{"role": "user", "content": "search the web for events in Rome and the weather"}],
        tools=[WEATHER])
    fake_model.default = {"content": "hi"}
    sdk(gw).responses.create(model="default", input="hello", store=True)
    raw = redis.Redis.from_url(redis_server.url)
    try:
        ttls = {k.decode().removeprefix(prefix).split(":")[0]: raw.pttl(k) for k in raw.keys(prefix + "*")}
    finally:
        raw.close()
    assert set(ttls) == {"chain", "cache", "resp"}, ttls
    assert 590_000 < ttls["chain"] <= 600_000
    assert 110_000 < ttls["cache"] <= 120_000
    assert 290_000 < ttls["resp"] <= 300_000
