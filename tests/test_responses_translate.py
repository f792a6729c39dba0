"""hub/protocols/responses: Responses requests -> chat, chat results -> Response objects (no HTTP)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import Response

from hub.core.errors import BadRequest
from hub.protocols.responses import custom_input, from_chat, items_to_messages, to_chat
from hub.search.base import Hit, SearchRequest, SearchResult
from hub.tools.base import HostedFetch, HostedSearch
from hub.tools.events import Outcome
from hub.tools.kinds.web_search import SearchCall

FIXTURES = Path(__file__).parent / "fixtures" / "codex"
CODEX = sorted(FIXTURES.glob("*.json"))


def codex_body(prefix: str) -> dict:
    path = next(p for p in CODEX if p.name.startswith(prefix))
    return copy.deepcopy(json.loads(path.read_text())["request"]["body"])


def names(chat: dict) -> list[str]:
    return [t["function"]["name"] for t in chat.get("tools", [])]


# --- Codex recordings -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", CODEX, ids=lambda p: p.name[:60])
def test_every_codex_request_translates(path: Path) -> None:
    body = json.loads(path.read_text())["request"]["body"]
    chat, ctx = to_chat(copy.deepcopy(body))
    messages = chat["messages"]
    assert messages[0]["role"] == "system" and "Codex" in messages[0]["content"]
    assert sum(m["role"] == "system" for m in messages) == 1  # Codex's developer items merged up front
    assert {m["role"] for m in messages} <= {"system", "user", "assistant", "tool"}
    assert chat["stream"] is True and chat["stream_options"] == {"include_usage": True}
    assert chat["tool_choice"] == "auto" and chat["parallel_tool_calls"] == body["parallel_tool_calls"]
    assert all(t["type"] == "function" and set(t["function"]) >= {"name", "parameters"} for t in chat["tools"])
    assert len(set(names(chat))) == len(names(chat))
    # nothing of OpenAI's own items reaches the backend
    dumped = json.dumps(messages)
    assert "encrypted_content" not in dumped and "web_search_call" not in dumped and "url_citation" not in dumped
    # every tool message answers a call made before it
    called: set[str] = set()
    for m in messages:
        called.update(c["id"] for c in m.get("tool_calls") or ())
        if m["role"] == "tool":
            assert m["tool_call_id"] in called
    assert ctx.model == body["model"] and ctx.stream and ctx.store is False


def test_codex_classic_tools_hosted_search_and_tool_search() -> None:
    chat, ctx = to_chat(codex_body("gpt55-function-call-001"))
    assert names(chat) == ["exec_command", "write_stdin", "request_user_input", "apply_patch", "view_image",
                           "get_goal", "create_goal", "update_goal"]
    # the freeform apply_patch tool: one string parameter, its grammar in the description
    patch = next(t["function"] for t in chat["tools"] if t["function"]["name"] == "apply_patch")
    assert patch["parameters"]["required"] == ["input"]
    assert patch["parameters"]["properties"]["input"]["type"] == "string"
    assert "*** Begin Patch" in patch["description"] and "lark grammar" in patch["description"]
    assert ctx.tools["apply_patch"].kind == "custom"
    # web_search became the hosted-search offer; tool_search was dropped with a reason
    assert ctx.hosted == {"web_search": HostedSearch(), "web_fetch": HostedFetch()}
    assert any("tool_search" in reason for reason in ctx.dropped)
    assert chat["reasoning_effort"] == "medium"


def test_codex_namespaces_are_flattened_and_remembered() -> None:
    chat, ctx = to_chat(codex_body("custom-model-function-call-001"))
    assert "spawn_agent" in names(chat) and "close_agent" in names(chat)
    assert ctx.tools["spawn_agent"].namespace == "multi_agent_v1"
    assert ctx.tools["exec_command"].namespace is None
    # external_web_access: false still offers search (the gateway has no cache-only mode)
    assert "web_search" in ctx.hosted


def test_codex_additional_tools_and_custom_tool_round() -> None:
    chat, ctx = to_chat(codex_body("default-code-mode-001"))
    assert "tools" not in codex_body("default-code-mode-001")
    assert names(chat)[:2] == ["exec", "wait"] and "followup_task" in names(chat)
    assert ctx.tools["exec"].kind == "custom" and ctx.tools["exec"].namespace == "functions"
    assert ctx.hosted == {} and chat["reasoning_effort"] == "low"

    chat, ctx = to_chat(codex_body("default-code-mode-002"))
    call_msg, tool_msg = chat["messages"][-2:]
    call = call_msg["tool_calls"][0]
    assert call["id"] == "call_VX3l9xE8zQtCx4Nqz3KDF47Y" and call["function"]["name"] == "exec"
    assert json.loads(call["function"]["arguments"])["input"].startswith("const r = await tools.exec_command")
    assert tool_msg == {"role": "tool", "tool_call_id": "call_VX3l9xE8zQtCx4Nqz3KDF47Y",
                        "content": "Script completed\nWall time 0.2 seconds\nOutput:\nhello-from-scripted-model\n"}
    assert any("reasoning" in reason for reason in ctx.dropped)


def test_codex_web_search_replay_keeps_only_the_answer() -> None:
    chat, ctx = to_chat(codex_body("gpt55-web-search-followup-003"))
    roles = [m["role"] for m in chat["messages"]]
    assert roles == ["system", "user", "user", "assistant", "user", "assistant", "tool"]
    assert chat["messages"][3] == {
        "role": "assistant", "content": "Based on a web search (scripted), the latest stable Rust release is 1.91.0."}
    assert any("web_search_call" in reason for reason in ctx.dropped)


# --- request fields ------------------------------------------------------------------------------


def test_string_input_instructions_and_sampling_fields() -> None:
    chat, ctx = to_chat({
        "model": "m", "input": "hi", "instructions": "Be brief.", "temperature": 0.2, "top_p": 0.9,
        "max_output_tokens": 50, "reasoning": {"effort": "high", "summary": "auto"},
        "text": {"format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}, "strict": True}},
        "metadata": {"k": "v"}, "include": ["reasoning.encrypted_content"], "prompt_cache_key": "abc",
        "user": "u1", "store": True, "truncation": "auto",
    })
    assert chat == {
        "model": "m",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        "temperature": 0.2, "top_p": 0.9, "max_tokens": 50, "reasoning_effort": "high",
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "out", "schema": {"type": "object"}, "strict": True}},
    }
    assert ctx.echo["metadata"] == {"k": "v"} and ctx.echo["instructions"] == "Be brief."
    assert ctx.echo["prompt_cache_key"] == "abc" and ctx.echo["truncation"] == "auto"


def test_messages_parts_and_roles() -> None:
    chat, _ = to_chat({"model": "m", "input": [
        {"role": "developer", "content": "dev rules"},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "look"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "low"}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": "seen", "annotations": []}]},
        {"role": "system", "content": "late system note"},
        {"role": "user", "content": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]},
    ]})
    assert chat["messages"] == [
        {"role": "system", "content": "dev rules"},
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA",
                                                                         "detail": "low"}}]},
        {"role": "assistant", "content": "seen"},
        {"role": "system", "content": "late system note"},
        {"role": "user", "content": "a\nb"},
    ]


def test_function_calls_merge_into_one_assistant_message() -> None:
    chat, _ = to_chat({"model": "m", "input": [
        {"role": "user", "content": "go"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Calling two."}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
        {"type": "function_call", "call_id": "c1", "name": "a", "arguments": "{\"x\":1}"},
        {"type": "function_call", "call_id": "c2", "name": "b", "arguments": {"y": 2}},
        {"type": "function_call_output", "call_id": "c1", "output": "one"},
        {"type": "function_call_output", "call_id": "c2",
         "output": [{"type": "input_text", "text": "two"}, {"type": "input_text", "text": "lines"}]},
    ], "tools": [{"type": "function", "name": "a"}, {"type": "function", "name": "b"}]})
    assert chat["messages"][1:] == [
        {"role": "assistant", "content": "Calling two.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{\"x\":1}"}},
            {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "{\"y\": 2}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two\nlines"},
    ]
    # a flat Responses tool becomes a chat function tool; parameters default to an empty object
    assert chat["tools"][0] == {"type": "function", "function": {
        "name": "a", "parameters": {"type": "object", "properties": {}}}}


def test_images_in_tool_output_follow_as_a_user_turn() -> None:
    chat, _ = to_chat({"model": "m", "input": [
        {"role": "user", "content": "show"},
        {"type": "function_call", "call_id": "c1", "name": "view_image", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": [
            {"type": "input_image", "image_url": "data:image/png;base64,QQ=="}]},
    ]})
    tool, user = chat["messages"][-2:]
    assert tool["role"] == "tool" and "image 1" in tool["content"]
    assert user["role"] == "user" and user["content"][1]["image_url"]["url"] == "data:image/png;base64,QQ=="


def test_namespaced_calls_and_name_collisions() -> None:
    req = {"model": "m", "input": [
        {"role": "user", "content": "x"},
        {"type": "function_call", "call_id": "c1", "name": "read", "namespace": "crm", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
    ], "tools": [
        {"type": "function", "name": "read"},
        {"type": "namespace", "name": "crm", "description": "", "tools": [{"type": "function", "name": "read"}]},
    ]}
    chat, ctx = to_chat(req)
    assert names(chat) == ["read", "crm__read"]
    assert ctx.tools["crm__read"].namespace == "crm" and ctx.tools["read"].namespace is None
    assert chat["messages"][1]["tool_calls"][0]["function"]["name"] == "crm__read"


def test_chat_shaped_tools_are_accepted() -> None:
    chat, _ = to_chat({"model": "m", "input": "x", "tools": [
        {"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}]})
    assert chat["tools"] == [{"type": "function", "function": {"name": "f", "description": "d",
                                                               "parameters": {"type": "object"}}}]


def test_hosted_search_options() -> None:
    _, ctx = to_chat({"model": "m", "input": "x", "max_tool_calls": 3, "tools": [{
        "type": "web_search", "search_context_size": "high", "filters": {"allowed_domains": ["rust-lang.org"]},
        "user_location": {"type": "approximate", "country": "US", "city": "SF"}, "external_web_access": False}]})
    assert ctx.hosted == {
        "web_search": HostedSearch(allowed_domains=("rust-lang.org",), max_uses=3,
                                   user_location={"country": "US", "city": "SF"}, context_size="high"),
        # its calls may open pages: the same filters and cap
        "web_fetch": HostedFetch(allowed_domains=("rust-lang.org",), max_uses=3)}
    _, ctx = to_chat({"model": "m", "input": "x", "tools": [{"type": "web_search_preview"}]})
    assert ctx.hosted == {"web_search": HostedSearch(), "web_fetch": HostedFetch()}


def test_tool_choice_mapping() -> None:
    tools = [{"type": "function", "name": "f"}, {"type": "custom", "name": "apply"}, {"type": "web_search"}]
    chat, ctx = to_chat({"model": "m", "input": "x", "tools": tools, "tool_choice": {"type": "function", "name": "f"}})
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "f"}}
    chat, _ = to_chat({"model": "m", "input": "x", "tools": tools, "tool_choice": {"type": "custom", "name": "apply"}})
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "apply"}}
    chat, ctx = to_chat({"model": "m", "input": "x", "tools": tools, "tool_choice": {"type": "web_search"}})
    assert "tool_choice" not in chat and ctx.force_search is True
    chat, ctx = to_chat({"model": "m", "input": "x", "tools": tools, "tool_choice": "none"})
    assert chat["tool_choice"] == "none" and ctx.hosted == {}
    chat, ctx = to_chat({"model": "m", "input": "x", "tools": tools, "tool_choice": {
        "type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "f"}]}})
    assert names(chat) == ["f"] and chat["tool_choice"] == "required" and ctx.hosted == {}
    chat, ctx = to_chat({"model": "m", "input": "x", "tools": [{"type": "web_search"}], "tool_choice": "required"})
    assert "tool_choice" not in chat and ctx.force_search is True
    with pytest.raises(BadRequest) as e:
        to_chat({"model": "m", "input": "x", "tools": tools, "tool_choice": {"type": "function", "name": "nope"}})
    assert e.value.param == "tool_choice.name"


def test_history_is_prepended_and_instructions_replaced() -> None:
    history = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "answer"}]
    chat, ctx = to_chat({"model": "m", "input": "second", "instructions": "new rules"}, history=history)
    assert chat["messages"] == [{"role": "system", "content": "new rules"}, *history,
                                {"role": "user", "content": "second"}]
    assert ctx.history == [*history, {"role": "user", "content": "second"}]


def test_items_to_messages_round_trip() -> None:
    _, ctx = to_chat({"model": "m", "input": "x", "tools": [{"type": "custom", "name": "apply_patch"}]})
    out = [{"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}},
           {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]},
           {"type": "custom_tool_call", "call_id": "c", "name": "apply_patch", "input": "*** Begin Patch"}]
    assert items_to_messages(out, ctx) == [{"role": "assistant", "content": "hi", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "apply_patch",
                                                     "arguments": "{\"input\": \"*** Begin Patch\"}"}}]}]


def test_custom_input_recovers_freeform_text() -> None:
    assert custom_input('{"input": "a\\nb"}') == "a\nb"
    assert custom_input('{"patch": "x"}') == "x"
    assert custom_input("*** Begin Patch") == "*** Begin Patch"
    assert custom_input('"quoted"') == "quoted"
    assert custom_input('{"a": 1, "b": 2}') == '{"a": 1, "b": 2}'


# --- malformed requests --------------------------------------------------------------------------


@pytest.mark.parametrize("req, param", [
    ({"input": "x"}, "model"),
    ({"model": "m", "input": 3}, "input"),
    ({"model": "m", "input": [{"role": "user", "content": "a"}, {"type": "message", "content": "b"}]}, "input[1].role"),
    ({"model": "m", "input": [{"role": "robot", "content": "a"}]}, "input[0].role"),
    ({"model": "m", "input": [{"type": "function_call_output", "output": "x"}]}, "input[0].call_id"),
    ({"model": "m", "input": [{"type": "function_call", "call_id": "c", "arguments": "{}"}]}, "input[0].name"),
    ({"model": "m", "input": [{"type": "function_call_output", "call_id": "c", "output": 5}]}, "input[0].output"),
    ({"model": "m", "input": [{"type": "frobnicate"}]}, "input[0].type"),
    ({"model": "m", "input": [{"content": "no role, no type"}]}, "input[0].type"),
    ({"model": "m", "input": ["just a string"]}, "input[0]"),
    ({"model": "m", "input": [{"role": "user", "content": [{"type": "input_text"}]}]}, "input[0].content[0].text"),
    ({"model": "m", "input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]},
     "input[0].content[0].image_url"),
    ({"model": "m", "input": [{"role": "user", "content": [{"type": "input_audio"}]}]}, "input[0].content[0].type"),
    ({"model": "m", "input": [{"role": "system", "content": [{"type": "input_image", "image_url": "u"}]}]},
     "input[0].content[0].type"),
    ({"model": "m", "input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0]"),
    ({"model": "m", "input": [{"type": "custom_tool_call", "call_id": "c", "name": "n", "input": 1}]},
     "input[0].input"),
    ({"model": "m", "input": [{"type": "additional_tools", "tools": {}}]}, "input[0].tools"),
    ({"model": "m", "input": "x", "tools": {}}, "tools"),
    ({"model": "m", "input": "x", "tools": [{"type": "function"}]}, "tools[0].name"),
    ({"model": "m", "input": "x", "tools": [{"type": "namespace", "name": "n", "tools": [{"type": "custom"}]}]},
     "tools[0].tools[0].name"),
    ({"model": "m", "input": "x", "tools": [{"name": "f"}]}, "tools[0].type"),
    ({"model": "m", "input": "x", "tool_choice": "sometimes"}, "tool_choice"),
    ({"model": "m", "input": "x", "max_output_tokens": 0}, "max_output_tokens"),
    ({"model": "m", "input": "x", "temperature": "hot"}, "temperature"),
    ({"model": "m", "input": "x", "stream": "yes"}, "stream"),
    ({"model": "m", "input": "x", "instructions": ["a"]}, "instructions"),
    ({"model": "m", "input": "x", "conversation": "conv_1"}, "conversation"),
    ({"model": "m", "input": []}, "input"),
    ({"model": "m"}, "input"),
    ({"model": "m", "input": [{"type": "reasoning", "summary": []}]}, "input"),
])
def test_malformed_requests_name_the_field(req: dict, param: str) -> None:
    with pytest.raises(BadRequest) as e:
        to_chat(req)
    assert e.value.param == param, e.value.message
    assert e.value.status == 400


def test_known_items_without_chat_meaning_are_dropped() -> None:
    chat, ctx = to_chat({"model": "m", "input": [
        {"role": "user", "content": "x"},
        {"type": "compaction", "encrypted_content": "opaque"},
        {"type": "file_search_call", "id": "fs", "queries": [], "status": "completed"},
    ], "tools": [{"type": "file_search", "vector_store_ids": []}, {"type": "mcp", "server_label": "s"}]})
    assert chat["messages"] == [{"role": "user", "content": "x"}] and "tools" not in chat
    assert len(ctx.dropped) == 4


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
_types = st.sampled_from(["message", "function_call", "function_call_output", "custom_tool_call",
                          "custom_tool_call_output", "reasoning", "web_search_call", "additional_tools",
                          "item_reference", "compaction", None, "input_text", "namespace"])
_keys = st.sampled_from(["role", "content", "call_id", "name", "arguments", "output", "input", "tools",
                         "namespace", "text", "image_url", "type", "parameters", "format", "filters"])
_item = st.builds(lambda t, extra: {**extra, **({"type": t} if t else {})}, _types,
                  st.dictionaries(_keys, _json | st.sampled_from(["user", "assistant", "system", "developer", "c"]),
                                  max_size=6))
_requests = st.fixed_dictionaries(
    {"model": st.sampled_from(["m", "", None, 3])},
    optional={"input": st.one_of(st.text(max_size=5), st.lists(_item, max_size=5), _json),
              "tools": st.one_of(st.lists(st.one_of(_item, st.builds(
                  lambda t, extra: {**extra, "type": t}, st.sampled_from(
                      ["function", "custom", "namespace", "web_search", "tool_search", "x"]),
                  st.dictionaries(_keys, _json, max_size=4))), max_size=4), _json),
              "tool_choice": _json | st.sampled_from(["auto", "none", "required"]),
              "instructions": _json, "text": _json, "reasoning": _json, "max_output_tokens": _json,
              "temperature": _json, "stream": _json, "store": _json, "parallel_tool_calls": _json,
              "max_tool_calls": _json, "previous_response_id": _json},
)


_VALID_ITEMS = [
    {"role": "user", "content": "hi"},
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a", "annotations": []}]},
    {"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": "https://x/i.png"}]},
    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "r"}]},
    {"type": "custom_tool_call", "call_id": "c2", "name": "apply", "input": "patch"},
    {"type": "custom_tool_call_output", "call_id": "c2", "output": "done"},
    {"type": "reasoning", "id": "rs_1", "summary": [], "content": None, "encrypted_content": "x"},
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}},
    {"type": "additional_tools", "role": "developer", "tools": [{"type": "function", "name": "g"}]},
]
_VALID_TOOLS = [
    {"type": "function", "name": "f", "parameters": {"type": "object"}},
    {"type": "custom", "name": "apply", "format": {"type": "grammar", "syntax": "lark", "definition": "start: x"}},
    {"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": "f"}]},
    {"type": "web_search", "filters": {"allowed_domains": ["a.b"]}, "user_location": {"country": "US"}},
    {"type": "tool_search", "execution": "client"},
]


def _mutated(templates: list[dict]) -> st.SearchStrategy:
    """A valid template with some fields replaced by arbitrary JSON: reaches the deep validation paths."""
    return st.builds(lambda base, changes: {**base, **changes}, st.sampled_from(templates),
                     st.dictionaries(_keys, _json, max_size=2) | st.just({}))


_near_valid = st.fixed_dictionaries(
    {"model": st.just("m"), "input": st.lists(_mutated(_VALID_ITEMS), min_size=1, max_size=6)},
    optional={"tools": st.lists(_mutated(_VALID_TOOLS), max_size=4),
              "tool_choice": st.sampled_from(["auto", "none", "required", {"type": "function", "name": "f"},
                                              {"type": "custom", "name": "apply"}, {"type": "web_search"},
                                              {"type": "allowed_tools", "tools": [{"type": "function", "name": "f"}]}]),
              "instructions": st.text(max_size=5), "stream": st.booleans()},
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(req=st.one_of(_requests, _json, _near_valid))
def test_arbitrary_json_gives_a_chat_body_or_bad_request(req) -> None:
    try:
        chat, ctx = to_chat(req)
    except BadRequest as e:
        assert e.status == 400 and isinstance(e.message, str)
        return
    json.dumps(chat)  # JSON-safe
    assert chat["messages"] and all(m["role"] in ("system", "user", "assistant", "tool") for m in chat["messages"])
    assert isinstance(ctx.echo, dict)


# --- from_chat -----------------------------------------------------------------------------------


def chat_completion(message: dict, finish: str = "stop", usage: dict | None = None) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1795359884, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
            "usage": usage or {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240,
                               "prompt_tokens_details": {"cached_tokens": 100},
                               "completion_tokens_details": {"reasoning_tokens": 8}}}


RUST = SearchResult(engine="serper", query="latest stable Rust release", hits=(
    Hit("Announcing Rust 1.91.0", "https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/", "s"),
    Hit("Releases", "https://doc.rust-lang.org/stable/releases.html", "s")))


def test_from_chat_text_with_citations_and_searches() -> None:
    _, ctx = to_chat({"model": "gpt-5.5", "input": "rust?", "tools": [{"type": "web_search"}],
                      "metadata": {"a": "b"}})
    text = "Rust 1.91.0 is the latest."
    outcome = Outcome(chat_completion({"content": text, "annotations": [{"type": "url_citation", "url_citation": {
        "start_index": 0, "end_index": 26, "url": RUST.hits[0].url, "title": RUST.hits[0].title}}]}),
        calls=[SearchCall("call_1", SearchRequest(RUST.query, engine="serper"), RUST),
                  SearchCall("call_2", SearchRequest("broken", engine="serper"), SearchResult("serper", "broken", error="down"))])
    resp = from_chat(outcome, ctx)
    Response.model_validate(resp)  # the SDK's own type accepts it
    assert resp["id"].startswith("resp_") and resp["object"] == "response" and resp["status"] == "completed"
    assert "output_text" not in resp
    ws1, ws2, msg = resp["output"]
    assert ws1["type"] == "web_search_call" and ws1["id"].startswith("ws_") and ws1["status"] == "completed"
    assert ws1["action"] == {"type": "search", "query": RUST.query, "queries": [RUST.query], "sources": [
        {"type": "url", "url": RUST.hits[0].url}, {"type": "url", "url": RUST.hits[1].url}]}
    assert ws2["status"] == "completed" and ws2["action"]["sources"] == []
    assert msg["id"].startswith("msg_") and msg["content"] == [{"type": "output_text", "text": text, "annotations": [
        {"type": "url_citation", "start_index": 0, "end_index": 26, "url": RUST.hits[0].url,
         "title": RUST.hits[0].title}]}]
    assert resp["usage"] == {"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 100,
                                                                            "cache_write_tokens": 0},
                             "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 8},
                             "total_tokens": 1240}
    assert resp["metadata"] == {"a": "b"} and resp["tools"] == [{"type": "web_search"}]
    assert resp["model"] == "gpt-5.5" and resp["created_at"] == 1795359884


def test_from_chat_drops_leading_blank_lines_and_keeps_offsets() -> None:
    _, ctx = to_chat({"model": "m", "input": "x"})
    text = "\n\nRust 1.91 [1]."
    resp = from_chat(Outcome(chat_completion({"content": text, "annotations": [{"type": "url_citation", "url_citation": {
        "start_index": 2, "end_index": 15, "url": "https://r.example/", "title": "R"}}]})), ctx)
    part = resp["output"][0]["content"][0]
    assert part["text"] == "Rust 1.91 [1]."
    assert (part["annotations"][0]["start_index"], part["annotations"][0]["end_index"]) == (0, 13)


def test_from_chat_searches_stay_invisible_without_the_hosted_tool() -> None:
    _, ctx = to_chat({"model": "m", "input": "rust?"})
    resp = from_chat(Outcome(chat_completion({"content": "x"}), calls=[SearchCall("c", SearchRequest("q", engine="e"), RUST)]), ctx)
    assert [item["type"] for item in resp["output"]] == ["message"]


def test_from_chat_calls_reasoning_and_namespaces() -> None:
    _, ctx = to_chat(codex_body("custom-model-function-call-001"))
    _, ctx2 = to_chat(codex_body("default-code-mode-001"))
    message = {"content": None, "reasoning_content": "Plan: run it.", "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"}},
        {"id": "call_b", "type": "function", "function": {"name": "spawn_agent", "arguments": ""}}]}
    resp = from_chat(Outcome(chat_completion(message, "tool_calls")), ctx)
    Response.model_validate(resp)
    rs, fc1, fc2 = resp["output"]
    assert rs == {"type": "reasoning", "id": rs["id"], "summary": [{"type": "summary_text", "text": "Plan: run it."}]}
    assert fc1 == {"type": "function_call", "id": fc1["id"], "call_id": "call_a", "name": "exec_command",
                   "arguments": "{\"cmd\":\"ls\"}", "status": "completed"}
    assert fc1["id"].startswith("fc_")
    assert fc2["namespace"] == "multi_agent_v1" and fc2["arguments"] == "{}"

    custom = {"content": None, "tool_calls": [{"id": "call_c", "type": "function", "function": {
        "name": "exec", "arguments": json.dumps({"input": "text('hi');\n"})}}]}
    resp = from_chat(Outcome(chat_completion(custom, "tool_calls")), ctx2)
    Response.model_validate(resp)
    (ctc,) = resp["output"]
    assert ctc == {"type": "custom_tool_call", "id": ctc["id"], "call_id": "call_c", "name": "exec",
                   "input": "text('hi');\n", "status": "completed"}
    assert ctc["id"].startswith("ctc_")


def test_from_chat_length_is_incomplete() -> None:
    _, ctx = to_chat({"model": "m", "input": "x", "max_output_tokens": 5})
    resp = from_chat(Outcome(chat_completion({"content": "trunc"}, "length")), ctx)
    Response.model_validate(resp)
    assert resp["status"] == "incomplete" and resp["incomplete_details"] == {"reason": "max_output_tokens"}
    assert resp["output"][0]["status"] == "incomplete" and resp["max_output_tokens"] == 5


def test_from_chat_empty_answer_is_an_empty_message() -> None:
    _, ctx = to_chat({"model": "m", "input": "x"})
    resp = from_chat(Outcome({"choices": [{"message": {"content": None}, "finish_reason": "stop"}]}), ctx)
    Response.model_validate(resp)
    assert resp["output"][0]["content"] == [{"type": "output_text", "text": "", "annotations": []}]
    assert resp["usage"]["total_tokens"] == 0
