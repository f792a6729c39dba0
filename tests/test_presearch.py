"""Presearch and hybrid modes, and tool calls written as text, through the gateway over HTTP."""

from __future__ import annotations

import anthropic
import openai
import pytest

from .helpers import base_config, searxng_engine
from .test_traces import ADMIN, admin, wait_trace

CALL_AS_TEXT = '<tool_call>{"name": "web_search", "arguments": {"query": "rust release"}}</tool_call>'


def cfg(fake_model, search_fakes, mode: str, **provider) -> dict:
    c = base_config(fake_model.url)
    c["providers"]["local"].update(provider)
    c["webSearch"] = {"engines": [searxng_engine(search_fakes, default=True)], "cacheTtlMs": 0, "mode": mode}
    return c


def searxng_queries(search_fakes) -> list[str]:
    return [r.params.get("q") for r in search_fakes.requests["searxng"]]


def oa(gw) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)


@pytest.mark.parametrize("stream", [False, True])
def test_presearch_chat_searches_first_and_cites(gateway, fake_model, search_fakes, stream):
    gw = gateway(cfg(fake_model, search_fakes, "presearch"))
    fake_model.default = {"content": "Rust 1.91 is out [1]."}
    kw = {"model": "default", "messages": [{"role": "user", "content": "search the web for the latest Rust release"}]}
    if stream:
        chunks = list(oa(gw).chat.completions.create(stream=True, **kw))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        annotations = [a for c in chunks if c.choices for a in (getattr(c.choices[0].delta, "annotations", None) or [])]
    else:
        msg = oa(gw).chat.completions.create(**kw).choices[0].message
        text, annotations = msg.content, msg.annotations
    assert text == "Rust 1.91 is out [1]."
    assert annotations and (annotations[0]["url_citation"] if isinstance(annotations[0], dict)
                            else annotations[0].url_citation.model_dump())["url"].startswith("https://")
    assert searxng_queries(search_fakes) == ["the latest Rust release"]
    (req,) = fake_model.requests
    assert "tools" not in req  # presearch alone offers no tool
    assert "the latest Rust release" in req["messages"][-1]["content"] and "[1]" in req["messages"][-1]["content"]


def test_presearch_zh_query(gateway, fake_model, search_fakes):
    gw = gateway(cfg(fake_model, search_fakes, "presearch"))
    oa(gw).chat.completions.create(model="default", messages=[{"role": "user", "content": "上网查一下今天北京天气"}])
    assert searxng_queries(search_fakes) == ["今天北京天气"]


def test_no_intent_no_presearch(gateway, fake_model, search_fakes):
    gw = gateway(cfg(fake_model, search_fakes, "presearch"))
    oa(gw).chat.completions.create(model="default", messages=[{"role": "user", "content": "write a haiku"}])
    assert searxng_queries(search_fakes) == []


def test_hybrid_presearches_and_still_offers_the_tool(gateway, fake_model, search_fakes):
    gw = gateway(cfg(fake_model, search_fakes, "hybrid"))

    def reply(body):
        if body["messages"][-1]["role"] == "tool":
            return {"content": "done [2]."}
        return {"tool_calls": [{"name": "web_search", "arguments": {"query": "rust 1.91 changelog"}}]}
    fake_model.default = reply
    r = oa(gw).chat.completions.create(model="default", messages=[{"role": "user", "content": "search the web for rust"}])
    assert r.choices[0].message.content == "done [2]."
    assert searxng_queries(search_fakes) == ["rust", "rust 1.91 changelog"]
    assert any(t["function"]["name"] == "web_search" for t in fake_model.requests[0]["tools"])


@pytest.mark.parametrize("stream", [False, True])
def test_presearch_shows_as_hosted_search_on_responses(gateway, fake_model, search_fakes, stream):
    gw = gateway(cfg(fake_model, search_fakes, "presearch"))
    fake_model.default = {"content": "Rust 1.91 [1]."}
    kw = {"model": "default", "input": "what is the latest Rust release?", "tools": [{"type": "web_search"}]}
    if stream:
        with oa(gw).responses.stream(**kw) as s:
            r = s.get_final_response()
    else:
        r = oa(gw).responses.create(**kw)
    kinds = [item.type for item in r.output]
    assert kinds[0] == "web_search_call" and kinds[-1] == "message"
    assert r.output[0].status == "completed"
    assert searxng_queries(search_fakes) == ["what is the latest Rust release?"]


