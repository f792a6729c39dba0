"""Streams fail over until the first content reaches the client, on all three protocols.

A raw-socket upstream (tests/fakes/broken_stream.py) answers 200 and then breaks: closes, sends a
line that is not JSON, an error chunk, an HTML page, no events, only [DONE], only the role chunk.
Each is a failed attempt: the next target answers and the client (the official SDKs) sees a normal
answer; with no target left the client gets the protocol's HTTP error, never an empty success. A
stream cut after its first word, with no finish reason and no [DONE], ends with an error event.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import anthropic
import httpx
import openai
import pytest

from .fakes.broken_stream import STREAM_FAILURES, BrokenUpstream
from .fakes.redis_server import free_port
from .fakes.search_providers import Reply
from .helpers import base_config, searxng_engine

HI = [{"role": "user", "content": "hello there"}]


@pytest.fixture(scope="module")
def broken() -> Iterator[BrokenUpstream]:
    server = BrokenUpstream().start()
    yield server
    server.stop()


def config(broken: BrokenUpstream, mode: str, fallback_url: str | None) -> dict:
    cfg = base_config(fallback_url or f"http://127.0.0.1:{free_port()}/v1")
    cfg["providers"]["broken"] = {"type": "vllm", "baseURL": broken.url(mode)}
    pools = [{"id": "first", "priority": 100, "targets": ["broken.m"]}]
    if fallback_url:
        pools.append({"id": "fallback", "priority": 50, "targets": ["local.m"]})
    cfg["virtualrouter"]["routing"]["default"] = pools
    return cfg


def chat_text(gw) -> str:
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    stream = client.chat.completions.create(model="d", messages=HI, stream=True)
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def responses_text(gw) -> str:
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    events = list(client.responses.create(model="d", input="hello there", stream=True))
    assert events[0].type == "response.created"
    assert events[-1].type == "response.completed"
    return events[-1].response.output_text


def messages_text(gw) -> str:
    client = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)
    with client.messages.stream(model="d", max_tokens=50, messages=HI) as s:
        message = s.get_final_message()
    assert message.stop_reason == "end_turn"
    return "".join(b.text for b in message.content if b.type == "text")


READERS = {"chat": chat_text, "responses": responses_text, "messages": messages_text}


@pytest.mark.parametrize("protocol", list(READERS))
@pytest.mark.parametrize("mode", STREAM_FAILURES)
def test_broken_stream_before_content_fails_over(gateway, fake_model, broken, mode, protocol) -> None:
    gw = gateway(config(broken, mode, fake_model.url))
    fake_model.default = {"content": "the fallback answers"}
    before = broken.requests[mode]
    assert READERS[protocol](gw) == "the fallback answers"
    assert broken.requests[mode] == before + 1  # the broken target was tried first
    assert len(fake_model.requests) == 1
    # the broken target is cooling: the next request goes straight to the fallback
    assert READERS[protocol](gw) == "the fallback answers"
    assert broken.requests[mode] == before + 1


def test_broken_stream_fails_over_in_the_search_loop(gateway, fake_model, broken, search_fakes) -> None:
    """The search loop's first round fails over the same way (dict chunks, not the relay)."""
    cfg = config(broken, "error_first", fake_model.url)
    cfg["webSearch"] = {"engines": [searxng_engine(search_fakes)], "cacheTtlMs": 0}
    gw = gateway(cfg)
    search_fakes.script("searxng", Reply())

    def reply(body: dict) -> dict:
        if body["messages"][-1]["role"] == "tool":
            return {"content": "found it"}
        return {"tool_calls": [{"name": "web_search", "arguments": {"query": "rust release"}}]}

    fake_model.default = reply
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    stream = client.chat.completions.create(
        model="d", stream=True, messages=[{"role": "user", "content": "search the web for the latest rust release"}])
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "found it"
    assert len(fake_model.requests) == 2
    assert len(search_fakes.calls("searxng")) == 1


# --- no target left: the protocol's HTTP error ------------------------------------------------------


@pytest.mark.parametrize("mode", ["close", "html", "empty", "error_first"])
def test_no_target_left_is_an_http_error(gateway, broken, mode) -> None:
    gw = gateway(config(broken, mode, None))
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.APIStatusError) as e:
        list(client.chat.completions.create(model="d", messages=HI, stream=True))
    assert e.value.status_code == 502
    assert e.value.body["code"] == "upstream_unavailable"

    gw2 = gateway(config(broken, mode, None), name="second.json")  # a fresh router: nothing cooling
    with pytest.raises(openai.APIStatusError) as e:
        list(client.with_options(base_url=gw2.url + "/v1").responses.create(model="d", input="hi", stream=True))
    assert e.value.status_code == 502

    gw3 = gateway(config(broken, mode, None), name="third.json")
    with pytest.raises(anthropic.APIStatusError) as ae:
        with anthropic.Anthropic(base_url=gw3.url, api_key="k", max_retries=0).messages.stream(
                model="d", max_tokens=50, messages=HI) as s:
            s.get_final_message()
    assert ae.value.status_code == 502
    assert ae.value.body["type"] == "error"


