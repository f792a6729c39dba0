"""POST /v1/responses decodes its request as wire types (hub/protocols/responses/wire.py): every field
the gateway reads has its type, a wrong one is a 400 in OpenAI's shape whose `param` is the JSON path,
never a 500; item and tool types the gateway does not know pass the decode. Driven over HTTP."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hub.protocols.responses import decode_request
from hub.protocols.responses.wire import OtherItem, OtherTool
from routes.app import create_app

from .fakes.model import FakeModel
from .fakes.server import ServerThread
from .helpers import base_config, hermetic, searxng_engine
from .test_responses_gateway import FakeOpenAI

CODEX = sorted((Path(__file__).parent / "fixtures" / "codex").glob("*.json"))
BODY = {
    "model": "m", "instructions": "be brief", "store": False,
    "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "weather?"}]},
              {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
              {"type": "function_call_output", "call_id": "c1", "output": "sunny"}],
    "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}, {"type": "web_search"}],
}


@pytest.fixture(scope="module")
def gw(_fake_model_server: FakeModel, _search_fakes_server, tmp_path_factory) -> Iterator[str]:
    """One gateway for the module (hypothesis sends hundreds of requests), in front of the fake model."""
    _fake_model_server.reset()
    path = tmp_path_factory.mktemp("wire") / "engines.json"
    cfg = base_config(_fake_model_server.url, webSearch={"engines": [searxng_engine(_search_fakes_server)],
                                                         "cacheTtlMs": 0})
    path.write_text(json.dumps(hermetic(cfg)))
    server = ServerThread(create_app(str(path))).start()
    yield server.url
    server.stop()


@pytest.fixture
def client(gw: str, _fake_model_server: FakeModel) -> Iterator[httpx.Client]:
    _fake_model_server.reset()
    with httpx.Client(base_url=gw, timeout=30) as c:
        yield c


def post(client: httpx.Client, body) -> httpx.Response:
    return client.post("/v1/responses", content=json.dumps(body), headers={"content-type": "application/json"})


def check_answer(body, r: httpx.Response) -> None:
    """A Response (or its stream), or an error in OpenAI's shape whose param is a path of the body."""
    assert r.status_code < 500, (r.status_code, r.text[:500])
    if r.status_code == 200:
        if isinstance(body, dict) and body.get("stream") is True:
            assert r.headers["content-type"].startswith("text/event-stream") and b"response.completed" in r.content
        else:
            assert r.json()["object"] == "response"
        return
    error = r.json()["error"]
    assert set(error) >= {"message", "type", "param", "code"}, error
    assert error["type"] == "invalid_request_error" and isinstance(error["message"], str) and error["message"]
    if r.status_code == 404:  # an unknown previous_response_id
        assert error["param"] == "previous_response_id" and error["code"] == "previous_response_not_found"
        return
    assert r.status_code == 400, r.text
    if error["param"] is not None:
        assert names_a_path(body, error["param"]), (error, body)


def names_a_path(body, param: str) -> bool:
    """`param` is a JSON path in `body`, or a field missing from an object that is there."""
    steps = [int(s[1:-1]) if s.startswith("[") else s for s in re.findall(r"\[\d+\]|[^.\[\]]+", param)]
    node = body
    for n, step in enumerate(steps):
        last = n == len(steps) - 1
        if isinstance(step, int):
            if not (isinstance(node, list) and step < len(node)):
                return False
        elif not (isinstance(node, dict) and (step in node or last)):
            return False
        elif step not in node:
            return True  # the field that is required
        node = node[step]
    return True


# --- any body --------------------------------------------------------------------------------------

_leaf = st.none() | st.booleans() | st.integers(-3, 2**40) | st.floats(allow_nan=False, allow_infinity=False) \
    | st.text(max_size=6) | st.sampled_from(["user", "assistant", "developer", "system", "auto", "none", "required",
                                            "low", "high", "grammar", "c1", "f", "get_weather", "web_search"])
_KEYS = ["type", "role", "content", "text", "name", "call_id", "arguments", "output", "input", "id", "tools",
         "image_url", "file_data", "refusal", "namespace", "parameters", "strict", "description", "format",
         "definition", "filters", "allowed_domains", "user_location", "country", "search_context_size", "function",
         "mode", "effort", "summary", "encrypted_content", "x"]
