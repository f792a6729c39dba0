"""Server tools as plug-ins: a second tool is one module (tests/toy/clock.py, its TOOL declaration put
in the registry's table here; tests/test_tool_registry.py has it discovered), and the loop, the guards and every encoder then serve it beside web_search, on the real wire."""

from __future__ import annotations

import json

import httpx
import pytest

from hub.tools import registry

from .helpers import base_config, searxng_engine
from .toy.clock import TOOL


@pytest.fixture
def with_clock(monkeypatch):
    # what discovering its module in hub/tools/kinds/ would add to the table
    monkeypatch.setitem(registry.TOOLS, "clock", TOOL)


def clock_then_answer(body: dict) -> dict:
    if body["messages"][-1]["role"] == "tool":
        return {"content": "It is noon in Paris [1]."}
    return {"tool_calls": [{"name": "clock", "arguments": {"city": "Paris"}}]}


def config(fake_model, search_fakes) -> dict:
    cfg = base_config(fake_model.url)
    cfg["webSearch"] = {"engines": [searxng_engine(search_fakes, default=True)], "injectPolicy": "always",
                        "cacheTtlMs": 0}
    cfg["webFetch"] = {"enabled": False}  # the toy shows itself as web_fetch; the real one stays out of its way
    return cfg


def test_second_tool_is_offered_run_and_cited(with_clock, gateway, fake_model, search_fakes) -> None:
    gw = gateway(config(fake_model, search_fakes))
    fake_model.default = clock_then_answer
    r = httpx.post(gw.url + "/v1/chat/completions", timeout=30, json={
        "model": "default", "messages": [{"role": "user", "content": "what time is it in Paris?"}]})
    assert r.status_code == 200, r.text
    msg = r.json()["choices"][0]["message"]
    assert msg["content"] == "It is noon in Paris [1]." and "tool_calls" not in msg
    assert msg["annotations"][0]["url_citation"]["url"] == "https://clock.test/paris"
    first, second = fake_model.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["web_search", "clock"]
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": second["messages"][-2]["tool_calls"][0]["id"],
                                      "content": "[1] It is 12:00 in paris."}


def test_second_tool_repeated_call_guard(with_clock, gateway, fake_model, search_fakes) -> None:
    gw = gateway(config(fake_model, search_fakes))
    fake_model.script({"tool_calls": [{"name": "clock", "arguments": {"city": "tokyo"}}]},
                      {"tool_calls": [{"name": "clock", "arguments": {"city": "Tokyo"}}]},
                      {"content": "done"})
    r = httpx.post(gw.url + "/v1/chat/completions", timeout=30, json={
        "model": "default", "messages": [{"role": "user", "content": "time in tokyo"}]})
    assert r.json()["choices"][0]["message"]["content"] == "done"
    repeated = fake_model.requests[2]["messages"][-1]["content"]
    assert json.loads(repeated) == {"error": "you already asked the time in tokyo; answer from the results above"}
    assert "tools" not in fake_model.requests[2]  # the guard withdrew our tools for the last round


def test_second_tool_shows_in_anthropic_hosted_blocks(with_clock, gateway, fake_model, search_fakes) -> None:
    gw = gateway(config(fake_model, search_fakes))
    fake_model.default = clock_then_answer
    r = httpx.post(gw.url + "/v1/messages", timeout=30, headers={"anthropic-version": "2023-06-01"}, json={
        "model": "default", "max_tokens": 100,
        "tools": [{"type": "web_search_20250305", "name": "web_search"}],
        "messages": [{"role": "user", "content": "what time is it in Paris?"}]})
    assert r.status_code == 200, r.text
    message = r.json()
    use, result = message["content"][0], message["content"][1]
    assert use["type"] == "server_tool_use" and use["name"] == "web_fetch"
    assert use["input"] == {"url": "https://clock.test/paris"}
    assert result["type"] == "web_fetch_tool_result" and result["tool_use_id"] == use["id"]
    assert result["content"]["content"]["source"]["data"] == "It is 12:00 in paris."
    assert message["usage"]["server_tool_use"] == {"web_search_requests": 0, "web_fetch_requests": 1}


def test_second_tool_shows_as_a_responses_action(with_clock, gateway, fake_model, search_fakes) -> None:
    gw = gateway(config(fake_model, search_fakes))
    fake_model.default = clock_then_answer
    r = httpx.post(gw.url + "/v1/responses", timeout=30, json={
        "model": "default", "tools": [{"type": "web_search"}], "input": "what time is it in Paris?"})
    assert r.status_code == 200, r.text
    item = r.json()["output"][0]
    assert item["type"] == "web_search_call" and item["status"] == "completed"
    assert item["action"] == {"type": "open_page", "url": "https://clock.test/paris"}
