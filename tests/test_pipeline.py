"""The hub pipeline end to end: intent -> injection -> server-side web_search loop -> cited answer."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable

import httpx
import openai
import pytest

from .helpers import base_config, searxng_engine, serper_engine


def sdk(gw) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key="client-key", max_retries=0)


def search_config(model_url: str, engines: list[dict], **ws) -> dict:
    cfg = base_config(model_url)
    cfg["webSearch"] = {"engines": engines, "cacheTtlMs": 0, **ws}
    return cfg


def tool_names(req: dict) -> list[str]:
    return [t["function"]["name"] for t in req.get("tools", [])]


def answer_after_search(text: str = "Rust 1.91.0 is the latest release [1]."):
    """Fake model: search first, answer once a tool result is in the history."""
    def reply(body: dict) -> dict:
        if body["messages"][-1]["role"] == "tool":
            return {"content": text}
        return {"tool_calls": [{"name": "web_search", "arguments": {"query": "latest rust release"}}]}
    return reply


def ask(gw, text: str, **kw):
    return sdk(gw).chat.completions.create(model="default", messages=[{"role": "user", "content": text}], **kw)


def test_intent_injects_searches_and_cites(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes, default=True)]))
    fake_model.default = answer_after_search()
    r = ask(gw, "search the web for the latest Rust release")
    msg = r.choices[0].message
    assert msg.content == "Rust 1.91.0 is the latest release [1]."
    assert r.choices[0].finish_reason == "stop"
    assert msg.tool_calls is None
    ann = [a.model_dump() for a in msg.annotations]
    assert ann[0]["type"] == "url_citation"
    cit = ann[0]["url_citation"]
    assert cit["url"] == "https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/"
    assert msg.content[cit["start_index"]:cit["end_index"]] == "Rust 1.91.0 is the latest release [1]"
    # What the model saw: our tool with its schema, then numbered, sanitized hits.
    first, second = fake_model.requests
    tool = next(t for t in first["tools"] if t["function"]["name"] == "web_search")
    props = tool["function"]["parameters"]["properties"]
    assert set(props) == {"engine", "query", "recency", "count"}
    assert props["engine"]["enum"] == ["searxng"]
    assert tool["function"]["parameters"]["required"] == ["query"]
    tool_msg = second["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == second["messages"][-2]["tool_calls"][0]["id"]
    payload = json.loads(tool_msg["content"])
    assert payload["results"][0]["n"] == 1 and "<strong>" not in tool_msg["content"]
    assert "javascript:" not in tool_msg["content"]
    assert search_fakes.calls("searxng")[0].params["q"] == "latest rust release"
    assert r.usage.total_tokens == 30  # summed over both rounds


def test_no_intent_no_injection(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes)]))
    ask(gw, "write a haiku about autumn")
    assert "tools" not in fake_model.requests[0]
    ask(gw, "search this file for TODO comments and find the function that returns user info")
    assert "tools" not in fake_model.requests[-1]


def test_overrides(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes)]))
    client = sdk(gw)
    client.chat.completions.create(model="d", messages=[{"role": "user", "content": "search the web for x"}],
                                   extra_headers={"x-searchhub-web-search": "off"})
    assert "tools" not in fake_model.requests[-1]
    client.chat.completions.create(model="d", messages=[{"role": "user", "content": "hello"}],
                                   extra_body={"web_search": True})
    assert tool_names(fake_model.requests[-1]) == ["web_search", "web_fetch"]
    client.chat.completions.create(model="d", messages=[{"role": "user", "content": "hello"}],
                                   extra_headers={"x-searchhub-web-search": "on"})
    assert tool_names(fake_model.requests[-1]) == ["web_search", "web_fetch"]
    client.chat.completions.create(model="d", messages=[{"role": "user", "content": "hello"}],
                                   web_search_options={})
    assert tool_names(fake_model.requests[-1]) == ["web_search", "web_fetch"]


@pytest.mark.parametrize(("policy", "text", "opt_in", "injected"), [
    ("always", "hello", False, True),
    ("never", "search the web for x", True, False),
    ("auto", "search the web for x", False, False),
    ("auto", "hello", True, True),
    ("selective", "上网搜索一下今天的新闻", False, True),
])
def test_inject_policies(gateway, fake_model, search_fakes, policy, text, opt_in, injected) -> None:
    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes)], injectPolicy=policy))
    extra = {"enable_web_search": True} if opt_in else {}
    sdk(gw).chat.completions.create(model="d", messages=[{"role": "user", "content": text}], extra_body=extra)
    assert ("web_search" in tool_names(fake_model.requests[-1])) is injected


def test_google_preference_narrows_engines(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes), serper_engine(search_fakes)]))

    def enum(text: str) -> list[str]:
        ask(gw, text)
        tool = next(t for t in fake_model.requests[-1]["tools"] if t["function"]["name"] == "web_search")
        params = tool["function"]["parameters"]
        return params["properties"]["engine"]["enum"], params["required"]

    assert enum("谷歌一下 rust 1.91") == (["serper"], ["engine", "query"])
    assert enum("google the news about rust") == (["serper"], ["engine", "query"])
    assert enum("search the web for rust news") == (["searxng", "serper"], ["engine", "query"])


def test_commercial_backend_untouched_unless_per_backend(gateway, fake_model, search_fakes) -> None:
    cfg = search_config(fake_model.url, [searxng_engine(search_fakes)])
    cfg["providers"]["local"]["type"] = "openai"
    gw = gateway(cfg)
    ask(gw, "search the web for rust")
    assert "tools" not in fake_model.requests[-1]
    cfg["webSearch"]["perBackend"] = {"local": {"enabled": True}}
    gw.write_config(cfg)
    gw.gateway.reload()
    ask(gw, "search the web for rust")
    assert tool_names(fake_model.requests[-1]) == ["web_search", "web_fetch"]


def test_client_search_tool_left_alone_and_client_web_search_serviced(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes)]))
    ws_tool = {"type": "function", "function": {"name": "WebSearch", "parameters": {"type": "object"}}}
    fake_model.script({"tool_calls": [{"name": "WebSearch", "arguments": {"query": "x"}}]})
    r = ask(gw, "search the web for x", tools=[ws_tool])
    assert tool_names(fake_model.requests[-1]) == ["WebSearch"]
    assert r.choices[0].message.tool_calls[0].function.name == "WebSearch"
    own = {"type": "function", "function": {"name": "web_search", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}}}}
    fake_model.script(answer_after_search("done [1]"), answer_after_search("done [1]"))
    r = ask(gw, "hello", tools=[own])
    assert tool_names(fake_model.requests[0]) == ["web_search", "web_fetch"]  # no second web_search
    assert r.choices[0].message.content == "done [1]" and r.choices[0].message.tool_calls is None


def test_malformed_arguments_are_explained_to_the_model(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes)]))
    fake_model.script(
        {"tool_calls": [{"name": "web_search", "arguments": '{"query": "rust rel'}]},
        {"tool_calls": [{"name": "web_search", "arguments": '```json\n{"q": "rust release"}\n```'}]},
        {"content": "answer [1]"},
    )
    r = ask(gw, "search the web for rust")
    assert r.choices[0].message.content == "answer [1]"
    err = fake_model.requests[1]["messages"][-1]
    assert err["role"] == "tool" and "truncated" in err["content"]
    assert search_fakes.calls("searxng")[0].params["q"] == "rust release"


def search_until_stopped(arguments: Iterable[dict], answer: str):
    """Fake model: call web_search with the next of `arguments` while the tool is offered, else answer."""
    args = iter(arguments)

    def reply(body: dict) -> dict:
        if "web_search" not in tool_names(body):
            return {"content": answer}
        return {"tool_calls": [{"name": "web_search", "arguments": next(args)}]}

    return reply


def _always_search(body: dict) -> dict:
    n = sum(1 for m in body["messages"] if m["role"] == "tool")
    if "web_search" not in tool_names(body):
        return {"content": f"final after {n} results"}
    return {"tool_calls": [{"name": "web_search", "arguments": {"query": f"query number {n}"}}]}


def _metric(gw, name: str, **labels) -> float:
    text = httpx.get(gw.url + "/metrics").text
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
    return total


@pytest.mark.parametrize("stream", [False, True])
def test_guard_max_tool_iterations(gateway, fake_model, search_fakes, stream) -> None:
    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes)], maxToolIterations=3))
    fake_model.default = _always_search
    before = _metric(gw, "web_search_iteration_cap_total", guard="max_tool_iterations")
    if stream:
        with sdk(gw).chat.completions.stream(model="d", messages=[{"role": "user", "content": "search the web"}]) as s:
            r = s.get_final_completion()
    else:
        r = ask(gw, "search the web for anything")
    assert r.choices[0].message.content == "final after 3 results"
    assert r.choices[0].finish_reason == "stop" and not r.choices[0].message.tool_calls
    assert len(fake_model.requests) == 4 and "tools" not in fake_model.requests[-1]
    assert len(search_fakes.calls("searxng")) == 3
    assert _metric(gw, "web_search_iteration_cap_total", guard="max_tool_iterations") == before + 1


@pytest.mark.parametrize(("limits", "failures", "model", "prompt", "answer", "searches", "told_at", "told"), [
    ({}, 0, search_until_stopped(itertools.repeat({"query": "  Same   QUERY "}), "stopped"),
     "search the web for same query", "stopped", 1, 2, "already searched"),
    ({"maxConsecutiveErrors": 2}, 5, _always_search, "search the web", "final after 2 results", 2, 1, '"error"'),
], ids=["repeated_query", "consecutive_errors"])
def test_guard(gateway, fake_model, search_fakes, limits, failures, model, prompt, answer, searches, told_at,
               told) -> None:
    """The guard ends the searches; the model was told why (in the tool result of request `told_at`)."""
    from .fakes.search_providers import Reply

    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes)], **limits))
    search_fakes.script("searxng", *[Reply(status=500, body={"error": "down"})] * failures)
    fake_model.default = model
    r = ask(gw, prompt)
    assert r.choices[0].message.content == answer
    assert len(search_fakes.calls("searxng")) == searches
    assert told in fake_model.requests[told_at]["messages"][-1]["content"]


def test_guard_result_budget(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes)], maxTotalResultBytes=1500))
    fake_model.default = _always_search
    r = ask(gw, "search the web")
    assert r.choices[0].finish_reason == "stop"
    contents = [m["content"] for m in fake_model.requests[-1]["messages"] if m["role"] == "tool"]
    assert any("budget exhausted" in c for c in contents)
    assert "tools" not in fake_model.requests[-1]


def test_guard_wall_clock(gateway, fake_model, search_fakes) -> None:
    from .fakes.search_providers import Reply

    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes)], loopWallClockMs=1000))
    search_fakes.script("searxng", *[Reply(delay=0.6)] * 5)
    fake_model.default = _always_search
    r = ask(gw, "search the web")
    assert r.choices[0].message.content == "final after 2 results"
    assert "tools" not in fake_model.requests[-1]


def test_parallel_searches_run_concurrently(gateway, fake_model, search_fakes) -> None:
    import time

    from .fakes.search_providers import Reply

    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes)]))
    search_fakes.script("searxng", Reply(delay=0.5), Reply(delay=0.5))

    def reply(body: dict) -> dict:
        if body["messages"][-1]["role"] == "tool":
            return {"content": "both [1] [6]"}
        return {"tool_calls": [{"name": "web_search", "arguments": {"query": "a"}},
                               {"name": "web_search", "arguments": {"query": "b"}}]}

    fake_model.default = reply
    t0 = time.monotonic()
    r = ask(gw, "search the web for a and b")
    assert time.monotonic() - t0 < 0.95
    tools = [m for m in fake_model.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(tools) == 2
    # Numbering runs on across the searches of a loop: the second search's hits start after the first's.
    assert json.loads(tools[1]["content"])["results"][0]["n"] == len(json.loads(tools[0]["content"])["results"]) + 1
    urls = [a["url_citation"]["url"] for a in [a.model_dump() for a in r.choices[0].message.annotations]]
    assert len(urls) == 2


def test_mixed_turn_splices_hidden_calls(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes)]))
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    fake_model.script(
        {"tool_calls": [{"name": "web_search", "arguments": {"query": "paris events"}, "id": "call_ws"},
                        {"name": "get_weather", "arguments": {"city": "Paris"}, "id": "call_w"}]},
        {"content": "Sunny, and there is a festival [1]."},
    )
    history = [{"role": "user", "content": "search the web for events in Paris and check the weather"}]
    r = sdk(gw).chat.completions.create(model="d", messages=history, tools=[weather])
    msg = r.choices[0].message
    assert r.choices[0].finish_reason == "tool_calls"
    assert [c.function.name for c in msg.tool_calls] == ["get_weather"]
    history += [msg.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": "call_w", "content": "sunny, 21C"}]
    r = sdk(gw).chat.completions.create(model="d", messages=history, tools=[weather])
    assert r.choices[0].message.content.startswith("Sunny")
    sent = fake_model.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]
    assert {c["id"] for c in sent[1]["tool_calls"]} == {"call_ws", "call_w"}
    assert sent[2]["tool_call_id"] == "call_ws" and "results" in sent[2]["content"]
    assert sent[3] == {"role": "tool", "tool_call_id": "call_w", "content": "sunny, 21C"}
    assert [a.model_dump() for a in r.choices[0].message.annotations]


def test_sticky_chain_and_isolation(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes)]))
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    client = sdk(gw)
    fake_model.script({"tool_calls": [{"name": "get_weather", "arguments": {}, "id": "call_a"}]})
    chain_a = [{"role": "user", "content": "what's the weather like?"}]
    r = client.chat.completions.create(model="d", messages=chain_a, tools=[weather], extra_body={"web_search": True})
    assert "web_search" in tool_names(fake_model.requests[-1])
    chain_a += [r.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": "call_a", "content": "rainy"}]
    # Another chain (different user text) continuing after a client tool: nothing sticky.
    chain_b = [{"role": "user", "content": "tell me a joke"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "call_b", "content": "rainy"}]
    fake_model.script({"content": "b done"}, {"content": "a done"}, {"content": "a again"})
    client.chat.completions.create(model="d", messages=chain_b, tools=[weather])
    assert tool_names(fake_model.requests[-1]) == ["get_weather"]
    # Chain A's follow-up keeps the tool (sticky), without any override.
    client.chat.completions.create(model="d", messages=chain_a, tools=[weather])
    assert tool_names(fake_model.requests[-1]) == ["get_weather", "web_search", "web_fetch"]
    # The final answer ('stop') dropped the sticky state.
    client.chat.completions.create(model="d", messages=chain_a, tools=[weather])
    assert tool_names(fake_model.requests[-1]) == ["get_weather"]


def test_streaming_loop_live(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes)]))

    def reply(body: dict) -> dict:
        if body["messages"][-1]["role"] == "tool":
            return {"content": "Rust 1.91.0 shipped [1]."}
        return {"content": "Let me check.", "tool_calls": [{"name": "web_search",
                                                            "arguments": {"query": "rust"}}]}

    fake_model.default = reply
    with httpx.stream("POST", gw.url + "/v1/chat/completions", json={
            "model": "d", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "search the web for rust"}]}) as resp:
        events = [json.loads(line[6:]) for line in resp.iter_lines()
                  if line.startswith("data: ") and line != "data: [DONE]"]
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
    assert text == "Let me check.\n\nRust 1.91.0 shipped [1]."
    assert not any(e["choices"] and e["choices"][0]["delta"].get("tool_calls") for e in events)
    finishes = [e["choices"][0]["finish_reason"] for e in events if e["choices"] and e["choices"][0]["finish_reason"]]
    assert finishes == ["stop"]
    ann = [e for e in events if e["choices"] and "annotations" in e["choices"][0]["delta"]]
    assert len(ann) == 1
    span = ann[0]["choices"][0]["delta"]["annotations"][0]["url_citation"]
    assert text[span["start_index"]:span["end_index"]] == "Rust 1.91.0 shipped [1]"
    assert events[-1]["usage"]["total_tokens"] == 30
    # The SDK's stream parser accepts it.
    with sdk(gw).chat.completions.stream(model="d", messages=[{"role": "user", "content": "search the web"}]) as s:
        final = s.get_final_completion()
    assert final.choices[0].message.content.endswith("[1].")


def test_metrics_exposed(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes)]))
    fake_model.default = answer_after_search()
    ask(gw, "search the web for rust")
    text = httpx.get(gw.url + "/metrics").text
    for name in ("web_search_calls_total", "web_search_call_duration_seconds", "web_search_injections_total",
                 "searchhub_intent_decisions_total", "searchhub_request_duration_seconds",
                 "searchhub_upstream_duration_seconds"):
        assert name in text
    assert 'web_search_injections_total{backend_type="vllm"}' in text


def test_stream_keepalive_while_searching(gateway, fake_model, search_fakes) -> None:
    from .fakes.search_providers import Reply

    gw = gateway(search_config(fake_model.url, [searxng_engine(search_fakes)], keepaliveMs=100))
    search_fakes.script("searxng", Reply(delay=0.5))
    fake_model.default = answer_after_search("done [1]")
    with httpx.stream("POST", gw.url + "/v1/chat/completions", json={
            "model": "d", "stream": True, "messages": [{"role": "user", "content": "search the web for rust"}]}) as r:
        lines = [line for line in r.iter_lines() if line]
    assert sum(1 for line in lines if line.startswith(":")) >= 3
    assert lines[-1] == "data: [DONE]"