_json = st.recursive(_leaf, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=4), max_leaves=10)
_ITEM_TYPES = ["message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
               "additional_tools", "item_reference", "reasoning", "web_search_call", "compaction", "local_shell_call",
               "frobnicate", None]
_PART_TYPES = ["input_text", "output_text", "text", "input_image", "input_file", "refusal", "input_audio", None]
_TOOL_TYPES = ["function", "custom", "namespace", "web_search", "web_search_preview", "tool_search", "mcp",
               "openrouter:web_search", "future_tool", None]


def _typed(kinds: list) -> st.SearchStrategy:
    return st.builds(lambda kind, fields: {**fields, **({"type": kind} if kind else {})}, st.sampled_from(kinds),
                     st.dictionaries(st.sampled_from(_KEYS[1:]), _json, max_size=4))


# items and tools as clients send them, mixed with arbitrary ones of every type
_VALID_PARTS = [{"type": "input_text", "text": "hi"}, {"type": "output_text", "text": "a", "annotations": []},
                {"type": "input_image", "image_url": "data:image/png;base64,QQ==", "detail": "low"},
                {"type": "input_image", "image_url": {"url": "https://x/i.png"}},
                {"type": "input_file", "file_data": "data:application/pdf;base64,QQ==", "filename": "f.pdf"},
                {"type": "input_file", "file_data": "data:text/plain;base64,QQ=="}, {"type": "text", "text": "t"},
                {"type": "refusal", "refusal": "no"}]
_VALID_ITEMS = [
    {"role": "user", "content": "hi"},
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
    {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
     "content": [{"type": "output_text", "text": "a", "annotations": []}]},
    {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}", "status": "completed"},
    {"type": "function_call", "call_id": "c2", "name": "read", "namespace": "ns", "arguments": {"x": 1}},
    {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "sunny"}]},
    {"type": "custom_tool_call", "call_id": "c3", "name": "apply", "input": "*** Begin Patch"},
    {"type": "custom_tool_call_output", "call_id": "c3", "output": "done"},
    {"type": "reasoning", "id": "rs_1", "summary": [], "content": None, "encrypted_content": "e"},
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}},
    {"type": "additional_tools", "role": "developer", "tools": [{"type": "function", "name": "extra"}]},
    {"type": "compaction", "encrypted_content": "e"},
    {"id": "msg_unknown"},
]
_VALID_TOOLS = [
    {"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": False},
    {"type": "custom", "name": "apply", "format": {"type": "grammar", "syntax": "lark", "definition": "start: x"}},
    {"type": "namespace", "name": "ns", "description": "", "tools": [{"type": "function", "name": "read"}]},
    {"type": "web_search", "filters": {"allowed_domains": ["rust-lang.org"]}, "search_context_size": "low",
     "user_location": {"type": "approximate", "country": "US"}, "external_web_access": False},
    {"type": "tool_search", "execution": "client"},
    {"type": "function", "function": {"name": "chat_shaped", "parameters": {"type": "object"}}},
]
_part = st.sampled_from(_VALID_PARTS) | _typed(_PART_TYPES)
_tool = st.sampled_from(_VALID_TOOLS) | st.recursive(_typed(_TOOL_TYPES), lambda inner: st.builds(
    lambda name, tools: {"type": "namespace", "name": name, "tools": tools}, _leaf, st.lists(inner, max_size=2)),
    max_leaves=4)
