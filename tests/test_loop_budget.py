"""In-loop searches spend the calling key's budget: a spent budget is a tool error the model reads,
and the request still completes."""

from __future__ import annotations

import anthropic
import httpx
import openai
import pytest

from .test_search_api import ALICE, PRICE, keys, search_config


def sdk(gw, key: str = ALICE) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key=key, max_retries=0)


@pytest.mark.parametrize("stream", [False, True])
def test_spent_budget_is_a_tool_error_and_the_answer_still_comes(gateway, fake_model, search_fakes, stream) -> None:
    gw = gateway(search_config(fake_model.url, search_fakes, api_keys=keys(searchesPerDay=1)))
    fake_model.script(
        {"tool_calls": [{"name": "web_search", "arguments": {"query": "rust one"}}]},
        {"tool_calls": [{"name": "web_search", "arguments": {"query": "rust two"}}]},
        {"content": "Rust 1.91 is out [1]."},
    )
    messages = [{"role": "user", "content": "search the web for the latest rust release"}]
    if stream:
        with sdk(gw).chat.completions.stream(model="default", messages=messages) as s:
            final = s.get_final_completion()
    else:
        final = sdk(gw).chat.completions.create(model="default", messages=messages)
    assert final.choices[0].message.content == "Rust 1.91 is out [1]."
    tool_results = [m["content"] for m in fake_model.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(tool_results) == 2 and "blog.rust-lang.org" in tool_results[0]
    assert "search budget for this key is exhausted until " in tool_results[1]
    assert len(search_fakes.calls("serper")) == 1


def test_in_loop_search_cost_shows_in_header_and_metric(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, search_fakes, api_keys=keys()))
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "priced loop"}}]},
                      {"content": "done [1]"})
    r = httpx.post(gw.url + "/v1/chat/completions", headers={"authorization": f"Bearer {ALICE}"}, timeout=30,
                   json={"model": "default", "messages": [{"role": "user", "content": "search the web for rust"}]})
    assert r.status_code == 200 and r.headers["x-searchhub-search-cost"] == str(PRICE)


def test_messages_hosted_search_over_budget_is_an_error_block(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_config(fake_model.url, search_fakes, api_keys=keys(searchesPerDay=0)))
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "rust release"}}]},
                      {"content": "I could not search."})
    client = anthropic.Anthropic(base_url=gw.url, api_key=ALICE, max_retries=0)
    m = client.messages.create(model="claude-sonnet-4-5", max_tokens=200, tools=[
        {"type": "web_search_20250305", "name": "web_search"}], messages=[{"role": "user", "content": "latest rust?"}])
    assert [b.type for b in m.content] == ["server_tool_use", "web_search_tool_result", "text"]
    assert m.content[1].content.error_code == "too_many_requests"
    assert m.content[2].text == "I could not search."
    assert not search_fakes.calls("serper")
