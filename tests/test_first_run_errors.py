"""A first run with no model server: the error names each URL tried (credentials masked) and says how
to point the gateway at a server, on all three protocols, streamed or not, over HTTP against closed
loopback ports."""

from __future__ import annotations

import json

import httpx
import pytest

from hub.config import parse
from hub.runtime import PLUGINS

from .helpers import base_config, free_port, serper_engine

PASSWORD = "hunter2-very-secret"
VAR = "SEARCHHUB_TEST_FIRST_RUN_URL"  # never set: the default in ${VAR:-...} is used
HI = [{"role": "user", "content": "hi"}]
ANTHROPIC = {"anthropic-version": "2023-06-01"}


@pytest.fixture
def dead(gateway, monkeypatch):
    """A gateway whose default route has two targets on closed ports: one written with ${VAR:-url},
    one with credentials in its URL."""
    monkeypatch.delenv(VAR, raising=False)
    p1, p2 = free_port(), free_port()
    cfg = base_config("unused")
    cfg["providers"] = {
        "ollama": {"type": "ollama", "baseURL": "${" + VAR + f":-http://127.0.0.1:{p1}/v1}}"},
        "llamacpp": {"type": "llamacpp", "baseURL": f"http://admin:{PASSWORD}@127.0.0.1:{p2}/v1/"},
    }
    cfg["virtualrouter"]["routing"]["default"] = [
        {"id": "local", "priority": 100, "targets": ["ollama.qwen3:8b"]},
        {"id": "fallback", "priority": 50, "targets": ["llamacpp.default"]},
    ]
    gw = gateway(cfg)
    return gw, p1, p2


def expected(gw, p1: int, p2: int) -> str:
    return (f"all upstream targets of route 'default' failed: ollama.qwen3:8b: cannot connect to "
            f"http://127.0.0.1:{p1}/v1; llamacpp.default: cannot connect to http://****@127.0.0.1:{p2}/v1. "
            f"No model server answered: start one there, or point searchhub at yours with {VAR}, or "
            f"providers.llamacpp.baseURL in {gw.path}; see docs/backends.md; `searchhub doctor` checks each one")