_item = st.one_of(
    st.sampled_from(_VALID_ITEMS), st.sampled_from(_VALID_ITEMS), _typed(_ITEM_TYPES),
    st.builds(lambda role, content: {"type": "message", "role": role, "content": content},
              st.sampled_from(["user", "assistant", "developer", "system", "robot"]),
              st.text(max_size=5) | st.lists(_part, max_size=3)),
    st.builds(lambda output: {"type": "function_call_output", "call_id": "c1", "output": output},
              st.text(max_size=5) | st.lists(_part, max_size=3)),
    st.builds(lambda tools: {"type": "additional_tools", "tools": tools}, st.lists(_tool, max_size=3)),
)
# the top-level fields with values of their types; then a few of them replaced by anything
_FIELDS = {
    "tools": st.lists(_tool, max_size=4),
    "tool_choice": st.sampled_from(["auto", "none", "required", {"type": "web_search"},
                                    {"type": "function", "name": "get_weather"}, {"type": "custom", "name": "apply"},
                                    {"type": "allowed_tools", "mode": "required",
                                     "tools": [{"type": "function", "name": "get_weather"}]}]),
    "instructions": st.text(max_size=5), "stream": st.booleans(), "store": st.booleans(),
    "include": st.lists(st.sampled_from(["web_search_call.results", "reasoning.encrypted_content"]), max_size=2),
    "reasoning": st.fixed_dictionaries({}, optional={"effort": st.sampled_from(["low", "high"]),
                                                     "summary": st.just("auto")}),
    "text": st.fixed_dictionaries({}, optional={"format": st.sampled_from([{"type": "text"}, {"type": "json_object"}]),
                                                "verbosity": st.just("low")}),
    "max_output_tokens": st.integers(1, 4000), "max_tool_calls": st.integers(1, 5),
    "parallel_tool_calls": st.booleans(), "temperature": st.floats(0, 2), "top_p": st.floats(0, 1),
    "truncation": st.just("auto"), "metadata": st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
    "previous_response_id": st.just("resp_unknown"), "user": st.text(max_size=4),
    "prompt_cache_key": st.text(max_size=4), "service_tier": st.just("auto"),
}
_bodies = st.builds(
    lambda body, wrong: {**body, **wrong},
    st.fixed_dictionaries({"model": st.sampled_from(["m"] * 12 + ["", 3, None]),
                           "input": st.text(max_size=5) | st.lists(_item, min_size=1, max_size=5)}, optional=_FIELDS),
    st.dictionaries(st.sampled_from([*_FIELDS, "model", "input", "conversation"]), _json, max_size=2) | st.just({}),
)


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(body=st.one_of(_bodies, _bodies, _json))
def test_any_body_is_a_response_or_an_openai_error_naming_its_path(client, no_errors_logged, body) -> None:
    check_answer(body, post(client, body))


def _mutated() -> st.SearchStrategy:
    """BODY with one field anywhere in it replaced, removed or wrapped: reaches every nested check."""
    def paths(node, prefix=()):
        yield prefix
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in children:
            yield from paths(v, (*prefix, k))

    def apply(path, action, value):
        body = copy.deepcopy(BODY)
        parent = body
        for key in path[:-1]:
            parent = parent[key]
        if action == "delete":
            del parent[path[-1]]
        else:
            parent[path[-1]] = [parent[path[-1]]] if action == "wrap" else value
        return body

    return st.builds(apply, st.sampled_from([p for p in paths(BODY) if p]),
                     st.sampled_from(["set", "set", "delete", "wrap"]), _json)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(body=_mutated())
def test_a_broken_field_of_a_valid_request_names_itself(client, no_errors_logged, body) -> None:
    check_answer(body, post(client, body))


# --- each typed field -----------------------------------------------------------------------------


def patched(path: str, value=..., body: dict = BODY) -> dict:
    """BODY with the value at `path` ("input.0.content") set, or removed when no value is given."""
    body = copy.deepcopy(body)
    *parents, last = [int(k) if k.isdigit() else k for k in path.split(".")]
    node = body
    for key in parents:
        node = node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return body


def with_input(*items) -> dict:
    return {**BODY, "input": [{"role": "user", "content": "hi"}, *items]}


def with_tool(tool) -> dict:
    return {**BODY, "tools": [tool]}


