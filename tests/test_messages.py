"""hub.protocols.messages: the pure Anthropic Messages <-> chat translators and the SSE encoder."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hub.core.errors import BadRequest
from hub.protocols.messages import MessagesStream, estimate_input_tokens, from_chat, to_chat
from hub.search.base import Hit, SearchRequest, SearchResult
from hub.tools.events import Keepalive, Outcome, ToolFinished, ToolStarted
from hub.tools.kinds.web_search import SearchCall, decode_hit

from .helpers import as_reads

FIXTURES = Path(__file__).parent / "fixtures" / "claude-code"


def req(**kw) -> dict:
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}], **kw}


# --- to_chat: system, roles, content ----------------------------------------------------------


def test_system_string_and_blocks() -> None:
    chat, ctx = to_chat(req(system="be brief"))
    assert chat["messages"][0] == {"role": "system", "content": "be brief"}
    blocks = [
        {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.330.355; cc_entrypoint=sdk-cli;"},
        {"type": "text", "text": "one", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "two"},
    ]
    chat, _ = to_chat(req(system=blocks))
    # The billing header changes per request and would defeat the backend's prefix cache.
    assert chat["messages"][0] == {"role": "system", "content": "one\n\ntwo"}
    assert ctx.model == "claude-sonnet-4-5" and chat["model"] == "claude-sonnet-4-5"
    assert chat["max_tokens"] == 100


def test_mid_conversation_system_messages() -> None:
    chat, _ = to_chat(req(system="top", messages=[
        {"role": "system", "content": "leading"},
        {"role": "user", "content": [{"type": "text", "text": "question"}]},
        {"role": "system", "content": "# Environment\ncwd: /tmp"},
        {"role": "assistant", "content": "answer"},
        {"role": "user", "content": "more"},
        {"role": "system", "content": [{"type": "text", "text": "last"}]},
    ]))
    assert chat["messages"] == [
        {"role": "system", "content": "top\n\nleading"},
        {"role": "user", "content": "question\n\n<system-reminder>\n# Environment\ncwd: /tmp\n</system-reminder>"},
        {"role": "assistant", "content": "answer"},
        {"role": "user", "content": "more\n\n<system-reminder>\nlast\n</system-reminder>"},
    ]


def test_images_and_documents() -> None:
    chat, _ = to_chat(req(messages=[{"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        {"type": "image", "source": {"type": "url", "url": "https://x.test/a.jpg"}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "doc body"},
         "title": "Notes"},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}},
    ]}]))
    assert chat["messages"][0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "image_url", "image_url": {"url": "https://x.test/a.jpg"}},
        {"type": "text", "text": "Notes\n\ndoc body"},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBE", "filename": "document.pdf"}},
    ]


def test_tool_round_trip_and_thinking_dropped() -> None:
    chat, _ = to_chat(req(messages=[
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "redacted_thinking", "data": "xx"},
            {"type": "text", "text": "Let me "},
            {"type": "text", "text": "check."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18°C"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": True,
             "content": [{"type": "text", "text": "clock broken"}]},
            {"type": "text", "text": "thanks"},
        ]},
    ]))
    assert chat["messages"][1:] == [
        {"role": "assistant", "content": "Let me check.", "tool_calls": [
            {"id": "toolu_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "toolu_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "18°C"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "Error: clock broken"},
        {"role": "user", "content": "thanks"},
    ]


def test_tool_reference_and_deferred_tools() -> None:
    """Claude Code's ToolSearch: deferred tools appear once a tool_reference loads them."""
    tools = [
        {"name": "ToolSearch", "input_schema": {"type": "object"}},
        {"name": "WebSearch", "input_schema": {"type": "object"}, "defer_loading": True},
        {"name": "DeferredToolPlaceholder", "input_schema": {"type": "object", "properties": {}},
         "defer_loading": True},
    ]
    chat, _ = to_chat(req(tools=tools))
    assert [t["function"]["name"] for t in chat["tools"]] == ["ToolSearch"]
    messages = [
        {"role": "user", "content": "search"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_9", "name": "ToolSearch",
                                           "input": {"query": "select:WebSearch", "max_results": 1}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_9", "content": [{"type": "tool_reference",
                                                                          "tool_name": "WebSearch"}]},
            {"type": "text", "text": "Tool loaded.", "cache_control": {"type": "ephemeral"}},
        ]},
    ]
    chat, _ = to_chat(req(tools=tools, messages=messages))
    assert [t["function"]["name"] for t in chat["tools"]] == ["ToolSearch", "WebSearch"]
    assert chat["messages"][2] == {"role": "tool", "tool_call_id": "toolu_9", "content": "Tool loaded: WebSearch"}


