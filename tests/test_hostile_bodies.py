"""Any body gets a 400 in the protocol's shape, never a 500: hand-picked crashers, then hypothesis
mutating valid requests on all four POST endpoints; and broken model tool calls never give a 500."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .helpers import base_config, searxng_engine

ASK = "search the web for the latest Rust release"
CHAT = {"model": "m", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": ASK}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
        "tool_choice": "auto", "max_tokens": 100, "web_search_options": {"search_context_size": "low"}}
CHAT_HISTORY = {"model": "m", "messages": [
    {"role": "user", "content": [{"type": "text", "text": ASK}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "sunny"}]}],
    "tools": CHAT["tools"]}
RESPONSES = {"model": "m", "instructions": "be brief", "input": [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ASK}]},
    {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "sunny"}],
    "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}, {"type": "web_search"}],
    "tool_choice": "auto", "store": False}
MESSAGES = {"model": "m", "max_tokens": 100, "system": [{"type": "text", "text": "be brief"}], "messages": [
    {"role": "user", "content": [{"type": "text", "text": ASK}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "x"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}]}],
    "tools": [{"name": "get_weather", "input_schema": {"type": "object"}},
              {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}],
    "tool_choice": {"type": "auto"}}
ENDPOINTS = {
    "/v1/chat/completions": [CHAT, CHAT_HISTORY],
    "/v1/responses": [RESPONSES],
    "/v1/messages": [MESSAGES],
    "/v1/messages/count_tokens": [{k: v for k, v in MESSAGES.items() if k != "max_tokens"}],
}


def check_shape(path: str, status: int, text: str) -> None:
    """No 5xx, no traceback; an error body in the protocol's own shape."""
    assert status < 500, (status, text[:500])
    assert "Traceback" not in text and "internal error" not in text, text[:500]
    if status < 400:
        return
    body = json.loads(text)
    if path.startswith("/v1/messages"):
        assert body["type"] == "error" and body["error"]["type"] and isinstance(body["error"]["message"], str), body
    else:
        assert isinstance(body["error"]["message"], str) and body["error"]["type"], body


@pytest.fixture
def gw(gateway, fake_model, search_fakes):
    fake_model.default = {"content": "ok"}
    return gateway(base_config(fake_model.url, webSearch={"engines": [searxng_engine(search_fakes)], "cacheTtlMs": 0}))


def post(client, path: str, content: bytes | str, stream: bool = False):
    headers = {"content-type": "application/json"}
    r = client.post(path, content=content, headers=headers)
    check_shape(path, r.status_code, r.text)
    return r


CRASHERS = [
    ("/v1/chat/completions", b'{"model": "m", "messages": [{"role": "user", "content": "caf\xc3\x28 search the web"}]}'),
    ("/v1/chat/completions", b'{"model": "\xff\xfe", "messages": []}'),
    ("/v1/chat/completions", ("[" * 1000 + "]" * 1000).encode()),
    ("/v1/chat/completions", ('{"model": "m", "messages": [{"role": "user", "content": "hi"}], "x": '
                              + "[" * 1000 + "]" * 1000 + "}").encode()),
    ("/v1/chat/completions", json.dumps({"model": "m", "messages": [{"role": ["user"], "content": ASK}]})),
    ("/v1/chat/completions", json.dumps({"model": "m", "messages": [{"role": {"a": 1}, "content": ASK}]})),
    ("/v1/chat/completions", json.dumps({"model": "m", "messages": [{"role": "user", "content": ASK}],
                                         "tools": [{"type": "function", "function": {"name": {"x": 1}}}]})),
    ("/v1/chat/completions", json.dumps({"model": "m", "messages": [{"role": "user", "content": ASK}],
                                         "tools": [{"type": "function", "function": {"name": "f"}}],
                                         "tool_choice": {"type": "function", "function": "x"}})),
    ("/v1/chat/completions", json.dumps({"model": "m", "messages": [{"role": "user", "content": [1, "x", None]}]})),
    ("/v1/chat/completions", json.dumps({"model": "m", "messages": [{"role": "assistant", "tool_calls": "x"},
                                                                     {"role": "user", "content": ASK}]})),
    ("/v1/chat/completions", json.dumps({"model": "m", "messages": [{"role": "user", "content": ASK}],
                                         "web_search_options": {"user_location": "Paris"}})),
    ("/v1/responses", json.dumps({"model": "m", "input": [{"type": "message", "role": ["user"], "content": ASK}]})),
    ("/v1/responses", json.dumps({"model": "m", "input": [{"type": 5}, "x", None]})),
    ("/v1/responses", ("{\"model\": \"m\", \"input\": " + "[" * 1000 + "]" * 1000 + "}").encode()),
    ("/v1/messages", json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "text", "text": 5}]}]})),
    ("/v1/messages", json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": 5, "content": "x"}]})),
    ("/v1/messages", b'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "\xed\xa0\x80"}]}'),
    ("/v1/messages/count_tokens", json.dumps({"model": "m", "messages": [{"role": "user", "content": [None]}]})),
]


