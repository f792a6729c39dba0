"""The Messages request check (hub/protocols/messages/wire.py) through the real gateway on loopback:
every typed field's wrong value is a 400 in Anthropic's shape whose message names the field's dotted
JSON path (`messages.1.content.0.tool_use_id: Field required`); unknown block and tool types pass;
every recorded Claude Code request passes; and hypothesis bodies, grammar-shaped with hostile values
anywhere, never get a 5xx."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .helpers import base_config, searxng_engine

FIXTURES = Path(__file__).parent / "fixtures" / "claude-code"
OK_TOOL = {"name": "f", "input_schema": {"type": "object"}}
SEARCH = {"type": "web_search_20250305", "name": "web_search"}
FETCH = {"type": "web_fetch_20260309", "name": "web_fetch"}


@pytest.fixture
def gw(gateway, fake_model, search_fakes):
    return gateway(base_config(fake_model.url, webSearch={"engines": [searxng_engine(search_fakes)], "cacheTtlMs": 0}))


def req(**kw) -> dict:
    return {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}], **kw}


def blocks(*content: dict, role: str = "user") -> dict:
    """A request whose second message holds `content` (so paths read messages.1.content.N)."""
    return req(messages=[{"role": "user", "content": "hi"}, {"role": role, "content": list(content)}])


def anthropic_400(r) -> str:
    """The message of an Anthropic-shaped invalid_request_error 400."""
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error", body
    assert r.headers["x-should-retry"] == "false" and body["request_id"]
    return body["error"]["message"]


# --- each typed field: the error names its path ---------------------------------------------------

TYPED = [
    # the request
    (req(model=3), "model", "must be a non-empty string"),
    (req(max_tokens="100"), "max_tokens", "Expected `int | null`, got `str`"),
    (req(max_tokens=0), "max_tokens", "Expected `int` >= 1"),
    (req(max_tokens=True), "max_tokens", "got `bool`"),
    ({"model": "m", "max_tokens": 5}, "messages", "Field required"),
    (req(messages=[]), "messages", "Expected `array` of length >= 1"),
    (req(messages={"role": "user"}), "messages", "Expected `array`, got `object`"),
    (req(messages=["hi"]), "messages.0", "Expected `object`, got `str`"),
    (req(messages=[{"role": "robot", "content": "x"}]), "messages.0.role", "Invalid enum value 'robot'"),
    (req(messages=[{"content": "x"}]), "messages.0.role", "Field required"),
    (req(messages=[{"role": "user"}]), "messages.0.content", "Field required"),
    (req(messages=[{"role": "user", "content": None}]), "messages.0.content", "Expected `str | array`, got `null`"),
    (req(stream="yes"), "stream", "Expected `bool | null`, got `str`"),
    (req(temperature="hot"), "temperature", "Expected `float | null`, got `str`"),
    (req(top_p=[1]), "top_p", "Expected `float | null`, got `array`"),
    (req(top_k=1.5), "top_k", "Expected `int | null`, got `float`"),
    (req(stop_sequences="END"), "stop_sequences", "Expected `array | null`, got `str`"),
    (req(stop_sequences=["END", 3]), "stop_sequences.1", "Expected `str`, got `int`"),
    (req(metadata="me"), "metadata", "Expected `object | null`, got `str`"),
    (req(metadata={"user_id": 7}), "metadata.user_id", "Expected `str | null`, got `int`"),
    (req(system=5), "system", "Expected `str | array | null`, got `int`"),
    (req(system=[{"type": "text"}]), "system.0.text", "Field required"),
    (req(thinking="on"), "thinking", "Expected `object | null`, got `str`"),
    (req(thinking={"budget_tokens": 1024}), "thinking.type", "Field required"),
    (req(thinking={"type": "enabled", "budget_tokens": "lots"}), "thinking.budget_tokens", "got `str`"),
    (req(thinking={"type": "adaptive", "display": 1}), "thinking.display", "got `int`"),
    (req(output_config=[]), "output_config", "Expected `object | null`, got `array`"),
    (req(output_config={"effort": 3}), "output_config.effort", "got `int`"),
    (req(output_config={"format": {"schema": {}}}), "output_config.format.type", "Field required"),
    (req(output_config={"format": {"type": "json_schema"}}), "output_config.format.schema", "Field required"),
    (req(output_config={"format": {"type": "json_schema", "schema": []}}), "output_config.format.schema",
     "Expected `object | null`, got `array`"),
    # tool_choice
    (req(tools=[OK_TOOL], tool_choice="auto"), "tool_choice", "Expected `object | null`, got `str`"),
    (req(tools=[OK_TOOL], tool_choice={}), "tool_choice.type", "Field required"),
    (req(tools=[OK_TOOL], tool_choice={"type": "sometimes"}), "tool_choice.type", "Invalid enum value 'sometimes'"),
    (req(tools=[OK_TOOL], tool_choice={"type": "tool"}), "tool_choice.name", "Field required"),
    (req(tools=[OK_TOOL], tool_choice={"type": "tool", "name": 5}), "tool_choice.name", "got `int`"),
    (req(tools=[OK_TOOL], tool_choice={"type": "any", "disable_parallel_tool_use": "yes"}),
     "tool_choice.disable_parallel_tool_use", "Expected `bool | null`, got `str`"),
    # custom tools
    (req(tools={"name": "f"}), "tools", "Expected `array | null`, got `object`"),
    (req(tools=[OK_TOOL, "f"]), "tools.1", "Expected `object`, got `str`"),
    (req(tools=[{"input_schema": {"type": "object"}}]), "tools.0.name", "Field required"),
    (req(tools=[{"name": "f"}]), "tools.0.input_schema", "Field required"),
    (req(tools=[{"name": "f", "input_schema": "object"}]), "tools.0.input_schema", "Expected `object`, got `str`"),
    (req(tools=[{**OK_TOOL, "description": ["d"]}]), "tools.0.description", "got `array`"),
    (req(tools=[{**OK_TOOL, "strict": "yes"}]), "tools.0.strict", "Expected `bool | null`, got `str`"),
    (req(tools=[{**OK_TOOL, "defer_loading": 1}]), "tools.0.defer_loading", "Expected `bool | null`, got `int`"),
    (req(tools=[{**OK_TOOL, "type": 5}]), "tools.0.type", "Expected `str`, got `int`"),
    # web_search_* (any version)
    (req(tools=[{**SEARCH, "max_uses": 0}]), "tools.0.max_uses", "Expected `int` >= 1"),
    (req(tools=[{**SEARCH, "max_uses": "3"}]), "tools.0.max_uses", "got `str`"),
    (req(tools=[{**SEARCH, "allowed_domains": "a.com"}]), "tools.0.allowed_domains", "got `str`"),
    (req(tools=[{**SEARCH, "blocked_domains": ["a.com", 1]}]), "tools.0.blocked_domains.1", "got `int`"),
    (req(tools=[{**SEARCH, "user_location": "Paris"}]), "tools.0.user_location", "got `str`"),
    (req(tools=[{**SEARCH, "user_location": {"type": "approximate", "city": 1}}]), "tools.0.user_location.city",
     "got `int`"),
    (req(tools=[{**SEARCH, "allowed_callers": "direct"}]), "tools.0.allowed_callers", "got `str`"),
    (req(tools=[{**SEARCH, "type": "web_search_20991231", "response_inclusion": 0}]), "tools.0.response_inclusion",
     "got `int`"),
    (req(tools=[{**SEARCH, "name": 7}]), "tools.0.name", "got `int`"),
    # web_fetch_* (any version)
    (req(tools=[{**FETCH, "citations": True}]), "tools.0.citations", "Expected `object | null`, got `bool`"),
    (req(tools=[{**FETCH, "citations": {"enabled": "yes"}}]), "tools.0.citations.enabled", "got `str`"),
    (req(tools=[{**FETCH, "max_content_tokens": -5}]), "tools.0.max_content_tokens", "Expected `int` >= 1"),
    (req(tools=[{**FETCH, "use_cache": "no"}]), "tools.0.use_cache", "got `str`"),
    (req(tools=[{**FETCH, "max_uses": 2.5}]), "tools.0.max_uses", "got `float`"),
    (req(tools=[{**FETCH, "allowed_domains": ["a.com"], "blocked_domains": ["b.com"]}]), "tools.0",
     "allowed_domains and blocked_domains cannot both be set"),
    (req(tools=[{**FETCH, "url_sources": {"server_tool_results": {"type": "only", "tools": [{"type": "tool_reference"}]}}}]),
     "tools.0.url_sources.server_tool_results.tools.0.name", "Field required"),
    # content blocks
    (blocks(5), "messages.1.content.0", "Expected `object`, got `int`"),
    (blocks({"text": "x"}), "messages.1.content.0.type", "Field required"),
    (blocks({"type": ["text"]}), "messages.1.content.0.type", "Expected `str`, got `array`"),
    (blocks({"type": "text"}), "messages.1.content.0.text", "Field required"),
    (blocks({"type": "text", "text": "a"}, {"type": "text", "text": None}), "messages.1.content.1.text",
     "Expected `str`, got `null`"),
    (blocks({"type": "image"}), "messages.1.content.0.source", "Field required"),
    (blocks({"type": "image", "source": {"type": "ftp"}}), "messages.1.content.0.source.type", "Invalid value 'ftp'"),
    (blocks({"type": "image", "source": {"url": "http://x"}}), "messages.1.content.0.source.type", "Field required"),
    (blocks({"type": "image", "source": {"type": "base64", "media_type": "image/png"}}),
     "messages.1.content.0.source.data", "Field required"),
    (blocks({"type": "image", "source": {"type": "url"}}), "messages.1.content.0.source.url", "Field required"),
    (blocks({"type": "document", "source": {"type": "base64", "data": "JVBER"}}),
     "messages.1.content.0.source.media_type", "Field required"),
    (blocks({"type": "document", "source": {"type": "text"}}), "messages.1.content.0.source.data", "Field required"),
    (blocks({"type": "document", "source": {"type": "url", "url": 1}}), "messages.1.content.0.source.url",
     "got `int`"),
    (blocks({"type": "document", "source": {"type": "content"}}), "messages.1.content.0.source.content",
     "Field required"),
    (blocks({"type": "document", "source": {"type": "content", "content": [{"type": "text"}]}}),
     "messages.1.content.0.source.content.0.text", "Field required"),
    (blocks({"type": "document", "source": {"type": "text", "data": "x"}, "title": 3}),
     "messages.1.content.0.title", "got `int`"),
    (blocks({"type": "search_result", "title": ["t"]}), "messages.1.content.0.title", "got `array`"),
    (blocks({"type": "search_result", "content": [{"type": "text", "text": 1}]}),
     "messages.1.content.0.content.0.text", "got `int`"),
    (blocks({"type": "tool_reference"}), "messages.1.content.0.tool_name", "Field required"),
    (blocks({"type": "mid_conv_system"}), "messages.1.content.0.content", "Field required"),
    (blocks({"type": "container_upload"}), "messages.1.content.0.file_id", "Field required"),
    (blocks({"type": "tool_result", "content": "18°C"}), "messages.1.content.0.tool_use_id", "Field required"),
    (blocks({"type": "tool_result", "tool_use_id": 7}), "messages.1.content.0.tool_use_id", "got `int`"),
    (blocks({"type": "tool_result", "tool_use_id": "t", "is_error": "no"}), "messages.1.content.0.is_error",
     "got `str`"),
    (blocks({"type": "tool_result", "tool_use_id": "t", "content": {"type": "text"}}),
     "messages.1.content.0.content", "Expected `str | array | null`, got `object`"),
    (blocks({"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "a"}, {"type": "image"}]}),
     "messages.1.content.0.content.1.source", "Field required"),
    (blocks({"type": "tool_result", "tool_use_id": "t", "content": [{"type": "tool_reference", "tool_name": None}]}),
     "messages.1.content.0.content.0.tool_name", "got `null`"),
    (blocks({"type": "tool_use", "name": "f", "input": {}}, role="assistant"), "messages.1.content.0.id",
     "Field required"),
    (blocks({"type": "tool_use", "id": "t"}, role="assistant"), "messages.1.content.0.name", "Field required"),
    (blocks({"type": "tool_use", "id": "t", "name": "f", "input": "{}"}, role="assistant"),
     "messages.1.content.0.input", "Expected `object`, got `str`"),
    (blocks({"type": "server_tool_use", "name": "web_search", "input": {}}, role="assistant"),
     "messages.1.content.0.id", "Field required"),
    (blocks({"type": "server_tool_use", "id": "s", "name": {"n": 1}}, role="assistant"),
     "messages.1.content.0.name", "got `object`"),
    (blocks({"type": "web_search_tool_result", "content": []}, role="assistant"),
     "messages.1.content.0.tool_use_id", "Field required"),
    (blocks({"type": "web_fetch_tool_result", "tool_use_id": 1}, role="assistant"),
     "messages.1.content.0.tool_use_id", "got `int`"),
    (blocks({"type": "thinking", "signature": "s"}, role="assistant"), "messages.1.content.0.thinking",
     "Field required"),
    (blocks({"type": "thinking", "thinking": "hm", "signature": 1}, role="assistant"),
     "messages.1.content.0.signature", "got `int`"),
    (blocks({"type": "redacted_thinking"}, role="assistant"), "messages.1.content.0.data", "Field required"),
]


@pytest.mark.parametrize(("body", "path", "problem"), TYPED, ids=[f"{i}-{t[1]}" for i, t in enumerate(TYPED)])
@pytest.mark.parametrize("endpoint", ["/v1/messages", "/v1/messages/count_tokens"])
def test_a_wrong_value_names_its_path(gw, fake_model, no_errors_logged, endpoint, body, path, problem) -> None:
    if endpoint.endswith("count_tokens"):
        body = {k: v for k, v in body.items() if k != "max_tokens"} if "max_tokens" not in path else body
    message = anthropic_400(gw.client().post(endpoint, json=body))
    assert message.startswith(f"{path}: "), message
    assert problem in message, message
    assert fake_model.requests == []


def test_a_body_that_is_not_an_object(gw) -> None:
    assert anthropic_400(gw.client().post("/v1/messages", json=[req()])) == "request body must be a JSON object"


# --- what passes ----------------------------------------------------------------------------------


def test_unknown_block_and_tool_types_pass(gw, fake_model) -> None:
    """New block types anywhere blocks go, new tools, a server tool version not known yet, and fields
    nobody reads: accepted, and the text around them reaches the model as before."""
    new_block = {"type": "hologram_2099", "payload": {"x": [1, 2]}, "text": 5}
    body = req(
        system=[{"type": "text", "text": "be brief"}, new_block],
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "q1"}, new_block,
                                         {"type": "document", "source": {"type": "content", "content": [
                                             {"type": "text", "text": "doc"}, new_block]}},
                                         {"type": "document", "source": {"type": "file", "file_id": "file_1"}}]},
            {"role": "assistant", "content": [new_block, {"type": "text", "text": "a1"},
                                              {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
                                              {"type": "code_execution_tool_result", "tool_use_id": 3}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                          "content": [{"type": "text", "text": "r1"}, new_block]},
                                         {"type": "thinking_summary_2099"}]}],
        tools=[OK_TOOL, {"type": "hologram_tool_2099", "name": {"odd": True}},
               {"type": "web_search_20991231", "name": "web_search", "max_uses": 3, "brand_new_field": [1]},
               {"type": "bash_20250124", "name": "bash"}],
        brand_new_top_level={"anything": True}, service_tier="auto", context_management={"edits": []})
    r = gw.client().post("/v1/messages", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["type"] == "message"
    sent = fake_model.requests[-1]
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool"]
    assert sent["messages"][0]["content"] == "be brief"
    assert sent["messages"][1]["content"] == "q1\n\ndoc\n\n"
    assert sent["messages"][2]["content"] == "a1" and sent["messages"][3] == {
        "role": "tool", "tool_call_id": "toolu_1", "content": "r1"}
    # the client's tool and the gateway's own search for the future web_search version; bash and the
    # unknown tool have no chat equivalent
    assert [t["function"]["name"] for t in sent["tools"]] == ["f", "web_search"]


@pytest.mark.parametrize("fixture", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.name[:40])
def test_every_recorded_claude_code_request_passes(gw, fixture) -> None:
    body = json.loads(fixture.read_text())["request"]["body"]
    r = gw.client().post("/v1/messages/count_tokens", json=body)
    assert r.status_code == 200 and r.json()["input_tokens"] > 0, r.text


# --- hypothesis: any body, never a 5xx --------------------------------------------------------------

_leaf = st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=8) \
    | st.sampled_from(["text", "image", "tool_use", "tool_result", "web_search", "auto", "tool", "only", "all",
                       "base64", "url", "content", "json_schema", "enabled", "direct"])
_hostile = st.recursive(_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["type", "text", "name", "id", "content", "source", "input", "tools", "x"]), inner, max_size=3),
    max_leaves=8)
_word = st.text("abcxyz_ ", min_size=1, max_size=8)


class Maybe:
    """An optional field's values: a valid object may leave it out."""

    def __init__(self, values: st.SearchStrategy) -> None:
        self.values = values