def test_orphan_tool_result_becomes_text() -> None:
    chat, _ = to_chat(req(messages=[{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_x", "content": "late"}]}]))
    assert chat["messages"] == [{"role": "user", "content": "Result of tool call toolu_x:\nlate"}]


def test_tool_result_images_follow_as_user_content() -> None:
    chat, _ = to_chat(req(messages=[
        {"role": "user", "content": "shot"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "screenshot", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QQ=="}}]}]},
    ]))
    assert chat["messages"][2] == {"role": "tool", "tool_call_id": "t1", "content": "[image attached below]"}
    assert chat["messages"][3]["content"] == [{"type": "image_url", "image_url": {"url": "data:image/png;base64,QQ=="}}]


def test_replayed_hosted_search_becomes_a_tool_round() -> None:
    encrypted = base64.b64encode(json.dumps({"url": "https://a.test", "title": "A", "snippet": "alpha facts"})
                                 .encode()).decode()
    chat, _ = to_chat(req(messages=[
        {"role": "user", "content": "news?"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Searching."},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "news"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
                {"type": "web_search_result", "url": "https://a.test", "title": "A", "encrypted_content": encrypted,
                 "page_age": "1 day ago"}]},
            {"type": "text", "text": "Alpha happened.", "citations": [
                {"type": "web_search_result_location", "url": "https://a.test", "title": "A",
                 "cited_text": "alpha facts", "encrypted_index": "x"}]},
            {"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_search", "input": {"query": "more"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_2",
             "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}},
        ]},
        {"role": "user", "content": "ok"},
    ]))
    m = chat["messages"]
    assert m[1]["content"] == "Searching."
    assert m[1]["tool_calls"][0]["function"] == {"name": "web_search", "arguments": '{"query": "news"}'}
    assert m[2]["role"] == "tool" and "alpha facts" in m[2]["content"] and "https://a.test" in m[2]["content"]
    assert m[3]["content"] == "Alpha happened." and m[3]["tool_calls"][0]["id"] == "srvtoolu_2"
    # rendered like a failed search in the live loop (hub/search/render.py: one renderer)
    assert m[4] == {"role": "tool", "tool_call_id": "srvtoolu_2",
                    "content": '{"error":"web search failed (max_uses_exceeded)"}'}
    assert m[5] == {"role": "user", "content": "ok"}


# --- to_chat: tools, options ------------------------------------------------------------------


def test_server_tool_becomes_hosted_search() -> None:
    tools = [
        {"name": "get_weather", "description": "Weather.", "input_schema": {"type": "object"}},
        {"type": "web_search_20260209", "name": "web_search", "max_uses": 3, "allowed_domains": ["a.test"],
         "user_location": {"type": "approximate", "city": "Paris", "country": "FR"}},
        {"type": "bash_20250124", "name": "bash"},
    ]
    chat, ctx = to_chat(req(tools=tools, tool_choice={"type": "tool", "name": "web_search"}))
    assert chat["tools"] == [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"},
                                                               "description": "Weather."}}]
    assert "tool_choice" not in chat  # the gateway's own loop forces the search
    assert list(ctx.hosted) == ["web_search"] and ctx.force_search
    search = ctx.hosted["web_search"]
    assert search.max_uses == 3 and search.allowed_domains == ("a.test",)
    assert search.user_location == {"city": "Paris", "country": "FR"}


def test_client_web_search_tool_stays_a_function() -> None:
    chat, ctx = to_chat(req(tools=[{"name": "web_search", "input_schema": {"type": "object"}}]))
    assert chat["tools"][0]["function"]["name"] == "web_search" and ctx.hosted == {}


@pytest.mark.parametrize(("choice", "expected"), [
    ({"type": "auto"}, "auto"),
    ({"type": "any"}, "required"),
    ({"type": "none"}, "none"),
    ({"type": "tool", "name": "f"}, {"type": "function", "function": {"name": "f"}}),
])
def test_tool_choice(choice, expected) -> None:
    chat, _ = to_chat(req(tools=[{"name": "f", "input_schema": {"type": "object"}}],
                          tool_choice={**choice, "disable_parallel_tool_use": True}))
    assert chat["tool_choice"] == expected
    assert chat["parallel_tool_calls"] is False


def test_thinking_effort_sampling_metadata() -> None:
    chat, ctx = to_chat(req(thinking={"type": "enabled", "budget_tokens": 31999, "display": "updates"},
                            temperature=0.5, top_p=0.9, top_k=40, stop_sequences=["END"], stream=True,
                            metadata={"user_id": json.dumps({"device_id": "d", "session_id": "s-1"})},
                            context_management={"edits": []}, service_tier="auto"))
    assert chat["reasoning_effort"] == "high" and ctx.thinking and ctx.show_thinking
    assert (chat["temperature"], chat["top_p"], chat["top_k"], chat["stop"]) == (0.5, 0.9, 40, ["END"])
    assert chat["stream"] is True and chat["stream_options"] == {"include_usage": True}
    assert ctx.session_id == "s-1"
    assert "metadata" not in chat and "context_management" not in chat
    chat, ctx = to_chat(req(thinking={"type": "adaptive"}, output_config={"effort": "low"}))
    assert chat["reasoning_effort"] == "low" and ctx.thinking
    chat, ctx = to_chat(req(thinking={"type": "disabled"}, output_config={"effort": "max"}))
    assert "reasoning_effort" not in chat and not ctx.thinking
    chat, _ = to_chat(req(output_config={"format": {"type": "json_schema", "schema": {"type": "object"}}}))
    assert chat["response_format"]["json_schema"]["schema"] == {"type": "object"}


@pytest.mark.parametrize(("patch", "param"), [
    ({"model": 3}, "model"),
    ({"messages": "hi"}, "messages"),
    ({"messages": []}, "messages"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages.0.role"),
    ({"messages": [{"role": "user", "content": [{"type": "text"}]}]}, "messages.0.content.0.text"),
    ({"messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "ftp"}}]}]},
     "messages.0.content.0.source.type"),
    ({"tools": [{"name": "f"}]}, "tools.0.input_schema"),
    ({"tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 0}]}, "tools.0.max_uses"),
    ({"tool_choice": {"type": "sometimes"}}, "tool_choice.type"),
    ({"max_tokens": "100"}, "max_tokens"),
    ({"stop_sequences": "END"}, "stop_sequences"),
    ({"metadata": {"user_id": 7}}, "metadata.user_id"),
    ({"thinking": {"type": "enabled", "budget_tokens": "lots"}}, "thinking.budget_tokens"),
])
def test_bad_requests_name_the_path(patch, param) -> None:
    with pytest.raises(BadRequest) as info:
        to_chat(req(**patch))
    assert info.value.param == param and info.value.message.startswith(param)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
_block = st.fixed_dictionaries({"type": st.sampled_from([
    "text", "image", "document", "tool_use", "tool_result", "thinking", "server_tool_use", "web_search_tool_result",
    "tool_reference", "search_result", "mid_conv_system", "other"])}, optional={
    "text": _json, "source": _json, "id": _json, "name": _json, "input": _json, "tool_use_id": _json,
    "content": _json, "is_error": _json, "tool_name": _json, "title": _json})
_message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "x"]),
                                  "content": st.text(max_size=5) | st.lists(_block, max_size=4) | _json})
_request = st.fixed_dictionaries({"model": st.text(max_size=5) | _json}, optional={
    "messages": st.lists(_message, max_size=4) | _json,
    "system": st.text(max_size=5) | st.lists(_block, max_size=2) | _json,
    "tools": st.lists(st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["web_search_20250305", "custom", "bash_20250124"]) | _json,
        "name": _json, "input_schema": _json, "max_uses": _json, "allowed_domains": _json,
        "user_location": _json, "defer_loading": _json}), max_size=3) | _json,
    "tool_choice": _json | st.fixed_dictionaries({"type": st.sampled_from(["auto", "any", "tool", "none"])},
                                                 optional={"name": _json}),
    "thinking": _json | st.fixed_dictionaries({"type": st.sampled_from(["enabled", "adaptive", "disabled"])},
                                              optional={"budget_tokens": _json}),
    "max_tokens": _json, "temperature": _json, "stop_sequences": _json, "metadata": _json, "stream": _json,
    "output_config": _json, "top_k": _json})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_request | _json)