# --- a stream cut after content: an error event, never a complete answer -----------------------------


def sse_lines(gw, path: str, body: dict) -> list[str]:
    with httpx.stream("POST", gw.url + path, json=body, timeout=30) as r:
        assert r.status_code == 200
        return [line for line in r.iter_lines() if line]


def test_chat_stream_cut_after_content_ends_with_an_error(gateway, fake_model, broken) -> None:
    gw = gateway(config(broken, "cut", fake_model.url))
    lines = sse_lines(gw, "/v1/chat/completions", {"model": "d", "stream": True, "messages": HI})
    assert "Half" in "".join(lines)
    assert "data: [DONE]" not in lines
    assert not any('"finish_reason":"stop"' in line.replace(" ", "") for line in lines)
    last = json.loads(lines[-1][6:])
    assert last["error"]["code"] == "upstream_error"
    assert fake_model.requests == []  # content had reached the client: no failover

    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.APIError):
        list(client.chat.completions.create(model="d", messages=HI, stream=True))


def test_responses_stream_cut_after_content_fails_the_response(gateway, fake_model, broken) -> None:
    gw = gateway(config(broken, "cut", fake_model.url))
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    events = list(client.responses.create(model="d", input="hello there", stream=True))
    types = [e.type for e in events]
    assert types[0] == "response.created"
    assert "response.output_text.delta" in types
    assert types[-1] == "response.failed"
    assert "response.completed" not in types
    assert events[-1].response.error.code == "server_error"


def test_messages_stream_cut_after_content_is_an_error_event(gateway, fake_model, broken) -> None:
    gw = gateway(config(broken, "cut", fake_model.url))
    lines = sse_lines(gw, "/v1/messages", {"model": "d", "stream": True, "max_tokens": 50, "messages": HI})
    assert lines[-2] == "event: error"
    assert json.loads(lines[-1][6:])["error"]["type"] == "api_error"
    assert "event: message_stop" not in lines

    client = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.APIStatusError):
        with client.messages.stream(model="d", max_tokens=50, messages=HI) as s:
            s.get_final_message()


# --- not streaming: the same upstreams fail over too --------------------------------------------------


@pytest.mark.parametrize("mode", ["html", "close", "empty"])
def test_broken_body_fails_over_without_streaming(gateway, fake_model, broken, mode) -> None:
    gw = gateway(config(broken, mode, fake_model.url))
    fake_model.default = {"content": "the fallback answers"}
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    assert client.chat.completions.create(model="d", messages=HI).choices[0].message.content == "the fallback answers"


# --- a provider's own protocol, passed through untouched ---------------------------------------------


def native_config(broken: BrokenUpstream, kind: str, first: str, fallback: str | None) -> dict:
    """Two `anthropic` (or `openai`) providers in priority order; the route is theirs, so the
    Messages (Responses) endpoint passes requests through."""
    def url(mode: str) -> str:
        return broken.url(mode).removesuffix("/v1") if kind == "anthropic" else broken.url(mode)

    cfg = base_config(f"http://127.0.0.1:{free_port()}/v1")
    cfg["providers"] = {"first": {"type": kind, "baseURL": url(first), "apiKey": "sk-native-test-key-1"}}
    pools = [{"id": "first", "priority": 100, "targets": ["first.m"]}]
    if fallback:
        cfg["providers"]["second"] = {"type": kind, "baseURL": url(fallback), "apiKey": "sk-native-test-key-2"}
        pools.append({"id": "fallback", "priority": 50, "targets": ["second.m"]})
    cfg["virtualrouter"]["routing"]["default"] = pools
    return cfg


@pytest.mark.parametrize("mode", ["anthropic_error_first", "anthropic_start_only", "close", "html", "empty"])
def test_anthropic_passthrough_fails_over_before_content(gateway, broken, mode) -> None:
    gw = gateway(native_config(broken, "anthropic", mode, "anthropic_ok"))
    before = broken.requests[mode]
    with anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0).messages.stream(
            model="d", max_tokens=50, messages=HI) as s:
        message = s.get_final_message()
    assert message.content[0].text == "native answer"
    assert broken.requests[mode] == before + 1