@pytest.mark.parametrize("path,content", CRASHERS)
def test_known_crashers_get_a_400(gw, no_errors_logged, path: str, content) -> None:
    r = post(gw.client(), path, content)
    assert r.status_code == 400, r.text


# --- hypothesis ------------------------------------------------------------------------------------

_leaf = st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=12) \
    | st.sampled_from(["user", "assistant", "tool", "system", "function", "text", "web_search", "auto", "required",
                       "message", "function_call", "tool_use", "tool_result", "input_text", "image_url", "json_schema"])
_json = st.recursive(_leaf, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.sampled_from(["type", "name", "role", "content", "text", "function",
                                                        "arguments", "id", "x"]), inner, max_size=3), max_leaves=8)


def paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, (*prefix, i))


def mutate(body: dict, path: tuple, value, action: str) -> object:
    body = copy.deepcopy(body)
    if not path:
        return value
    parent = body
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if action == "delete":
        del parent[key]
    elif action == "wrap":
        parent[key] = [parent[key]]
    else:
        parent[key] = value
    return body


@st.composite
def hostile(draw, bases):
    base = draw(st.sampled_from(bases))
    body = base
    for _ in range(draw(st.integers(1, 3))):
        candidates = list(paths(body))
        path = draw(st.sampled_from(candidates))
        body = mutate(body, path, draw(_json), draw(st.sampled_from(["set", "set", "delete", "wrap"])))
        if not isinstance(body, dict):
            break
    if isinstance(body, dict) and draw(st.booleans()):
        body["stream"] = draw(st.sampled_from([True, False, "yes", None]))
    return body


@pytest.mark.parametrize("path", list(ENDPOINTS))
def test_fuzzed_bodies_never_5xx(gw, no_errors_logged, path: str) -> None:
    client = gw.client()

    @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(hostile(ENDPOINTS[path]))
    def run(body) -> None:
        post(client, path, json.dumps(body))

    run()


# --- broken model output -------------------------------------------------------------------------

BROKEN_CALLS = [
    ["x"], [None], [{"function": "web_search"}], [{"function": {"name": 5, "arguments": "{}"}}],
    [{"id": 5, "function": {"name": "web_search", "arguments": 5}}], "web_search", {"function": {}},
    [{"id": "c", "type": "function", "function": {"name": "web_search", "arguments": "{\"query\": 7}"}}],
]


@pytest.mark.parametrize("calls", BROKEN_CALLS, ids=[str(i) for i in range(len(BROKEN_CALLS))])
def test_malformed_model_tool_calls_never_500(gw, fake_model, no_errors_logged, calls) -> None:
    fake_model.script({"raw_message": {"role": "assistant", "content": None, "tool_calls": calls},
                       "finish_reason": "tool_calls"}, {"content": "answer"})
    r = post(gw.client(), "/v1/chat/completions", json.dumps(CHAT))
    assert r.status_code in (200, 502), r.text


@pytest.mark.parametrize("deltas", [
    [{"tool_calls": ["x"]}], [{"tool_calls": "x"}], [{"tool_calls": [{"index": "0", "function": "web_search"}]}],
    [{"tool_calls": [{"index": 0, "function": {"name": 5}}]}], [{"content": 5}], ["x"],
], ids=[str(i) for i in range(6)])
def test_malformed_stream_deltas_never_crash(gw, fake_model, no_errors_logged, deltas) -> None:
    fake_model.script({"raw_deltas": deltas, "finish_reason": "tool_calls"}, {"content": "answer"})
    r = post(gw.client(), "/v1/chat/completions", json.dumps({**CHAT, "stream": True}))
    assert r.status_code in (200, 502)