def test_any_json_gives_a_chat_body_or_bad_request(body) -> None:
    try:
        chat, ctx = to_chat(body)
    except BadRequest as e:
        assert e.status == 400 and e.message
        return
    assert isinstance(chat["messages"], list) and chat["model"] == ctx.model
    json.dumps(chat)  # the backend request is plain JSON
    assert estimate_input_tokens(body) >= 1


_item = st.one_of(
    _json,
    st.fixed_dictionaries({"choices": st.lists(st.fixed_dictionaries({}, optional={
        "delta": st.fixed_dictionaries({}, optional={
            "content": _json, "reasoning_content": _json, "annotations": _json,
            "tool_calls": st.lists(st.fixed_dictionaries({}, optional={
                "index": _json, "id": _json, "function": st.fixed_dictionaries({}, optional={
                    "name": _json, "arguments": _json})}), max_size=2) | _json}) | _json,
        "finish_reason": _json}), max_size=2) | _json}, optional={"usage": _json}),
    st.builds(Keepalive),
    st.builds(lambda q: ToolStarted(SearchCall("call_1", SearchRequest(q))), st.text(max_size=5)),
    st.builds(lambda q: ToolFinished(SearchCall("call_1", SearchRequest(q, engine="e"), SearchResult("e", q, (RUST,)))),
              st.text(max_size=5)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_item, max_size=8), st.booleans(), st.booleans())