@st.composite
def fields(draw, spec: dict, base: dict | None = None, rough: bool = False) -> dict:
    """An object with spec's fields, each a valid value or an optional one left out; `rough`: now and
    then any field absent or hostile."""
    out = dict(base or {})
    for name, valid in spec.items():
        optional = isinstance(valid, Maybe)
        roll = draw(st.integers(0, 39)) if rough else 2
        if roll == 0 or (optional and draw(st.integers(0, 3)) == 0):
            continue
        out[name] = draw(_hostile) if roll == 1 else draw(valid.values if optional else valid)
    return out


def grammar(rough: bool) -> st.SearchStrategy:
    """Messages requests with every kind of block and tool; `rough` ones carry a wrong value here and there."""

    def obj(spec: dict, base: dict | None = None) -> st.SearchStrategy:
        return fields(spec, base, rough)

    def blocks(depth: int) -> st.SearchStrategy:
        nested = blocks(depth - 1) if depth else st.just({"type": "text", "text": "leaf"})
        texts = st.lists(obj({"text": _word}, {"type": "text"}), max_size=2)
        sources = st.sampled_from(["base64", "text", "url", "file", "content"]).flatmap(lambda kind: {
            "base64": st.just({"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}),
            "text": st.just({"type": "text", "data": "plain"}), "url": st.just({"type": "url", "url": "http://d.test/"}),
            "file": st.just({"type": "file", "file_id": "file_1"}),
            "content": st.builds(lambda c: {"type": "content", "content": c}, st.lists(nested, max_size=2))}[kind])
        images = st.sampled_from([{"type": "base64", "media_type": "image/png", "data": "iVBORw0="},
                                  {"type": "url", "url": "http://img.test/a.png"}])
        ids = st.sampled_from(["toolu_1", "toolu_2", "srvtoolu_1"])
        specs = {
            "text": {"text": _word, "citations": Maybe(st.none())},
            "image": {"source": images},
            "document": {"source": sources, "title": Maybe(_word)},
            "search_result": {"title": Maybe(_word), "source": Maybe(_word), "content": Maybe(texts)},
            "tool_reference": {"tool_name": _word},
            "tool_use": {"id": ids, "name": st.sampled_from(["f", "g"]),
                         "input": Maybe(st.dictionaries(_word, _word, max_size=2))},
            "tool_result": {"tool_use_id": ids, "content": Maybe(_word | st.lists(nested, max_size=3)),
                            "is_error": Maybe(st.booleans())},
            "server_tool_use": {"id": ids, "name": st.sampled_from(["web_search", "web_fetch", "code_execution"]),
                                "input": Maybe(st.fixed_dictionaries({"query": _word}))},
            "web_search_tool_result": {"tool_use_id": ids, "content": st.lists(st.fixed_dictionaries({
                "type": st.just("web_search_result"), "url": st.just("http://r.test/"), "title": _word}), max_size=2)},
            "web_fetch_tool_result": {"tool_use_id": ids, "content": st.just({"type": "web_fetch_tool_error",
                                                                             "error_code": "unavailable"})},
            "mid_conv_system": {"content": texts},
            "thinking": {"thinking": _word, "signature": Maybe(_word)},
            "redacted_thinking": {"data": _word},
            "container_upload": {"file_id": _word},
            "hologram_2099": {"payload": _hostile},
        }
        return st.sampled_from(sorted(specs)).flatmap(lambda kind: obj(specs[kind], {"type": kind}))

    block = blocks(2)
    domains = st.lists(st.sampled_from(["a.test", "b.test", ""]), max_size=2)
    tool = st.one_of(
        obj({"name": st.sampled_from(["f", "g"]), "input_schema": st.just({"type": "object"}),
             "description": Maybe(_word), "strict": Maybe(st.booleans()), "defer_loading": Maybe(st.booleans())}),
        st.sampled_from(["web_search_20250305", "web_search_20260318", "web_search_20991231"]).flatmap(
            lambda kind: obj({"name": st.just("web_search"), "max_uses": Maybe(st.integers(1, 5)),
                              "allowed_domains": Maybe(domains), "user_location": Maybe(st.fixed_dictionaries(
                                  {"type": st.just("approximate"), "city": _word})),
                              "allowed_callers": Maybe(st.sampled_from([["direct"], ["code_execution_20250825"]]))},
                             {"type": kind})),
        st.sampled_from(["web_fetch_20250910", "web_fetch_20260309"]).flatmap(
            lambda kind: obj({"name": st.just("web_fetch"), "max_content_tokens": Maybe(st.integers(1, 9000)),
                              "citations": Maybe(st.fixed_dictionaries({"enabled": st.booleans()})),
                              "use_cache": Maybe(st.booleans()), "blocked_domains": Maybe(domains),
                              "url_sources": Maybe(st.sampled_from([
                                  {"user_input": "none"},
                                  {"client_tool_results": {"type": "only", "tools": [{"type": "tool_reference",
                                                                                       "name": "f"}]}}]))},
                             {"type": kind})),
        st.just({"type": "bash_20250124", "name": "bash"}),
    )
    message = obj({"role": st.sampled_from(["user", "user", "assistant", "system"]),
                   "content": _word | st.lists(block, min_size=1, max_size=8)})
    return obj({
        "model": st.sampled_from(["m", "claude-sonnet-4-5"]), "max_tokens": Maybe(st.integers(1, 64000)),
        "messages": st.lists(message, min_size=1, max_size=4),
        "system": Maybe(_word | st.lists(block, max_size=2)), "tools": Maybe(st.lists(tool, max_size=3)),
        "tool_choice": Maybe(st.sampled_from(["auto", "any", "none", "tool"]).flatmap(lambda kind: obj(
            {"name": st.sampled_from(["f", "web_search"]), "disable_parallel_tool_use": Maybe(st.booleans())},
            {"type": kind}))),
        "thinking": Maybe(obj({"type": st.sampled_from(["enabled", "adaptive", "disabled"]),
                               "budget_tokens": Maybe(st.integers(1024, 40000)),
                               "display": Maybe(st.sampled_from(["omitted", "updates"]))})),
        "output_config": Maybe(obj({"effort": Maybe(st.sampled_from(["low", "xhigh"])), "format": Maybe(st.just(
            {"type": "json_schema", "schema": {"type": "object"}}))})),
        "stream": Maybe(st.booleans()), "temperature": Maybe(st.floats(0, 1)), "top_k": Maybe(st.integers(1, 50)),
        "stop_sequences": Maybe(st.lists(_word, max_size=2)),
        "metadata": Maybe(st.just({"user_id": json.dumps({"device_id": "d", "session_id": "s"})})),
    })


_VALID, _ROUGH = grammar(rough=False), grammar(rough=True)


def _resolves(body: object, path: str) -> bool:
    """The dotted path leads into the body: every step but the last exists (the last may be the missing one)."""
    node = body
    steps = path.split(".")
    for i, step in enumerate(steps):
        if isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        elif isinstance(node, dict) and step in node:
            node = node[step]
        else:
            return i == len(steps) - 1
    return True


@pytest.mark.parametrize("endpoint", ["/v1/messages", "/v1/messages/count_tokens"])
def test_any_body_is_answered_or_an_anthropic_400(gw, no_errors_logged, endpoint) -> None:
    client = gw.client()

    @settings(max_examples=250 if endpoint == "/v1/messages" else 100, deadline=None,
              suppress_health_check=list(HealthCheck), database=None)
    @given(st.one_of(_VALID, _VALID, _ROUGH, _hostile))
    def run(body) -> None:
        r = client.post(endpoint, content=json.dumps(body), headers={"content-type": "application/json"})
        assert r.status_code in (200, 400), (r.status_code, r.text[:500])
        if r.status_code == 400:
            message = anthropic_400(r)
            path = message.split(": ", 1)[0]
            assert message == "request body must be a JSON object" or _resolves(body, path), (message, body)
        elif endpoint.endswith("count_tokens"):
            assert r.json()["input_tokens"] > 0
        elif r.headers["content-type"].startswith("text/event-stream"):
            assert r.text.startswith("event: message_start") and "event: message_stop" in r.text, r.text[:500]
        else:
            assert r.json()["type"] == "message", r.text[:500]

    run()


def test_tool_input_and_schema_reach_the_model_as_sent(gw, fake_model) -> None:
    """The decoded objects carry the client's values whole: nested input and schemas are not reshaped."""
    body = blocks({"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"b": [1, {"c": None}], "d": "é"}},
                  role="assistant")
    body["tools"] = [{**OK_TOOL, "input_schema": {"type": "object", "properties": {"b": {"type": "array"}}}}]
    r = gw.client().post("/v1/messages", json=body)
    assert r.status_code == 200, r.text
    sent = fake_model.requests[-1]
    assert sent["messages"][-1]["tool_calls"][0]["function"]["arguments"] == '{"b": [1, {"c": null}], "d": "é"}'
    assert sent["tools"][0]["function"]["parameters"] == body["tools"][0]["input_schema"]
