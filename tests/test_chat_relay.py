"""/v1/chat/completions through the gateway to fake backends, driven by the official openai SDK."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time

import httpx
import openai
import pytest

from .helpers import base_config, free_port


def sdk(gw, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key=kw.pop("api_key", "k"), max_retries=0, **kw)


def test_non_streaming_relay(gateway, fake_model) -> None:
    gw = gateway(base_config(fake_model.url))
    fake_model.script({"content": "hello there"})
    r = sdk(gw).chat.completions.create(model="anything", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "hello there"
    assert r.choices[0].finish_reason == "stop"
    # The client's model name goes to the default route and is not sent upstream.
    assert fake_model.requests[0]["model"] == "m"
    assert fake_model.requests[0]["messages"] == [{"role": "user", "content": "hi"}]


def test_streaming_relay_with_usage(gateway, fake_model) -> None:
    gw = gateway(base_config(fake_model.url))
    fake_model.script({"content": "one two three four"})
    stream = sdk(gw).chat.completions.create(model="default", messages=[{"role": "user", "content": "hi"}],
                                             stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three four"
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == 15
    assert sum(1 for c in chunks if c.choices and c.choices[0].finish_reason) == 1


def test_stream_helper_accumulates(gateway, fake_model) -> None:
    gw = gateway(base_config(fake_model.url))
    fake_model.script({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}], "content": ""})
    with sdk(gw).chat.completions.stream(
        model="default", messages=[{"role": "user", "content": "weather?"}],
        tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
    ) as s:
        final = s.get_final_completion()
    call = final.choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}
    assert final.choices[0].finish_reason == "tool_calls"


@pytest.mark.anyio
async def test_async_client(gateway, fake_model) -> None:
    gw = gateway(base_config(fake_model.url))
    fake_model.default = {"content": "async ok"}
    client = openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    r = await client.chat.completions.create(model="default", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "async ok"
    stream = await client.chat.completions.create(model="default", messages=[{"role": "user", "content": "hi"}],
                                                  stream=True)
    parts = [c.choices[0].delta.content async for c in stream if c.choices and c.choices[0].delta.content]
    assert "".join(parts) == "async ok"
    await client.close()


@pytest.mark.parametrize("stream", [False, True])
def test_quirks_normalized(gateway, fake_model, stream) -> None:
    """Ollama-style whole calls, arguments as an object, no ids, finish_reason 'stop' with tool calls."""
    gw = gateway(base_config(fake_model.url))
    fake_model.script({"tool_calls": [{"name": "f", "arguments": {"a": 1}}], "finish_reason": "stop",
                       "no_ids": True, "args_as_object": not stream, "ollama": stream})
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    client = sdk(gw)
    if stream:
        with client.chat.completions.stream(model="default", messages=[{"role": "user", "content": "x"}],
                                            tools=tools) as s:
            r = s.get_final_completion()
    else:
        r = client.chat.completions.create(model="default", messages=[{"role": "user", "content": "x"}], tools=tools)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.id.startswith("call_") and len(call.id) > 8
    assert json.loads(call.function.arguments) == {"a": 1}


def test_pinned_model_and_unknown_pin(gateway, fake_model, fake_model_b) -> None:
    cfg = base_config(fake_model.url)
    cfg["providers"]["other"] = {"type": "ollama", "baseURL": fake_model_b.url}
    gw = gateway(cfg)
    fake_model_b.script({"content": "from b"})
    r = sdk(gw).chat.completions.create(model="other.qwen3:8b", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "from b"
    assert fake_model_b.requests[0]["model"] == "qwen3:8b"
    # An unknown provider prefix is just a model name: it goes to the default route.
    r = sdk(gw).chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}])
    assert fake_model.requests[-1]["model"] == "m"


def test_failover_and_cooldown(gateway, fake_model, fake_model_b) -> None:
    cfg = base_config(fake_model.url)
    cfg["providers"]["b"] = {"type": "vllm", "baseURL": fake_model_b.url}
    cfg["virtualrouter"]["routing"]["default"] = [
        {"id": "primary", "priority": 200, "targets": ["local.m"]},
        {"id": "backup", "priority": 100, "targets": ["b.m2"]},
    ]
    gw = gateway(cfg)
    fake_model.script({"status": 503})
    fake_model_b.default = {"content": "backup answered"}
    client = sdk(gw)
    r = client.chat.completions.create(model="default", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "backup answered"
    assert len(fake_model.requests) == 1
    # The failed target is cooling down: the next request goes straight to the backup.
    r = client.chat.completions.create(model="default", messages=[{"role": "user", "content": "hi"}], stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in r if c.choices) == "backup answered"
    assert len(fake_model.requests) == 1
    health = httpx.get(gw.url + "/health").json()
    assert "local.m" in health["cooldowns"]


def test_client_4xx_is_returned_as_is(gateway, fake_model, fake_model_b) -> None:
    cfg = base_config(fake_model.url)
    cfg["providers"]["b"] = {"type": "vllm", "baseURL": fake_model_b.url}
    cfg["virtualrouter"]["routing"]["default"] = [{"targets": ["local.m"]}, {"priority": 1, "targets": ["b.m"]}]
    gw = gateway(cfg)
    fake_model.script({"status": 400, "body": {"error": {"message": "context too long", "type": "BadRequestError",
                                                         "param": None, "code": 400}}})
    with pytest.raises(openai.BadRequestError) as e:
        sdk(gw).chat.completions.create(model="default", messages=[{"role": "user", "content": "hi"}])
    assert "context too long" in str(e.value)
    assert fake_model_b.requests == []


@pytest.mark.parametrize("stream", [False, True])
def test_all_targets_fail_lists_attempts(gateway, fake_model, stream) -> None:
    cfg = base_config(fake_model.url)
    cfg["providers"]["dead"] = {"type": "vllm", "baseURL": f"http://127.0.0.1:{free_port()}/v1",
                                "apiKey": "sk-canary-secret-000"}
    cfg["virtualrouter"]["routing"]["default"] = [{"targets": ["dead.m"]}, {"priority": 1, "targets": ["local.m"]}]
    gw = gateway(cfg)
    fake_model.script({"status": 500})
    r = httpx.post(gw.url + "/v1/chat/completions", json={"model": "default", "stream": stream,
                                                          "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 502
    err = r.json()["error"]
    assert err["type"] == "server_error"
    assert [a["target"] for a in err["attempts"]] == ["dead.m", "local.m"]
    assert "sk-canary-secret-000" not in r.text
    assert r.headers["x-request-id"]


def test_timeout_fails_over(gateway, fake_model, fake_model_b) -> None:
    cfg = base_config(fake_model.url)
    cfg["providers"]["local"]["timeoutMs"] = 300
    cfg["providers"]["b"] = {"type": "vllm", "baseURL": fake_model_b.url}
    cfg["virtualrouter"]["routing"]["default"] = [{"targets": ["local.m"]}, {"priority": 1, "targets": ["b.m"]}]
    gw = gateway(cfg)
    fake_model.script({"delay": 2, "content": "late"})
    fake_model_b.script({"content": "fast"})
    t0 = time.monotonic()
    r = sdk(gw).chat.completions.create(model="default", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "fast"
    assert time.monotonic() - t0 < 1.5


def test_stream_cut_midway_ends_with_error_event(gateway, fake_model) -> None:
    gw = gateway(base_config(fake_model.url))
    fake_model.script({"content": "a b c d e f g h", "cut_after": 3})
    with httpx.stream("POST", gw.url + "/v1/chat/completions",
                      json={"model": "default", "stream": True, "messages": [{"role": "user", "content": "hi"}]}) as r:
        lines = [line for line in r.iter_lines() if line.startswith("data: ")]
    assert r.status_code == 200
    assert '"error"' in lines[-1] and lines[-1] != "data: [DONE]"
    with pytest.raises(openai.APIError):
        fake_model.script({"content": "a b c d e f g h", "cut_after": 3})
        list(sdk(gw).chat.completions.create(model="default", messages=[{"role": "user", "content": "hi"}],
                                             stream=True))


@pytest.mark.parametrize("stream", [False, True])
def test_client_disconnect_cancels_upstream(gateway, fake_model, stream, caplog) -> None:
    gw = gateway(base_config(fake_model.url))
    closed_before = _closed_requests(gw)
    uvicorn_log = logging.getLogger("uvicorn")  # its own handler, not propagated: listen there too
    uvicorn_log.addHandler(caplog.handler)
    try:
        reply = {"content": " ".join(["w"] * 200), "chunk_delay": 0.05} if stream else {"delay": 5, "content": "x"}
        fake_model.script(reply)
        body = {"model": "default", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}
        if stream:
            with httpx.Client(timeout=5) as c, c.stream("POST", gw.url + "/v1/chat/completions", json=body) as r:
                for _ in r.iter_bytes():
                    break  # hang up after the first bytes
        else:
            with pytest.raises(httpx.ReadTimeout), httpx.Client(timeout=httpx.Timeout(0.5, read=0.5)) as c:
                c.post(gw.url + "/v1/chat/completions", json=body)
        deadline = time.monotonic() + 5
        while fake_model.cancelled == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
    finally:
        uvicorn_log.removeHandler(caplog.handler)
    assert fake_model.cancelled == 1
    # A hang-up is an outcome, not a crash: no traceback from the server, and a request that had no
    # answer yet counts as 499 (a stream had its 200 already).
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    assert _closed_requests(gw) - closed_before == (0 if stream else 1)


def test_client_that_hangs_up_mid_body_is_a_499_not_a_crash(gateway, fake_model, caplog) -> None:
    """Headers promise 1000 bytes, 20 arrive, the connection closes: counted as 499, nothing logged
    as an error, no model call."""
    gw = gateway(base_config(fake_model.url))
    closed_before = _closed_requests(gw)
    calls_before = len(fake_model.requests)
    host, port = gw.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as s:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                  b"content-length: 1000\r\n\r\n" + b'{"model": "default", ')
        time.sleep(0.2)
    deadline = time.monotonic() + 5
    while _closed_requests(gw) == closed_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _closed_requests(gw) - closed_before == 1
    assert len(fake_model.requests) == calls_before
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


def _closed_requests(gw) -> float:
    """searchhub_requests_total for chat completions with status 499 (metrics are per process)."""
    prefix = 'searchhub_requests_total{endpoint="completions",status="499"} '
    lines = [x for x in httpx.get(gw.url + "/metrics").text.splitlines() if x.startswith(prefix)]
    return float(lines[0].removeprefix(prefix)) if lines else 0.0


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        (b"{not json", 400, None),
        (b"[]", 400, None),
        (json.dumps({"model": "default"}).encode(), 400, "messages"),
        (json.dumps({"model": "default", "messages": "hi"}).encode(), 400, "messages"),
        (json.dumps({"model": 3, "messages": [{"role": "user", "content": "x"}]}).encode(), 400, "model"),
        (json.dumps({"model": "d", "messages": [{"role": "wizard", "content": "x"}]}).encode(), 400,
         "messages[0].role"),
        (json.dumps({"model": "d", "messages": [{"role": "user", "content": 5}]}).encode(), 400,
         "messages[0].content"),
        (json.dumps({"model": "d", "stream": "yes", "messages": [{"role": "user", "content": "x"}]}).encode(), 400,
         "stream"),
        (json.dumps({"model": "local.nope", "messages": [{"role": "user", "content": "x"}]}).encode(), 200, None),
    ],
)
def test_bad_input_errors(gateway, fake_model, body, status, param) -> None:
    gw = gateway(base_config(fake_model.url))
    r = httpx.post(gw.url + "/v1/chat/completions", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    if status != 200:
        err = r.json()["error"]
        assert set(err) >= {"message", "type", "param", "code"}
        assert err["type"] == "invalid_request_error"
        assert err["param"] == param


def test_oversize_body_413(gateway, fake_model) -> None:
    cfg = base_config(fake_model.url)
    cfg["server"]["maxBodyBytes"] = 2048
    gw = gateway(cfg)
    r = httpx.post(gw.url + "/v1/chat/completions",
                   json={"model": "d", "messages": [{"role": "user", "content": "x" * 5000}]})
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "request_too_large"


def test_unknown_path_and_method(gateway, fake_model) -> None:
    gw = gateway(base_config(fake_model.url))
    r = httpx.get(gw.url + "/v1/nothing")
    assert r.status_code == 404 and "error" in r.json()
    r = httpx.get(gw.url + "/v1/chat/completions")
    assert r.status_code == 405 and "error" in r.json()


def test_auth(gateway, fake_model) -> None:
    cfg = base_config(fake_model.url)
    cfg["server"]["apiKeys"] = ["gw-key-1", "gw-key-2"]
    gw = gateway(cfg)
    with pytest.raises(openai.AuthenticationError):
        sdk(gw, api_key="wrong").chat.completions.create(model="d", messages=[{"role": "user", "content": "x"}])
    assert sdk(gw, api_key="gw-key-2").chat.completions.create(
        model="d", messages=[{"role": "user", "content": "x"}]).choices[0].message.content == "ok"
    r = httpx.post(gw.url + "/v1/chat/completions", headers={"x-api-key": "gw-key-1"},
                   json={"model": "d", "messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 200
    # The gateway's key is not forwarded upstream.
    assert "gw-key-1" not in json.dumps(fake_model.headers[-1])
    assert httpx.get(gw.url + "/health").status_code == 200


def test_models_and_health(gateway, fake_model) -> None:
    cfg = base_config(fake_model.url)
    cfg["virtualrouter"]["routing"]["coding"] = [{"targets": ["local.coder"]}]
    gw = gateway(cfg)
    ids = [m.id for m in sdk(gw).models.list().data]
    assert ids[:2] == ["default", "coding"] and "local.m" in ids and "local.coder" in ids
    h = httpx.get(gw.url + "/health").json()
    assert h["status"] == "ok" and h["config"]["lastReloadError"] is None
    assert h["routes"]["coding"] == ["local.coder"]


def test_request_id_echoed_or_generated(gateway, fake_model) -> None:
    gw = gateway(base_config(fake_model.url))
    r = httpx.post(gw.url + "/v1/chat/completions", headers={"x-request-id": "abc-123"},
                   json={"model": "d", "messages": [{"role": "user", "content": "x"}]})
    assert r.headers["x-request-id"] == "abc-123"
    r = httpx.get(gw.url + "/health")
    assert r.headers["x-request-id"].startswith("req_")


def test_hot_reload_valid_and_invalid(gateway, fake_model, fake_model_b) -> None:
    cfg = base_config(fake_model.url)
    gw = gateway(cfg)
    fake_model.default = {"content": "from a"}
    fake_model_b.default = {"content": "from b"}
    client = sdk(gw)
    ask = lambda: client.chat.completions.create(model="d", messages=[{"role": "user", "content": "x"}])  # noqa: E731
    assert ask().choices[0].message.content == "from a"
    # A valid edit: routing changes without a restart.
    cfg["providers"]["local"]["baseURL"] = fake_model_b.url
    gw.write_config(cfg)
    deadline = time.monotonic() + 5
    while ask().choices[0].message.content != "from b":
        assert time.monotonic() < deadline, "reload not picked up"
        time.sleep(0.1)
    # An invalid edit is rejected; the previous config keeps serving; /health shows the error.
    gw.write_config('{"providers": {}, "virtualrouter": ')
    deadline = time.monotonic() + 5
    while httpx.get(gw.url + "/health").json()["config"]["lastReloadError"] is None:
        assert time.monotonic() < deadline, "invalid reload not reported"
        time.sleep(0.1)
    assert "invalid JSON" in httpx.get(gw.url + "/health").json()["config"]["lastReloadError"]
    assert ask().choices[0].message.content == "from b"
    bad = json.loads(json.dumps(cfg))
    bad["virtualrouter"]["routing"]["default"][0]["targets"] = ["ghost.m"]
    gw.write_config(bad)
    deadline = time.monotonic() + 5
    while "ghost" not in (httpx.get(gw.url + "/health").json()["config"]["lastReloadError"] or ""):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert ask().choices[0].message.content == "from b"


def test_in_flight_request_finishes_on_its_config(gateway, fake_model, fake_model_b) -> None:
    cfg = base_config(fake_model.url)
    gw = gateway(cfg)
    fake_model.script({"delay": 0.8, "content": "old config"})
    fake_model_b.default = {"content": "new config"}

    async def run() -> tuple[str, str]:
        client = openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
        slow = asyncio.create_task(client.chat.completions.create(
            model="d", messages=[{"role": "user", "content": "x"}]))
        await asyncio.sleep(0.2)
        new = json.loads(json.dumps(cfg))
        new["providers"]["local"]["baseURL"] = fake_model_b.url
        gw.write_config(new)
        await asyncio.sleep(0.5)
        fast = await client.chat.completions.create(model="d", messages=[{"role": "user", "content": "x"}])
        return (await slow).choices[0].message.content, fast.choices[0].message.content

    assert asyncio.run(run()) == ("old config", "new config")


def test_route_classes_when_configured(gateway, fake_model) -> None:
    cfg = base_config(fake_model.url)
    cfg["virtualrouter"]["longContextThresholdTokens"] = 100
    cfg["virtualrouter"]["routing"].update({
        "longcontext": [{"targets": ["local.long"]}],
        "thinking": [{"targets": ["local.think"]}],
        "background": [{"targets": ["local.small"]}],
    })
    gw = gateway(cfg)
    client = sdk(gw)
    msg = [{"role": "user", "content": "hi"}]
    client.chat.completions.create(model="claude-haiku-4-5", messages=msg)
    assert fake_model.requests[-1]["model"] == "small"
    client.chat.completions.create(model="whatever", messages=msg, reasoning_effort="high")
    assert fake_model.requests[-1]["model"] == "think"
    client.chat.completions.create(model="whatever", messages=[{"role": "user", "content": "x " * 400}])
    assert fake_model.requests[-1]["model"] == "long"
    client.chat.completions.create(model="whatever", messages=msg)
    assert fake_model.requests[-1]["model"] == "m"
    # Without the classes configured, the same requests all go to default.
    gw2 = gateway(base_config(fake_model.url), name="plain.json")
    sdk(gw2).chat.completions.create(model="claude-haiku-4-5", messages=msg, reasoning_effort="high")
    assert fake_model.requests[-1]["model"] == "m"