@pytest.mark.parametrize("mode", ["responses_failed_first", "responses_start_only", "close", "html", "empty"])
def test_responses_passthrough_fails_over_before_content(gateway, broken, mode) -> None:
    gw = gateway(native_config(broken, "openai", mode, "responses_ok"))
    before = broken.requests[mode]
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    events = list(client.responses.create(model="d", input="hello there", stream=True))
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == "native answer"
    assert broken.requests[mode] == before + 1


def test_passthrough_with_no_target_left_is_an_http_error(gateway, broken) -> None:
    gw = gateway(native_config(broken, "anthropic", "anthropic_error_first", None))
    with pytest.raises(anthropic.APIStatusError) as e:
        with anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0).messages.stream(
                model="d", max_tokens=50, messages=HI) as s:
            s.get_final_message()
    assert e.value.status_code == 502


@pytest.mark.parametrize(("kind", "mode"), [("anthropic", "anthropic_cut"), ("openai", "responses_cut")])
def test_passthrough_cut_after_content_ends_with_an_error_event(gateway, broken, kind, mode) -> None:
    gw = gateway(native_config(broken, kind, mode, None))
    if kind == "anthropic":
        lines = sse_lines(gw, "/v1/messages", {"model": "d", "stream": True, "max_tokens": 50, "messages": HI})
        assert "native answer" in "".join(lines)
        assert lines[-2] == "event: error" and "event: message_stop" not in lines
    else:
        lines = sse_lines(gw, "/v1/responses", {"model": "d", "stream": True, "input": "hi"})
        assert "native answer" in "".join(lines)
        assert json.loads(lines[-1][6:])["type"] == "error"
        assert not any("response.completed" in line for line in lines)


# --- a stream that broke after its 200 is traced as failed ----------------------------------------------

ADMIN = "admin-key-for-failed-streams-01"


def failed_traces(gw) -> list[dict]:
    """The gateway's traces listed as failures (/admin/traces?errors=1, what /ui's filter shows);
    a trace is finished as its request ends, so wait for it a moment."""
    deadline = time.monotonic() + 5
    while True:
        r = httpx.get(gw.url + "/admin/traces", params={"errors": "1"}, timeout=10,
                      headers={"authorization": f"Bearer {ADMIN}"})
        assert r.status_code == 200, r.text
        if r.json()["data"] or time.monotonic() > deadline:
            return r.json()["data"]
        time.sleep(0.05)


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/chat/completions", {"model": "d", "stream": True, "messages": HI}),
    ("/v1/responses", {"model": "d", "stream": True, "input": "hello there"}),
    ("/v1/messages", {"model": "d", "stream": True, "max_tokens": 50, "messages": HI}),
])
def test_a_stream_cut_after_its_200_is_traced_as_failed(gateway, broken, path, body) -> None:
    cfg = config(broken, "cut", None)
    cfg["server"]["adminKeys"] = [ADMIN]
    gw = gateway(cfg)
    lines = sse_lines(gw, path, body)
    assert "Half" in "".join(lines)
    rows = failed_traces(gw)
    assert len(rows) == 1, rows
    assert rows[0]["status"] == 200  # what the client got: the headers had gone out
    assert "ended without finishing" in rows[0]["error"]


def test_a_finished_stream_is_not_traced_as_failed(gateway, fake_model) -> None:
    cfg = base_config(fake_model.url)
    cfg["server"]["adminKeys"] = [ADMIN]
    gw = gateway(cfg)
    assert "Half" not in "".join(sse_lines(gw, "/v1/chat/completions", {"model": "d", "stream": True,
                                                                         "messages": HI}))
    time.sleep(0.2)
    assert failed_traces(gw) == []


@pytest.mark.parametrize(("kind", "mode"), [("anthropic", "anthropic_cut"), ("openai", "responses_cut")])
def test_a_passthrough_stream_cut_after_its_200_is_traced_as_failed(gateway, broken, kind, mode) -> None:
    cfg = native_config(broken, kind, mode, None)
    cfg["server"]["adminKeys"] = [ADMIN]
    gw = gateway(cfg)
    path, body = (("/v1/messages", {"model": "d", "stream": True, "max_tokens": 50, "messages": HI})
                  if kind == "anthropic" else ("/v1/responses", {"model": "d", "stream": True, "input": "hi"}))
    assert "native answer" in "".join(sse_lines(gw, path, body))
    rows = failed_traces(gw)
    assert len(rows) == 1 and rows[0]["status"] == 200 and rows[0]["error"], rows