def test_stream_encoder_never_breaks_framing(items, hosted, thinking) -> None:
    """Whatever the pipeline yields, the events stay well-formed: blocks open and close in order."""
    extra = {"tools": [{"type": "web_search_20250305", "name": "web_search"}]} if hosted else {}
    if thinking:
        extra["thinking"] = {"type": "adaptive"}
    _, ctx = to_chat(req(stream=True, **extra))
    events = parse_sse(encode(ctx, items))
    open_index = None
    next_index = 0
    for name, data in events:
        if name == "content_block_start":
            assert open_index is None and data["index"] == next_index
            open_index, next_index = data["index"], next_index + 1
        elif name == "content_block_delta":
            assert data["index"] == open_index
        elif name == "content_block_stop":
            assert data["index"] == open_index
            open_index = None
    assert open_index is None and [n for n, _ in events][-2:] == ["message_delta", "message_stop"]


def test_every_claude_code_fixture_translates() -> None:
    for path in sorted(FIXTURES.glob("*.json")):
        body = json.loads(path.read_text())["request"]["body"]
        chat, ctx = to_chat(body)
        roles = [m["role"] for m in chat["messages"]]
        assert roles[0] == "system" and roles.count("system") == 1, path.name
        for prev, cur in zip(roles, roles[1:], strict=False):
            assert not (prev == cur == "user"), path.name  # merged
        # every tool message answers a call of the assistant message before the run of tool messages
        for i, m in enumerate(chat["messages"]):
            if m["role"] == "tool":
                j = i
                while chat["messages"][j]["role"] == "tool":
                    j -= 1
                assert m["tool_call_id"] in {c["id"] for c in chat["messages"][j].get("tool_calls", [])}