CASES = [
    # the request
    (patched("model"), "model", "is required"),
    (patched("model", ""), "model", "length >= 1"),
    (patched("input", 3), "input", "Expected `str | array | null`, got `int`"),
    (patched("instructions", ["a"]), "instructions", "got `array`"),
    (patched("tools", {}), "tools", "Expected `array | null`"),
    (patched("tool_choice", "sometimes"), "tool_choice", "Invalid enum value 'sometimes'"),
    (patched("tool_choice", 5), "tool_choice", "got `int`"),
    (patched("tool_choice", {"type": "allowed_tools", "mode": "always", "tools": []}), "tool_choice.mode",
     "Invalid enum value 'always'"),
    (patched("tool_choice", {"type": "allowed_tools", "mode": "auto", "tools": [5]}), "tool_choice.tools[0]",
     "Expected `object`"),
    (patched("tool_choice", {"type": "allowed_tools", "mode": "auto"}), "tool_choice.tools", "is required"),
    (patched("tool_choice", {"type": "function"}), "tool_choice.name", "is required"),
    (patched("tool_choice", {"type": "function", "name": "nope"}), "tool_choice.name", "not in 'tools'"),
    (patched("previous_response_id", 5), "previous_response_id", "got `int`"),
    (patched("conversation", "conv_1"), "conversation", "not supported"),
    (patched("store", "yes"), "store", "Expected `bool | null`"),
    (patched("stream", "yes"), "stream", "Expected `bool | null`"),
    (patched("include", "x"), "include", "Expected `array | null`"),
    (patched("include", ["web_search_call.results", 1]), "include[1]", "Expected `str`"),
    (patched("reasoning", "high"), "reasoning", "Expected `object | null`"),
    (patched("reasoning", {"effort": 1}), "reasoning.effort", "Expected `str | null`"),
    (patched("text", {"format": "json"}), "text.format", "Expected `object | null`"),
    (patched("text", {"format": {"type": 1}}), "text.format.type", "Expected `str | null`"),
    (patched("text", {"verbosity": 1}), "text.verbosity", "Expected `str | null`"),
    (patched("max_output_tokens", 0), "max_output_tokens", ">= 1"),
    (patched("max_output_tokens", 1.5), "max_output_tokens", "got `float`"),
    (patched("max_tool_calls", -1), "max_tool_calls", ">= 1"),
    (patched("parallel_tool_calls", "no"), "parallel_tool_calls", "Expected `bool | null`"),
    (patched("temperature", "hot"), "temperature", "got `str`"),
    (patched("top_p", True), "top_p", "got `bool`"),
    (patched("truncation", 1), "truncation", "got `int`"),
    (patched("metadata", []), "metadata", "Expected `object | null`"),
    (patched("prompt_cache_key", 1), "prompt_cache_key", "got `int`"),
    (patched("safety_identifier", 1), "safety_identifier", "got `int`"),
    (patched("user", 1), "user", "got `int`"),
    # input items
    (patched("input", ["just text"]), "input[0]", "Expected `object`, got `str`"),
    (patched("input.0.type", 5), "input[0].type", "got `int`"),
    (patched("input.0.role"), "input[0].role", "is required"),
    (patched("input.0.role", "robot"), "input[0].role", "Invalid enum value 'robot'"),
    (patched("input.0.content", 5), "input[0].content", "Expected `str | array | null`"),
    (patched("input.0.content"), "input[0].content", "required for a user message"),
    (patched("input.0.content", [3]), "input[0].content[0]", "Expected `object`, got `int`"),
    (patched("input.0.content.0.text"), "input[0].content[0].text", "is required"),
    (patched("input.0.content.0.text", None), "input[0].content[0].text", "Expected `str`, got `null`"),
    (patched("input.0.content.0", {"type": "input_image", "image_url": 5}), "input[0].content[0].image_url",
     "got `int`"),
    (patched("input.0.content.0", {"type": "input_image", "image_url": {"url": 5}}),
     "input[0].content[0].image_url.url", "got `int`"),
    (patched("input.0.content.0", {"type": "input_image", "file_id": "file_1"}), "input[0].content[0].image_url",
     "file ids are not supported"),
    (patched("input.0.content.0", {"type": "input_file", "file_data": 5}), "input[0].content[0].file_data",
     "got `int`"),
    (patched("input.0.content.0", {"type": "input_file", "file_url": "https://x/f.pdf"}),
     "input[0].content[0].file_data", "not supported"),
    (patched("input.0.content.0", {"type": "input_audio"}), "input[0].content[0].type", "not a supported content part"),
    (with_input({"role": "assistant", "content": [{"type": "refusal", "refusal": 5}]}), "input[1].content[0].refusal",
     "got `int`"),
    (with_input({"role": "assistant", "content": [{"type": "output_text", "text": 5}]}), "input[1].content[0].text",
     "got `int`"),
    (with_input({"role": "system", "content": [{"type": "input_image", "image_url": "u"}]}),
     "input[1].content[0].type", "text only"),
    (patched("input.1.call_id"), "input[1].call_id", "is required"),
    (patched("input.1.name", ""), "input[1].name", "length >= 1"),
    (patched("input.1.arguments", 5), "input[1].arguments", "got `int`"),
    (patched("input.1.namespace", 5), "input[1].namespace", "got `int`"),
    (patched("input.2.call_id"), "input[2].call_id", "is required"),
    (patched("input.2.output", 5), "input[2].output", "Expected `str | array`, got `int`"),
    (patched("input.2.output"), "input[2].output", "is required"),
    (patched("input.2.output", [{"type": "input_text"}]), "input[2].output[0].text", "is required"),
    (patched("input.2.output", [{"type": "refusal", "refusal": "no"}]), "input[2].output[0].type",
     "not a supported tool output part"),
    (with_input({"type": "custom_tool_call", "call_id": "c", "name": "n", "input": 1}), "input[1].input", "got `int`"),
    (with_input({"type": "custom_tool_call", "call_id": "c", "name": "n"}), "input[1].input", "is required"),
    (with_input({"type": "custom_tool_call_output", "call_id": "", "output": "x"}), "input[1].call_id",
     "length >= 1"),
    (with_input({"type": "additional_tools", "tools": {}}), "input[1].tools", "Expected `array`"),
    (with_input({"type": "additional_tools", "tools": [{"type": "function"}]}), "input[1].tools[0].name",
     "is required"),
    (with_input({"type": "item_reference"}), "input[1].id", "is required"),
    (with_input({"type": "item_reference", "id": ""}), "input[1].id", "length >= 1"),
    (with_input({"type": "item_reference", "id": "msg_nowhere"}), "input[1]", "not found"),
    (with_input({"content": "no role, no type"}), "input[1].type", "neither 'type' nor 'role'"),
    (with_input({"type": "frobnicate"}), "input[1].type", "not a supported input item type"),
    # tools
    (with_tool(5), "tools[0]", "Expected `object`, got `int`"),
    (with_tool({"name": "f"}), "tools[0].type", "is required"),
    (with_tool({"type": 5}), "tools[0].type", "Expected `str`, got `int`"),
    (with_tool({"type": "function"}), "tools[0].name", "is required"),
    (with_tool({"type": "function", "name": ""}), "tools[0].name", "length >= 1"),
    (with_tool({"type": "function", "name": "f", "parameters": "x"}), "tools[0].parameters", "got `str`"),
    (with_tool({"type": "function", "name": "f", "strict": "yes"}), "tools[0].strict", "got `str`"),
    (with_tool({"type": "function", "name": "f", "description": 5}), "tools[0].description", "got `int`"),
    (with_tool({"type": "function", "function": {"description": "d"}}), "tools[0].function.name", "is required"),
    (with_tool({"type": "custom"}), "tools[0].name", "is required"),
    (with_tool({"type": "custom", "name": "c", "format": "lark"}), "tools[0].format", "got `str`"),
    (with_tool({"type": "custom", "name": "c", "format": {"type": "grammar", "definition": 5}}),
     "tools[0].format.definition", "got `int`"),
    (with_tool({"type": "namespace", "tools": []}), "tools[0].name", "is required"),
    (with_tool({"type": "namespace", "name": "n", "tools": {}}), "tools[0].tools", "Expected `array`"),
    (with_tool({"type": "namespace", "name": "n", "tools": [{"type": "custom"}]}), "tools[0].tools[0].name",
     "is required"),
    (with_tool({"type": "web_search", "filters": {"allowed_domains": "a.com"}}), "tools[0].filters.allowed_domains",
     "Expected `array | null`"),
    (with_tool({"type": "web_search", "filters": {"blocked_domains": ["a.com", 1]}}),
     "tools[0].filters.blocked_domains[1]", "got `int`"),
    (with_tool({"type": "web_search", "user_location": "Paris"}), "tools[0].user_location", "got `str`"),
    (with_tool({"type": "web_search", "user_location": {"type": "approximate", "city": 5}}),
     "tools[0].user_location.city", "got `int`"),
    (with_tool({"type": "web_search_preview", "search_context_size": "huge"}), "tools[0].search_context_size",
     "Invalid enum value 'huge'"),
]