def attempts(p1: int, p2: int) -> list[dict]:
    return [
        {"target": "ollama.qwen3:8b", "provider": "ollama", "reason": "cannot connect to upstream", "status": None,
         "url": f"http://127.0.0.1:{p1}/v1"},
        {"target": "llamacpp.default", "provider": "llamacpp", "reason": "cannot connect to upstream",
         "status": None, "url": f"http://****@127.0.0.1:{p2}/v1"},
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_chat_names_urls_and_next_step(dead, stream) -> None:
    gw, p1, p2 = dead
    with gw.client() as c:
        r = c.post("/v1/chat/completions", json={"model": "default", "messages": HI, "stream": stream})
    assert r.status_code == 502, r.text
    assert r.headers["content-type"].startswith("application/json")
    err = r.json()["error"]
    assert err["message"] == expected(gw, p1, p2)
    assert err["type"] == "server_error" and err["code"] == "upstream_unavailable"
    assert err["attempts"] == attempts(p1, p2)
    assert PASSWORD not in r.text


@pytest.mark.parametrize("stream", [False, True])
def test_responses_names_urls_and_next_step(dead, stream) -> None:
    gw, p1, p2 = dead
    with gw.client() as c:
        r = c.post("/v1/responses", json={"model": "default", "input": "hi", "stream": stream})
    assert r.status_code == 502, r.text
    assert r.headers["content-type"].startswith("application/json")
    err = r.json()["error"]
    assert err["message"] == expected(gw, p1, p2)
    assert err["attempts"] == attempts(p1, p2)
    assert PASSWORD not in r.text


@pytest.mark.parametrize("stream", [False, True])
def test_messages_names_urls_and_next_step(dead, stream) -> None:
    gw, p1, p2 = dead
    with gw.client() as c:
        r = c.post("/v1/messages", headers=ANTHROPIC,
                   json={"model": "default", "max_tokens": 10, "messages": HI, "stream": stream})
    assert r.status_code == 502, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert body["type"] == "error" and body["error"]["type"] == "api_error"
    assert body["error"]["message"] == expected(gw, p1, p2)
    assert PASSWORD not in r.text


def test_the_password_stays_out_of_the_log(dead, caplog) -> None:
    gw, p1, p2 = dead
    with caplog.at_level("WARNING"), gw.client() as c:
        r = c.post("/v1/chat/completions", json={"model": "default", "messages": HI})
    assert r.status_code == 502
    logged = "\n".join(rec.getMessage() for rec in caplog.records)
    assert f"http://****@127.0.0.1:{p2}/v1" in logged and PASSWORD not in logged


def test_a_set_variable_is_still_named(gateway, monkeypatch) -> None:
    """The variable names the way to move the gateway whether or not it is set."""
    port = free_port()
    monkeypatch.setenv(VAR, f"http://127.0.0.1:{port}/v1")
    cfg = base_config("${" + VAR + "}")
    gw = gateway(cfg)
    with gw.client() as c:
        r = c.post("/v1/chat/completions", json={"model": "default", "messages": HI})
    assert r.status_code == 502
    assert r.json()["error"]["message"] == (
        f"all upstream targets of route 'default' failed: local.m: cannot connect to http://127.0.0.1:{port}/v1. "
        f"No model server answered: start one there, or point searchhub at yours with {VAR} "
        f"(or providers.<id>.baseURL in {gw.path}); see docs/backends.md; `searchhub doctor` checks each one")


def test_some_unreachable_some_broken(gateway, fake_model) -> None:
    """A server that answered 500 is not a missing server: the next step names only the URL nobody
    listened on, and the answered one shows its own reason."""
    port = free_port()
    cfg = base_config(f"http://127.0.0.1:{port}/v1")
    cfg["providers"]["up"] = {"type": "vllm", "baseURL": fake_model.url}
    cfg["virtualrouter"]["routing"]["default"].append({"id": "b", "priority": 50, "targets": ["up.m"]})
    fake_model.script({"status": 500})
    gw = gateway(cfg)
    with gw.client() as c:
        r = c.post("/v1/chat/completions", json={"model": "default", "messages": HI})
    assert r.status_code == 502
    err = r.json()["error"]
    assert err["message"] == (
        f"all upstream targets of route 'default' failed: local.m: cannot connect to http://127.0.0.1:{port}/v1; "
        f"up.m ({fake_model.url}): upstream answered HTTP 500: boom. No model server answered at "
        f"http://127.0.0.1:{port}/v1: start one there, or point searchhub at yours with "
        f"providers.local.baseURL in {gw.path}; see docs/backends.md; `searchhub doctor` checks each one")
    assert [a["url"] for a in err["attempts"]] == [f"http://127.0.0.1:{port}/v1", fake_model.url]


def test_no_next_step_when_every_server_answered(gateway, fake_model) -> None:
    fake_model.script({"status": 500})
    gw = gateway(base_config(fake_model.url))
    with gw.client() as c:
        r = c.post("/v1/chat/completions", json={"model": "default", "messages": HI})
    assert r.status_code == 502
    assert r.json()["error"]["message"] == (
        f"all upstream targets of route 'default' failed: local.m ({fake_model.url}): upstream answered HTTP 500: boom")


def test_config_records_the_variables_of_each_base_url() -> None:
    cfg = base_config("http://127.0.0.1:1/v1")
    cfg["providers"]["a"] = {"type": "vllm", "baseURL": "${A_URL:-http://127.0.0.1:2/v1}"}
    cfg["providers"]["b"] = {"type": "vllm", "baseURL": "http://${B_HOST}:${B_PORT:-8000}/v1"}
    config = parse(json.dumps(cfg), env={"B_HOST": "example.internal"}, plugins=PLUGINS)
    assert config.providers["local"].base_url_env == ()
    assert config.providers["a"].base_url_env == ("A_URL",)
    assert config.providers["b"].base_url_env == ("B_HOST", "B_PORT")
    assert config.providers["b"].base_url == "http://example.internal:8000/v1"


def test_http_client_sees_the_same_over_the_sdk(dead) -> None:
    """What the official OpenAI SDK surfaces: the same message."""
    import openai

    gw, p1, p2 = dead
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0, http_client=httpx.Client())
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(model="default", messages=HI)
    assert info.value.status_code == 502
    assert expected(gw, p1, p2) in str(info.value)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses", "/v1/messages"])
def test_a_search_turn_stream_fails_before_its_first_byte_in_the_protocols_shape(gateway, search_fakes, path) -> None:
    """With the web_search tool injected too, nothing was sent yet: an HTTP error, not an SSE one."""
    port = free_port()
    gw = gateway(base_config(f"http://127.0.0.1:{port}/v1", webSearch={"engines": [serper_engine(search_fakes)]}))
    text = "search the web for today's rust news"
    body: dict = {"model": "default", "stream": True, "max_tokens": 10}
    body.update({"input": text} if path == "/v1/responses" else {"messages": [{"role": "user", "content": text}]})
    with gw.client() as c:
        r = c.post(path, json=body, headers=ANTHROPIC if path == "/v1/messages" else {})
    assert r.status_code == 502 and r.headers["content-type"].startswith("application/json")
    message = r.json()["error"]["message"]
    assert message.startswith(f"all upstream targets of route 'default' failed: local.m: cannot connect to "
                              f"http://127.0.0.1:{port}/v1. No model server answered")
    assert (r.json().get("type") == "error") == (path == "/v1/messages")