# --- from_chat ----------------------------------------------------------------------------------


RUST = Hit("Announcing Rust 1.91.0", "https://blog.rust-lang.org/rust-1.91/",
           "The Rust team is happy to announce a new version of Rust, 1.91.0. " * 4, published="2025-10-30")


def _completion(content, *, annotations=None, tool_calls=None, finish="stop", reasoning=None) -> dict:
    message: dict = {"role": "assistant", "content": content}
    if annotations:
        message["annotations"] = annotations
    if tool_calls:
        message["tool_calls"] = tool_calls
    if reasoning:
        message["reasoning_content"] = reasoning
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
                      "prompt_tokens_details": {"cached_tokens": 20}}}


def test_from_chat_plain_text_and_usage() -> None:
    _, ctx = to_chat(req())
    msg = from_chat(Outcome(_completion("hello")), ctx)
    Message.model_validate(msg)
    assert msg["id"].startswith("msg_") and msg["model"] == "claude-sonnet-4-5"
    assert msg["content"] == [{"type": "text", "text": "hello"}] and msg["stop_reason"] == "end_turn"
    assert msg["usage"] == {"input_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 20,
                            "output_tokens": 30, "service_tier": "standard"}


@pytest.mark.parametrize(("finish", "reason"), [("length", "max_tokens"), ("content_filter", "refusal"),
                                                ("stop", "end_turn"), (None, "end_turn")])
def test_from_chat_stop_reasons(finish, reason) -> None:
    _, ctx = to_chat(req())
    assert from_chat(Outcome(_completion("x", finish=finish)), ctx)["stop_reason"] == reason


def test_from_chat_tool_use_repairs_arguments() -> None:
    _, ctx = to_chat(req())
    calls = [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '```json\n{"a": 1}\n```'}},
             {"id": "bad id!", "type": "function", "function": {"name": "g", "arguments": "{not json"}}]
    msg = from_chat(Outcome(_completion(None, tool_calls=calls, finish="tool_calls")), ctx)
    Message.model_validate(msg)
    assert msg["stop_reason"] == "tool_use"
    assert msg["content"][0] == {"type": "tool_use", "id": "call_1", "name": "f", "input": {"a": 1}}
    assert msg["content"][1]["input"] == {} and msg["content"][1]["id"].startswith("toolu_")


def test_from_chat_thinking_only_when_asked() -> None:
    _, ctx = to_chat(req(thinking={"type": "adaptive"}))
    msg = from_chat(Outcome(_completion("a", reasoning="because")), ctx)
    assert msg["content"][0]["type"] == "thinking" and msg["content"][0]["thinking"] == "because"
    _, ctx = to_chat(req())
    assert [b["type"] for b in from_chat(Outcome(_completion("a", reasoning="because")), ctx)["content"]] == ["text"]


def _hosted_ctx():
    return to_chat(req(tools=[{"type": "web_search_20250305", "name": "web_search", "max_uses": 2}]))[1]