@pytest.mark.parametrize("stream", [False, True])
def test_presearch_shows_as_server_tool_use_on_messages(gateway, fake_model, search_fakes, stream):
    gw = gateway(cfg(fake_model, search_fakes, "presearch"))
    fake_model.default = {"content": "Rust 1.91 [1]."}
    client = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)
    kw = {"model": "default", "max_tokens": 200, "messages": [{"role": "user", "content": "search the web for rust"}],
          "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 3}]}
    if stream:
        with client.messages.stream(**kw) as s:
            msg = s.get_final_message()
    else:
        msg = client.messages.create(**kw)
    kinds = [b.type for b in msg.content]
    assert kinds[:2] == ["server_tool_use", "web_search_tool_result"] and kinds[-1] == "text"
    assert msg.content[0].input == {"query": "rust"}
    assert msg.usage.server_tool_use.web_search_requests == 1


@pytest.mark.parametrize("stream", [False, True])
def test_a_call_written_as_text_is_run_and_never_shown(gateway, fake_model, search_fakes, stream):
    gw = gateway(cfg(fake_model, search_fakes, "tool"))

    def reply(body):
        if body["messages"][-1]["role"] == "tool":
            return {"content": "It is 1.91 [1]."}
        return {"content": "Let me check. " + CALL_AS_TEXT}
    fake_model.default = reply
    kw = {"model": "default", "messages": [{"role": "user", "content": "search the web for the rust release"}]}
    if stream:
        chunks = list(oa(gw).chat.completions.create(stream=True, **kw))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert not any(c.choices and c.choices[0].delta.tool_calls for c in chunks)
    else:
        msg = oa(gw).chat.completions.create(**kw).choices[0].message
        text = msg.content
        assert msg.tool_calls is None
    assert "tool_call" not in text and "web_search" not in text
    assert text.endswith("It is 1.91 [1].")
    assert searxng_queries(search_fakes) == ["rust release"]


def test_text_calls_to_client_tools_stay_text_unless_opted_in(gateway, fake_model, search_fakes):
    written = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    kw = {"model": "default", "messages": [{"role": "user", "content": "search the web for paris weather"}],
          "tools": tools}
    gw = gateway(cfg(fake_model, search_fakes, "tool"))
    fake_model.default = {"content": written}
    assert oa(gw).chat.completions.create(**kw).choices[0].message.content == written
    gw2 = gateway(cfg(fake_model, search_fakes, "tool", quirks={"textToolCalls": "all"}), name="b.json")
    msg = oa(gw2).chat.completions.create(**kw).choices[0].message
    assert msg.tool_calls[0].function.name == "get_weather" and msg.content is None
    assert r_finish(oa(gw2), kw) == "tool_calls"


def r_finish(client, kw) -> str:
    return client.chat.completions.create(**kw).choices[0].finish_reason


def test_presearch_google_preferred_intent_picks_a_google_engine(gateway, fake_model, search_fakes):
    from .helpers import serper_engine

    c = cfg(fake_model, search_fakes, "presearch")
    c["webSearch"]["engines"] = [searxng_engine(search_fakes, default=True), serper_engine(search_fakes)]
    gw = gateway(c)
    oa(gw).chat.completions.create(model="default", messages=[{"role": "user", "content": "谷歌一下 rust 1.91"}])
    assert searxng_queries(search_fakes) == []
    assert [r.json["q"] for r in search_fakes.requests["serper"]] == ["rust 1.91"]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("mode", ["tool", "presearch", "hybrid"])
def test_the_trace_names_the_search_mode(gateway, fake_model, search_fakes, mode, stream):
    """A request the gateway took on is traced with the mode it ran in (shown on /ui and by GET
    /admin/traces/{id}): the presearch of presearch and hybrid is the call of round 1."""
    c = cfg(fake_model, search_fakes, mode)
    c["server"]["adminKeys"] = [ADMIN]
    gw = gateway(c)
    fake_model.default = {"content": "Rust 1.91 is out."}
    chunks = oa(gw).chat.completions.create(
        model="default", stream=stream, messages=[{"role": "user", "content": "search the web for the latest Rust release"}])
    if stream:
        list(chunks)
    (row,) = wait_trace(gw)
    t = admin(gw, f"/admin/traces/{row['id']}").json()
    assert t["injection"]["decision"] is True and t["injection"]["mode"] == mode
    assert [(call["tool"], call["round"]) for call in t["calls"]] == ([] if mode == "tool" else [("web_search", 1)])