@pytest.mark.parametrize(("body", "param", "words"), CASES, ids=[f"{i}-{c[1]}" for i, c in enumerate(CASES)])
def test_a_wrong_field_is_a_400_naming_its_path(client, _fake_model_server, no_errors_logged, body, param,
                                                words) -> None:
    r = post(client, body)
    assert r.status_code == 400, r.text
    assert r.json() == {"error": {"message": r.json()["error"]["message"], "type": "invalid_request_error",
                                  "param": param, "code": None}}
    assert words in r.json()["error"]["message"], r.json()
    assert r.headers["x-should-retry"] == "false"
    assert _fake_model_server.requests == []  # nothing reached the backend


def test_a_body_that_is_not_an_object(client, no_errors_logged) -> None:
    r = post(client, ["model", "m"])
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"


# --- what passes the decode -------------------------------------------------------------------------


@pytest.mark.parametrize("path", CODEX, ids=lambda p: p.name[:50])
def test_every_recorded_codex_request_decodes(path: Path) -> None:
    body = json.loads(path.read_text())["request"]["body"]
    request = decode_request(body)
    assert len(request.items) == len(body["input"]) and len(request.tools) == len(body.get("tools", []))


def test_new_item_and_tool_types_pass_the_decode() -> None:
    body = {"model": "m", "input": [{"type": "holo_call", "payload": {"x": [1]}, "call_id": 5},
                                    {"type": "reasoning", "summary": 5, "content": None, "encrypted_content": 1}],
            "tools": [{"type": "holo", "name": 5, "parameters": "any"}, {"type": "mcp", "server_label": 1}]}
    request = decode_request(body)
    assert request.items == [OtherItem("holo_call"), OtherItem("reasoning")]
    assert request.tools == [OtherTool("holo"), OtherTool("mcp")]
    assert request.body is body  # the client's dict, untouched