def test_from_chat_hosted_search_blocks_and_citations() -> None:
    ok = SearchCall("call_abc", SearchRequest("rust release", engine="google"), SearchResult("google", "rust release", (RUST,)))
    failed = SearchCall("call_def", SearchRequest("more", engine="google"), SearchResult("google", "more", error="max uses exceeded",
                                                                   error_code="max_uses_exceeded"))
    text = "Rust 1.91.0 is out [1]. Enjoy."
    annotations = [{"type": "url_citation", "url_citation": {"url": RUST.url, "title": RUST.title,
                                                             "start_index": 0, "end_index": 22}}]
    msg = from_chat(Outcome(_completion(text, annotations=annotations), [ok, failed]), _hosted_ctx())
    Message.model_validate(msg)
    kinds = [b["type"] for b in msg["content"]]
    assert kinds == ["server_tool_use", "web_search_tool_result", "server_tool_use", "web_search_tool_result",
                     "text", "text"]
    use, result = msg["content"][0], msg["content"][1]
    assert use == {"type": "server_tool_use", "id": "srvtoolu_call_abc", "name": "web_search",
                   "input": {"query": "rust release"}, "caller": {"type": "direct"}}
    assert result["tool_use_id"] == use["id"]
    hit = result["content"][0]
    assert (hit["url"], hit["title"], hit["page_age"]) == (RUST.url, RUST.title, "2025-10-30")
    assert decode_hit(hit["encrypted_content"])["snippet"] == RUST.snippet
    assert msg["content"][3]["content"] == {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}
    cited = msg["content"][4]
    assert cited["text"] == "Rust 1.91.0 is out [1]" and cited["citations"][0]["url"] == RUST.url
    assert len(cited["citations"][0]["cited_text"]) <= 150 and cited["citations"][0]["encrypted_index"]
    assert msg["content"][5] == {"type": "text", "text": ". Enjoy.", "citations": None}
    assert "".join(b["text"] for b in msg["content"] if b["type"] == "text") == text
    # the refused (max_uses) call is shown but never ran
    assert msg["usage"]["server_tool_use"] == {"web_search_requests": 1, "web_fetch_requests": 0}


# --- MessagesStream -----------------------------------------------------------------------------


def parse_sse(raw: bytes) -> list[tuple[str, dict]]:
    events = []
    for frame in raw.decode().split("\n\n"):
        if not frame.strip():
            continue
        lines = dict(line.split(": ", 1) for line in frame.split("\n"))
        data = json.loads(lines["data"])
        assert data["type"] == lines["event"]
        events.append((lines["event"], data))
    return events


def accumulate(events: list[tuple[str, dict]]):
    """Run the anthropic SDK's own stream accumulator over the events."""
    snapshot = None
    bufs: dict = {}
    for name, data in events:
        if name in ("ping", "error"):
            continue
        snapshot = accumulate_event(event=data, current_snapshot=snapshot, json_bufs=bufs)
    return snapshot


def chunk(delta: dict | None = None, finish: str | None = None, **extra) -> dict:
    c = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
         "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]}
    c.update(extra)
    return c


def encode(ctx, items) -> bytes:
    enc = MessagesStream(ctx, input_tokens=42)
    return enc.start() + b"".join(enc.feed(i) for i in items) + enc.finish()


def test_stream_text_and_tool_use_only_via_input_json_delta() -> None:
    _, ctx = to_chat(req(stream=True))
    raw = encode(ctx, [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "I'll "}), chunk({"content": "check."}),
        chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                               "function": {"name": "WebSearch", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"query": "ru'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'st"}'}}]}),
        Keepalive(),
        chunk({}, "tool_calls"),
        chunk(None, usage={"prompt_tokens": 50, "completion_tokens": 7}),
    ])
    events = parse_sse(raw)
    names = [n for n, _ in events]
    assert names == ["message_start", "content_block_start", "content_block_delta", "content_block_delta", "ping",
                     "content_block_stop", "content_block_start", "content_block_delta", "content_block_delta",
                     "content_block_stop", "message_delta", "message_stop"]
    start = events[0][1]["message"]
    assert start["stop_reason"] is None and start["usage"]["input_tokens"] == 42
    tool_start = events[6][1]["content_block"]
    assert tool_start == {"type": "tool_use", "id": "call_1", "name": "WebSearch", "input": {}}
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert delta["usage"]["output_tokens"] == 7 and delta["usage"]["input_tokens"] == 50
    message = accumulate(events)
    assert message.content[0].text == "I'll check."
    assert message.content[1].input == {"query": "rust"}


def test_stream_broken_tool_arguments_are_repaired() -> None:
    _, ctx = to_chat(req(stream=True))
    events = parse_sse(encode(ctx, [
        chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": '{"a": 1'}}]}),
        chunk({}, "tool_calls"),
    ]))
    assert accumulate(events).content[0].input == {}


