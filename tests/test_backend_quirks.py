"""Backend families: the quirk table, applied on the way out and on the way in, per-provider overrides,
and backend errors that say what happened."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hub import config as cfgmod
from hub.backends import quirks
from hub.backends.normalize import StreamNormalizer, ToolCallAssembler, normalize_completion
from hub.backends.registry import FAMILIES
from hub.config.quirks import COMMERCIAL_FAMILY, COMMERCIAL_QUIRKS, Quirks
from hub.runtime import PLUGINS
from hub.upstream.failures import error_message, request_kind, scrub

from .helpers import base_config, searxng_engine

CALL = {"id": "call_1", "type": "function", "function": {"name": "web_search", "arguments": '{"query": "x"}'}}
CONVO = [
    {"role": "user", "content": "search the web for x"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "content": "RESULTS"},
]
TOOL = {"type": "function", "function": {"name": "web_search", "parameters": {"type": "object"}}}


def fam(name: str) -> Quirks:
    """A family's quirks as its module of hub/backends/families/ declares them (openai: the commercial APIs')."""
    return COMMERCIAL_QUIRKS if name == COMMERCIAL_FAMILY else FAMILIES[name].quirks


# --- outbound -----------------------------------------------------------------------------------


def test_llamacpp_gets_empty_content_auto_choice_and_results_as_user_turn():
    body = {"model": "m", "messages": CONVO, "tools": [TOOL], "parallel_tool_calls": True}
    out = quirks.outbound(body, fam("llamacpp"), server_tools=frozenset({"web_search"}))
    assert out["messages"][1]["content"] == ""
    assert out["messages"][1]["tool_calls"] == [CALL]
    assert out["messages"][2]["role"] == "user" and "RESULTS" in out["messages"][2]["content"]
    assert "call_1" in out["messages"][2]["content"] and "web_search" in out["messages"][2]["content"]
    assert out["tool_choice"] == "auto"
    assert "parallel_tool_calls" not in out
    assert body["messages"][1]["content"] is None  # the caller's body is not changed


def test_vllm_keeps_everything():
    body = {"model": "m", "messages": CONVO, "tools": [TOOL]}
    out = quirks.outbound(body, fam("vllm"), server_tools=frozenset({"web_search"}))
    assert out == body


@pytest.mark.parametrize(("family", "choice"), [
    ("vllm", {"type": "function", "function": {"name": "web_search"}}),
    ("llamacpp", {"type": "function", "function": {"name": "web_search"}}),
    ("lmstudio", "required"),
    ("sglang", {"type": "function", "function": {"name": "web_search"}}),
])
def test_forcing_the_server_tool_in_each_familys_form(family, choice):
    body = {"model": "m", "messages": CONVO[:1], "tools": [TOOL],
            "tool_choice": {"type": "function", "function": {"name": "web_search"}}}
    assert quirks.outbound(body, fam(family), server_tools=frozenset({"web_search"}))["tool_choice"] == choice


def test_forcing_on_ollama_is_an_instruction():
    body = {"model": "m", "messages": CONVO[:1], "tools": [TOOL],
            "tool_choice": {"type": "function", "function": {"name": "web_search"}}}
    out = quirks.outbound(body, fam("ollama"), server_tools=frozenset({"web_search"}))
    assert "tool_choice" not in out
    assert out["messages"][-1]["role"] == "system" and "`web_search`" in out["messages"][-1]["content"]


def test_a_client_tool_choice_is_left_alone():
    body = {"model": "m", "messages": CONVO[:1], "tools": [TOOL],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}
    assert quirks.outbound(body, fam("llamacpp"), server_tools=frozenset({"web_search"}))["tool_choice"] == body["tool_choice"]


def test_no_tools_no_tool_choice():
    out = quirks.outbound({"model": "m", "messages": CONVO[:1]}, fam("llamacpp"))
    assert "tool_choice" not in out


def test_consecutive_results_share_one_user_turn():
    calls = [dict(CALL, id="a"), dict(CALL, id="b")]
    convo = [CONVO[0], {"role": "assistant", "content": None, "tool_calls": calls},
             {"role": "tool", "tool_call_id": "a", "content": "A"}, {"role": "tool", "tool_call_id": "b", "content": "B"}]
    out = quirks.outbound({"messages": convo}, fam("llamacpp"))["messages"]
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    assert "A" in out[2]["content"] and "B" in out[2]["content"]
    assert set(out[2]) == {"role", "content"}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.fixed_dictionaries({
    "role": st.sampled_from(["user", "assistant", "tool", "system"]),
    "content": st.one_of(st.none(), st.text(max_size=20), st.just([{"type": "text", "text": "t"}])),
}, optional={"tool_call_id": st.text(max_size=5), "tool_calls": st.just([CALL])}), max_size=8),
    st.sampled_from(sorted([*FAMILIES, COMMERCIAL_FAMILY])))
def test_outbound_never_sends_null_content_where_rejected_nor_tool_roles_where_dropped(messages, family):
    q = fam(family)
    out = quirks.outbound({"messages": messages, "tools": [TOOL]}, q, server_tools=frozenset({"web_search"}))["messages"]
    for m in out:
        if not q.null_content and m["role"] == "assistant":
            assert m["content"] is not None
        if q.tool_results == "user":
            assert m["role"] != "tool"


def test_per_provider_overrides_in_engines_json():
    cfg = base_config("http://127.0.0.1:1/v1")
    cfg["providers"]["local"] = {"type": "openai-compatible", "baseURL": "http://127.0.0.1:1/v1",
                                 "quirks": {"family": "llamacpp", "toolResults": "tool", "dropFields": ["seed"]}}
    q = cfgmod.build(cfg, env={}, plugins=PLUGINS).providers["local"].quirks
    assert q.family == "llamacpp" and q.null_content is False and q.tool_results == "tool"
    assert q.drop_fields == ("seed",)
    built = cfgmod.build(base_config("http://x/v1"), env={}, plugins=PLUGINS)
    assert built.providers["local"].quirks.family == "vllm"


def test_bad_quirk_override_is_a_config_error():
    cfg = base_config("http://127.0.0.1:1/v1")
    cfg["providers"]["local"]["quirks"] = {"forceTool": "please"}
    with pytest.raises(cfgmod.ConfigError) as e:
        cfgmod.build(cfg, env={}, plugins=PLUGINS)
    assert "providers.local.quirks.forceTool" in str(e.value)


def test_web_search_mode_global_and_per_backend():
    cfg = base_config("http://127.0.0.1:1/v1")
    cfg["webSearch"] = {"mode": "hybrid", "perBackend": {"local": {"mode": "presearch"}}}
    ws = cfgmod.build(cfg, env={}, plugins=PLUGINS).web_search
    assert ws.limits.mode == "hybrid" and ws.limits_for("local").mode == "presearch"
    cfg["webSearch"] = {"mode": "sometimes"}
    with pytest.raises(cfgmod.ConfigError):
        cfgmod.build(cfg, env={}, plugins=PLUGINS)


# --- inbound ------------------------------------------------------------------------------------


def test_stream_legacy_function_call_name_is_sent_once():
    n = StreamNormalizer()
    out = []
    for args in ('{"loc', 'ation": ', '"Paris"}'):
        chunk = {"choices": [{"index": 0, "delta": {"function_call": {"name": "get_weather", "arguments": args}},
                              "finish_reason": None}]}
        out.append(n.feed(chunk))
    names = [c["choices"][0]["delta"]["function_call"].get("name") for c in out]
    assert names == ["get_weather", None, None]
    assert "".join(c["choices"][0]["delta"]["function_call"]["arguments"] for c in out) == '{"location": "Paris"}'


def test_stream_function_call_beside_tool_calls_is_dropped():
    n = StreamNormalizer()
    asm = ToolCallAssembler()
    for i, args in enumerate(('{"q":', ' "x"}')):
        frag = {"index": 0, "function": {"arguments": args}}
        if i == 0:
            frag.update(id="call__0_web_search_cmpl-1", type="function")
            frag["function"]["name"] = "web_search"
        chunk = n.feed({"choices": [{"index": 0, "delta": {
            "function_call": {"name": "web_search", "arguments": args}, "tool_calls": [frag]}, "finish_reason": None}]})
        delta = chunk["choices"][0]["delta"]
        assert "function_call" not in delta
        asm.add(delta["tool_calls"])
    assert asm.calls()[0]["function"] == {"name": "web_search", "arguments": '{"q": "x"}'}


def test_completion_function_call_dropped_when_tool_calls_carry_it_and_names_cleaned():
    resp = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "function_call": {"name": "web_search", "arguments": "{}"},
        "tool_calls": [{"id": "bad id with spaces", "type": "function",
                        "function": {"name": " functions.web_search<|im_end|>", "arguments": "{}"}}]}}]}
    msg = normalize_completion(resp)["choices"][0]["message"]
    assert "function_call" not in msg
    assert msg["tool_calls"][0]["function"]["name"] == "web_search"
    assert msg["tool_calls"][0]["id"].startswith("call_") and " " not in msg["tool_calls"][0]["id"]


# --- errors -------------------------------------------------------------------------------------


LLAMA_CPP_PYTHON_500 = json.dumps({"error": {"message": "[{'type': 'string_type', 'loc': ('body', 'messages', 1, "
                                  "'typed-dict', 'content'), 'msg': 'Input should be a valid string', 'input': None}]",
                                  "type": "internal_server_error"}}).encode()
LLAMA_SERVER_OVERFLOW = json.dumps({"error": {"code": 400, "message": "the request exceeds the available context size",
                                              "type": "exceed_context_size_error", "n_prompt_tokens": 9000,
                                              "n_ctx": 4096}}).encode()


def test_error_kinds():
    text, err = error_message(LLAMA_CPP_PYTHON_500)
    assert request_kind(500, text, err) == "validation"
    text, err = error_message(LLAMA_SERVER_OVERFLOW)
    assert request_kind(400, text, err) == "context_overflow"
    text, err = error_message(b'{"error": {"message": "CUDA out of memory"}}')
    assert request_kind(500, text, err) is None
    text, err = error_message(b'{"detail": [{"loc": ["body", "messages"], "msg": "field required"}]}')
    assert text == "messages: field required" and request_kind(422, text, err) == "validation"
    assert error_message(b"<html>502 Bad Gateway</html>") == ("", {})


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=2000))
def test_scrub_is_bounded_single_line_and_hides_keys(text):
    out = scrub(text + " Bearer abcdefghijklmnop sk-ABCDEFGHIJKLMNOP")
    assert len(out) <= 300 and "\n" not in out
    assert "abcdefghijklmnop" not in out and "sk-ABCDEFGHIJKLMNOP" not in out


def _gw(gateway, fake_model, **provider):
    cfg = base_config(fake_model.url)
    cfg["providers"]["local"].update(provider)
    return gateway(cfg)


def test_llamacpp_family_over_http(gateway, fake_model, search_fakes):
    cfg = base_config(fake_model.url)
    cfg["providers"]["local"]["type"] = "llamacpp"
    cfg["webSearch"] = {"engines": [searxng_engine(search_fakes, default=True)], "cacheTtlMs": 0}
    gw = gateway(cfg)

    def reply(body):
        if any(m["role"] == "user" and "Result of the tool call" in str(m["content"]) for m in body["messages"]):
            return {"content": "Rust 1.91 [1]."}
        return {"tool_calls": [{"name": "web_search", "arguments": {"query": "rust"}}]}
    fake_model.default = reply
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    r = client.chat.completions.create(model="default", messages=[{"role": "user", "content": "search the web for rust"}])
    assert r.choices[0].message.content == "Rust 1.91 [1]."
    first, second = fake_model.requests
    assert first["tool_choice"] == "auto"
    assistant = next(m for m in second["messages"] if m["role"] == "assistant")
    assert assistant["content"] == "" and assistant["tool_calls"][0]["function"]["name"] == "web_search"
    assert all(m["role"] != "tool" for m in second["messages"])
    assert search_fakes.requests["searxng"]


def test_request_shaped_500_is_answered_not_failed_over_nor_cooled(gateway, fake_model, fake_model_b, caplog):
    cfg = base_config(fake_model.url)
    cfg["providers"]["b"] = {"type": "vllm", "baseURL": fake_model_b.url}
    cfg["virtualrouter"]["routing"]["default"].append({"id": "q", "priority": 50, "targets": ["b.m"]})
    gw = gateway(cfg)
    fake_model.script({"status": 500, "body": json.loads(LLAMA_CPP_PYTHON_500)})
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="default", messages=[{"role": "user", "content": "hi"}])
    assert "Input should be a valid string" in e.value.message
    assert fake_model_b.requests == []  # not failed over
    # not cooled: the next request goes to the first target again
    fake_model.script({"content": "fine"})
    r = client.chat.completions.create(model="default", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "fine"


def test_single_target_failure_says_there_is_no_other(gateway, fake_model, caplog):
    gw = _gw(gateway, fake_model)
    fake_model.script({"status": 500, "body": {"error": {"message": "model crashed: segfault"}}})
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    with caplog.at_level("WARNING"), pytest.raises(openai.InternalServerError) as e:
        client.chat.completions.create(model="default", messages=[{"role": "user", "content": "hi"}])
    assert "model crashed: segfault" in e.value.message
    logs = caplog.text
    assert "model crashed: segfault" in logs and "no other target to try" in logs and "trying the next" not in logs


@pytest.mark.parametrize("stream", [False, True])
def test_context_overflow_is_anthropics_400_streaming_or_not(gateway, fake_model, stream):
    gw = _gw(gateway, fake_model, type="llamacpp")
    fake_model.script({"status": 400, "body": json.loads(LLAMA_SERVER_OVERFLOW)},
                      {"status": 400, "body": json.loads(LLAMA_SERVER_OVERFLOW)})
    client = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as e:
        if stream:
            with client.messages.stream(model="default", max_tokens=100,
                                        messages=[{"role": "user", "content": "hi"}]) as s:
                list(s)
        else:
            client.messages.create(model="default", max_tokens=100, messages=[{"role": "user", "content": "hi"}])
    assert "prompt is too long" in e.value.message


# --- usage --------------------------------------------------------------------------------------


def _metric(gw, name: str) -> float:
    import httpx
    text = httpx.get(gw.url + "/metrics").text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith((name + "{", name + " ")))


@pytest.mark.parametrize("stream", [False, True])
def test_missing_usage_is_estimated_not_zero(gateway, fake_model, stream):
    gw = _gw(gateway, fake_model, type="llamacpp")
    fake_model.default = {"content": "a fairly long answer with several words in it", "no_usage": True}
    before = _metric(gw, "searchhub_estimated_usage_total")
    client = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)
    kw = {"model": "default", "max_tokens": 50, "messages": [{"role": "user", "content": "hello there"}]}
    if stream:
        with client.messages.stream(**kw) as s:
            msg = s.get_final_message()
    else:
        msg = client.messages.create(**kw)
    assert msg.usage.output_tokens > 0 and msg.usage.input_tokens > 0
    oa = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    if stream:
        chunks = list(oa.chat.completions.create(model="default", messages=[{"role": "user", "content": "hi"}],
                                                 stream=True, stream_options={"include_usage": True}))
        usage = chunks[-1].usage
    else:
        usage = oa.chat.completions.create(model="default", messages=[{"role": "user", "content": "hi"}]).usage
    assert usage.completion_tokens > 0 and usage.prompt_tokens > 0
    r = oa.responses.create(model="default", input="hi", stream=False)
    assert r.usage.output_tokens > 0 and r.usage.input_tokens > 0
    assert _metric(gw, "searchhub_estimated_usage_total") >= before + 3


def test_a_family_that_cannot_stream_tools_is_asked_whole_and_streamed_on(gateway, fake_model, search_fakes):
    cfg = base_config(fake_model.url)
    cfg["providers"]["local"]["type"] = "llamacpp"
    cfg["webSearch"] = {"engines": [searxng_engine(search_fakes, default=True)], "cacheTtlMs": 0}
    gw = gateway(cfg)

    def reply(body):
        if any("Result of the tool call" in str(m.get("content")) for m in body["messages"]):
            return {"content": "Rust 1.91 [1]."}
        return {"tool_calls": [{"name": "web_search", "arguments": {"query": "rust"}}]}
    fake_model.default = reply
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    chunks = list(client.chat.completions.create(model="default", stream=True,
                                                 messages=[{"role": "user", "content": "search the web for rust"}]))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Rust 1.91 [1]."
    first, second = fake_model.requests
    assert "stream" not in first and first["tool_choice"] == "auto"  # asked whole
    assert search_fakes.requests["searxng"]


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.none(), st.text(max_size=30)), st.lists(st.sampled_from(["a", "web_search"]), max_size=3))
def test_replayed_chunks_assemble_to_the_same_message(content, names):
    calls = [{"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": '{"q": 1}'}}
             for i, n in enumerate(names)]
    resp = {"id": "x", "choices": [{"index": 0, "finish_reason": "tool_calls" if calls else "stop",
                                    "message": {"role": "assistant", "content": content, **({"tool_calls": calls} if calls else {})}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}
    n = StreamNormalizer()
    asm = ToolCallAssembler()
    text = ""
    for chunk in quirks.as_chunks(resp):
        fixed = n.feed(chunk)
        for ch in (fixed or {}).get("choices") or []:
            text += ch["delta"].get("content") or ""
            asm.add(ch["delta"].get("tool_calls") or [])
    assert text == (content or "")
    assert [(c["id"], c["function"]["name"]) for c in asm.calls()] == [(c["id"], c["function"]["name"]) for c in calls]


@pytest.mark.parametrize("choice", ["required", {"type": "web_search"}])
def test_responses_forcing_reaches_the_backend_in_the_familys_form(gateway, fake_model, search_fakes, choice):
    cfg = base_config(fake_model.url)
    cfg["providers"]["local"]["type"] = "llamacpp"
    cfg["webSearch"] = {"engines": [searxng_engine(search_fakes, default=True)], "cacheTtlMs": 0}
    gw = gateway(cfg)
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "rust"}}]}, {"content": "ok [1]"})
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    r = client.responses.create(model="default", input="what is new in rust?", tools=[{"type": "web_search"}],
                                tool_choice=choice)
    assert fake_model.requests[0]["tool_choice"] == {"type": "function", "function": {"name": "web_search"}}
    assert fake_model.requests[1].get("tool_choice") in (None, "auto")
    assert r.output[0].type == "web_search_call"


def test_messages_forcing_reaches_the_backend(gateway, fake_model, search_fakes):
    cfg = base_config(fake_model.url)
    cfg["webSearch"] = {"engines": [searxng_engine(search_fakes, default=True)], "cacheTtlMs": 0}
    gw = gateway(cfg)
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "rust"}}]}, {"content": "ok [1]"})
    anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0).messages.create(
        model="default", max_tokens=50, messages=[{"role": "user", "content": "what is new in rust?"}],
        tools=[{"type": "web_search_20250305", "name": "web_search"}], tool_choice={"type": "tool", "name": "web_search"})
    assert fake_model.requests[0]["tool_choice"] == {"type": "function", "function": {"name": "web_search"}}