def test_fields_the_gateway_does_not_read_are_accepted_as_sent(client, _fake_model_server, no_errors_logged) -> None:
    body = {**BODY, "service_tier": 5, "client_metadata": {"a": [1]}, "brand_new_field": {"x": None},
            "metadata": {"k": {"nested": True}},
            "input": [*BODY["input"],
                      {"type": "reasoning", "id": "rs_1", "summary": "not a list", "content": None},
                      {"type": "web_search_call", "id": "ws_1", "status": 3, "action": "x"},
                      {"type": "compaction", "encrypted_content": 5},
                      {"type": "local_shell_call", "id": "ls", "action": {}, "call_id": 1}],
            "tools": [*BODY["tools"], {"type": "tool_search", "execution": 5}, {"type": "future_tool", "opts": [1]},
                      {"type": "web_search", "external_web_access": "sometimes", "search_content_types": 5}]}
    r = post(client, body)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"] == {"k": {"nested": True}} and r.json()["tools"] == body["tools"]
    (sent,) = _fake_model_server.requests
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool"]
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_weather", "web_search", "web_fetch"]  # the gateway's own


def test_openrouter_tools_are_kept_as_sent(client, _fake_model_server, no_errors_logged) -> None:
    # hub/injection/openrouter.py reads them on the chat request; the decode leaves them alone
    body = {**BODY, "tools": [{"type": "openrouter:web_search", "parameters": "odd", "x": [1]}]}
    r = post(client, body)
    assert r.status_code == 200, r.text
    assert all(not t["type"].startswith("openrouter:") for t in _fake_model_server.requests[0].get("tools", []))


@pytest.fixture(scope="module")
def native() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    yield fake
    fake.server.stop()


def test_a_passed_through_request_is_not_decoded(gateway, fake_model, search_fakes, native) -> None:
    """A commercial OpenAI target gets the request untouched: what OpenAI accepts is its business."""
    native.requests.clear()
    native.status = 200
    cfg = base_config(fake_model.url)
    cfg["providers"]["oa"] = {"type": "openai", "baseURL": native.server.url + "/v1", "apiKey": "sk-provider"}
    gw = gateway(cfg)
    body = {"model": "oa.gpt-5.5", "input": [{"type": "frobnicate", "call_id": 5}, {"role": "user", "content": "hi"}],
            "tools": [{"type": "web_search", "search_context_size": "enormous"}], "conversation": "conv_1"}
    with gw.client() as c:
        r = c.post("/v1/responses", json=body)
    assert r.status_code == 200, r.text
    assert native.requests[0]["body"] == {**body, "model": "gpt-5.5"}