def test_stream_hosted_search_and_citations() -> None:
    _, ctx = to_chat(req(stream=True, tools=[{"type": "web_search_20250305", "name": "web_search"}]))
    call = SearchCall("call_7", SearchRequest("rust release"))
    started = ToolStarted(call)
    call_done = SearchCall("call_7", SearchRequest("rust release", engine="google"), SearchResult("google", "rust release", (RUST,)))
    events = parse_sse(encode(ctx, [
        chunk({"content": "Searching. "}),
        started,
        Keepalive(),
        ToolFinished(call_done),
        chunk({"content": "Rust 1.91.0 [1]."}),
        chunk({"annotations": [{"type": "url_citation", "url_citation": {
            "url": RUST.url, "title": RUST.title, "start_index": 11, "end_index": 27}}]}),
        chunk({}, "stop"),
        chunk(None, usage={"prompt_tokens": 10, "completion_tokens": 5}),
    ]))
    starts = [d["content_block"]["type"] for n, d in events if n == "content_block_start"]
    assert starts == ["text", "server_tool_use", "web_search_tool_result", "text"]
    srv = next(d for n, d in events if n == "content_block_start" and d["content_block"]["type"] == "server_tool_use")
    assert srv["content_block"]["input"] == {}
    message = accumulate(events)
    assert message.content[1].input == {"query": "rust release"}
    assert message.content[2].content[0].url == RUST.url
    assert message.content[3].citations[0].url == RUST.url
    assert message.usage.server_tool_use.web_search_requests == 1
    assert message.stop_reason == "end_turn"


def test_stream_fail_is_an_error_event() -> None:
    _, ctx = to_chat(req(stream=True))
    enc = MessagesStream(ctx)
    raw = enc.start() + enc.feed(chunk({"content": "par"})) + enc.fail("overloaded_error", "Overloaded")
    assert parse_sse(raw)[-1] == ("error", {"type": "error", "error": {"type": "overloaded_error",
                                                                       "message": "Overloaded"}})
    assert enc.finish() == b""


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_item, max_size=8), st.lists(st.integers(0, 8), max_size=3), st.booleans())
def test_stream_encoder_takes_a_read_of_chunks_as_its_chunks_one_by_one(items, cuts, hosted) -> None:
    """The pipeline hands over what one upstream read brought as a list (hub/tools/events.py)."""
    extra = {"tools": [{"type": "web_search_20250305", "name": "web_search"}]} if hosted else {}
    _, ctx = to_chat(req(stream=True, **extra))
    grouped = as_reads(items, cuts)

    def encoded(seq: list) -> bytes:
        enc = MessagesStream(ctx, input_tokens=42, id="msg_1")
        return enc.start() + b"".join(enc.feed(i) for i in seq) + enc.finish()

    assert encoded(grouped) == encoded(items)


@pytest.mark.parametrize("first", ["item", "keepalive", "error", "nothing"])
def test_message_start_waits_for_the_producers_first_step(first) -> None:
    """hub/protocols/messages/endpoints.py makes message_start with the first item's events: by then the producer
    has started the turn's work (a search round's requests leave before it). It still comes
    first, also before a ping, an error or an empty stream's end."""
    from hub.protocols.messages.endpoints import encode_stream as _encode_stream

    log: list[str] = []

    async def source():
        log.append("work started")
        if first == "error":
            raise RuntimeError("broke")
        if first == "nothing":
            return
        yield Keepalive() if first == "keepalive" else chunk({"role": "assistant", "content": "Hi"})
        yield chunk({}, "stop")

    async def collect() -> list[tuple[list[str], bytes]]:
        _, ctx = to_chat(req(stream=True))
        return [(list(log), data) async for data in _encode_stream(source(), MessagesStream(ctx))]

    out = asyncio.run(collect())
    assert out[0][0] == ["work started"]
    names = [name for name, _ in parse_sse(b"".join(d for _, d in out))]
    assert names[0] == "message_start"
    assert names[-1] == ("error" if first == "error" else "message_stop")
