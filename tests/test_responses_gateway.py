"""/v1/responses through the real gateway, driven by the official openai SDK and by Codex's recorded
requests, in front of the fake model and fake search providers on loopback."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from itertools import groupby
from pathlib import Path

import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .fakes.search_providers import KEYS, FakeSearchProviders
from .fakes.server import ServerThread
from .helpers import base_config
from .test_responses_stream import check_events, parse_sse

CODEX = sorted((Path(__file__).parent / "fixtures" / "codex").glob("*.json"))
WEATHER = {"type": "function", "name": "get_weather", "description": "Weather for a city.", "strict": False,
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


@pytest.fixture
def search(search_fakes) -> tuple[FakeSearchProviders, ServerThread]:
    """The shared fake providers (tests/conftest.py), reset for this test, and their server."""
    return search_fakes, search_fakes.server


def ws_config(model_url: str, search) -> dict:
    """base_config plus one Serper engine on the fake providers; no result cache."""
    fakes, server = search
    engine = {"id": "google", "type": "serper", "apiKey": KEYS["serper"], "baseURL": fakes.base_url(server, "serper")}
    return base_config(model_url, webSearch={"engines": [engine], "cacheTtlMs": 0})


def sdk(gw) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)


def post_sse(gw, body: dict, headers: dict | None = None) -> list[dict]:
    with gw.client() as c:
        r = c.post("/v1/responses", json=body, headers=headers or {})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/event-stream")
    return parse_sse(r.content)


# --- the SDK ---------------------------------------------------------------------------------------


def test_create_and_what_the_backend_receives(gateway, fake_model, search) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    fake_model.script({"content": "hello there", "reasoning": "the user greets"})
    r = sdk(gw).responses.create(model="default", input="hi", instructions="Be brief.", max_output_tokens=50,
                                 temperature=0.3, reasoning={"effort": "low"}, metadata={"k": "v"}, store=False)
    assert r.output_text == "hello there" and r.status == "completed" and r.id.startswith("resp_")
    assert [o.type for o in r.output] == ["reasoning", "message"]
    assert r.output[0].summary[0].text == "the user greets"
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.total_tokens) == (10, 5, 15)
    assert r.model == "default" and r.metadata == {"k": "v"} and r.instructions == "Be brief."
    sent = fake_model.requests[0]
    assert sent["model"] == "m"
    assert sent["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    assert (sent["max_tokens"], sent["temperature"], sent["reasoning_effort"]) == (50, 0.3, "low")
    assert "metadata" not in sent and "instructions" not in sent


def test_sdk_stream_helper(gateway, fake_model, search) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    fake_model.script({"content": "one two three", "chunk_delay": 0.01})
    deltas = []
    with sdk(gw).responses.stream(model="default", input="count", store=False) as s:
        for event in s:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = s.get_final_response()
    assert "".join(deltas) == "one two three" == final.output_text
    assert final.status == "completed" and final.usage.total_tokens == 15


@pytest.mark.parametrize("stream", [False, True])
def test_function_tool_round_trip(gateway, fake_model, search, stream) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    client = sdk(gw)
    fake_model.script({"content": "Checking.", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"},
                                                               "id": "call_w1"}]})
    kw = dict(model="default", input=[{"role": "user", "content": "weather in Paris?"}], tools=[WEATHER], store=False)
    if stream:
        with client.responses.stream(**kw) as s:
            r = s.get_final_response()
    else:
        r = client.responses.create(**kw)
    msg, call = r.output
    assert msg.type == "message" and msg.content[0].text == "Checking."
    assert call.type == "function_call" and call.name == "get_weather" and call.call_id == "call_w1"
    assert json.loads(call.arguments) == {"city": "Paris"} and call.id.startswith("fc_")
    sent_tools = [t["function"]["name"] for t in fake_model.requests[0]["tools"]]
    assert sent_tools[0] == "get_weather"
    # the client answers statelessly, replaying the output items (as Codex does)
    fake_model.script({"content": "18 degrees."})
    replay = [o.model_dump(exclude_none=True) for o in r.output]
    r2 = client.responses.create(model="default", tools=[WEATHER], store=False, input=[
        *kw["input"], *replay, {"type": "function_call_output", "call_id": call.call_id, "output": "18C"}])
    assert r2.output_text == "18 degrees."
    assert fake_model.requests[-1]["messages"][-2:] == [
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "call_w1", "type": "function", "function": {"name": "get_weather", "arguments": call.arguments}}]},
        {"role": "tool", "tool_call_id": "call_w1", "content": "18C"}]


def test_custom_tool_call(gateway, fake_model, search) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    fake_model.script({"tool_calls": [{"name": "apply_patch", "arguments": {"input": patch}, "id": "call_p"}]})
    with sdk(gw).responses.stream(model="default", input="add a.txt", store=False,
                                  tools=[{"type": "custom", "name": "apply_patch", "description": "Edit files."}]) as s:
        r = s.get_final_response()
    (call,) = r.output
    assert call.type == "custom_tool_call" and call.input == patch and call.call_id == "call_p"
    tool = fake_model.requests[0]["tools"][0]["function"]
    assert tool["name"] == "apply_patch" and tool["parameters"]["required"] == ["input"]


@pytest.mark.parametrize("stream", [False, True])
def test_hosted_web_search(gateway, fake_model, search, stream) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    fake_model.script(
        {"tool_calls": [{"name": "web_search", "arguments": {"query": "latest rust release"}}]},
        {"content": "Rust 1.91.0 is the latest stable release [1]."},
    )
    kw = dict(model="default", input="What is the latest Rust release?", store=False,
              tools=[{"type": "web_search", "search_context_size": "low"}])
    if stream:
        events = post_sse(gw, {**kw, "stream": True})
        body = check_events(events)
        kinds = [e["type"] for e in events]
        assert kinds.index("response.web_search_call.searching") < kinds.index("response.output_text.delta")
        r = openai.types.responses.Response.model_validate(body)
    else:
        r = sdk(gw).responses.create(**kw)
    ws, msg = r.output
    assert ws.type == "web_search_call" and ws.id.startswith("ws_") and ws.status == "completed"
    assert ws.action.type == "search" and ws.action.query == "latest rust release"
    assert ws.action.sources[0].url == "https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/"
    (ann,) = msg.content[0].annotations
    assert ann.type == "url_citation" and ann.url == ws.action.sources[0].url
    assert msg.content[0].text[ann.start_index:ann.end_index].endswith("[1]")
    assert search[0].calls("serper")[0].json["q"] == "latest rust release"
    # the backend saw the search result, the client sees no trace of the gateway's tool round
    assert fake_model.requests[1]["messages"][-1]["role"] == "tool"
    assert r.usage.total_tokens == 30


def test_hosted_web_search_through_the_sdk_stream(gateway, fake_model, search) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    fake_model.script({"content": "Let me look.", "tool_calls": [{"name": "web_search", "arguments": {"query": "rust"}}]},
                      {"content": "Rust 1.91.0 [1]."})
    kinds = []
    with sdk(gw).responses.stream(model="default", input="latest rust?", tools=[{"type": "web_search_preview"}],
                                  store=False) as s:
        for event in s:
            kinds.append(event.type)
        r = s.get_final_response()
    assert [o.type for o in r.output] == ["message", "web_search_call", "message"]
    assert r.output[0].content[0].text == "Let me look." and r.output[2].content[0].text == "Rust 1.91.0 [1]."
    assert r.output[2].content[0].annotations[0].url == r.output[1].action.sources[0].url
    assert "response.web_search_call.completed" in kinds and kinds[-1] == "response.completed"


def test_hosted_search_options_reach_the_engine(gateway, fake_model, search) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    fake_model.script(
        {"tool_calls": [{"name": "web_search", "arguments": {"query": "rust release"}},
                        {"name": "web_search", "arguments": {"query": "rust blog"}}]},
        {"content": "Rust 1.91 [1]."},
    )
    r = sdk(gw).responses.create(model="default", input="rust?", store=False, max_tool_calls=1, tools=[
        {"type": "web_search", "filters": {"allowed_domains": ["rust-lang.org"]},
         "user_location": {"type": "approximate", "country": "DE"}}])
    calls = search[0].calls("serper")
    assert len(calls) == 1 and "site:rust-lang.org" in calls[0].json["q"]  # max_tool_calls=1: one search ran
    assert [o.type for o in r.output] == ["web_search_call", "web_search_call", "message"]
    shown = {o.action.query: o.action.sources for o in r.output[:2]}
    assert shown["rust blog"] == [] and shown["rust release"]  # the refused search shows, without sources


def test_searches_without_the_hosted_tool_stay_invisible(gateway, fake_model, search) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "rust"}}]},
                      {"content": "Rust 1.91.0 [1]."})
    events = post_sse(gw, {"model": "default", "input": "Search the web: latest Rust release?", "stream": True,
                           "store": False})
    final = check_events(events)
    assert [i["type"] for i in final["output"]] == ["message"]
    assert len(search[0].calls("serper")) == 1  # the intent rules still searched


# --- Codex, replayed -------------------------------------------------------------------------------


def script_for(recorded_output: list[dict]) -> tuple[list[dict], str | None]:
    """Fake-model replies that make the recorded answer: (script, the message text expected back)."""
    reasoning = next((i["summary"][0]["text"] for i in recorded_output if i["type"] == "reasoning"), None)
    searches = [i for i in recorded_output if i["type"] == "web_search_call"]
    reply: dict = {"reasoning": reasoning} if reasoning else {}
    calls = []
    text = None
    for item in recorded_output:
        if item["type"] == "function_call":
            calls.append({"name": item["name"], "arguments": item["arguments"], "id": item["call_id"]})
        elif item["type"] == "custom_tool_call":
            calls.append({"name": item["name"], "arguments": {"input": item["input"]}, "id": item["call_id"]})
        elif item["type"] == "message":
            text = item["content"][0]["text"] + (" [1]" if searches else "")
    if searches:
        first = {**reply, "tool_calls": [{"name": "web_search", "arguments": {"query": s["action"]["query"]}}
                                         for s in searches]}
        return [first, {"content": text}], text
    if calls:
        reply["tool_calls"] = calls
    if text is not None:
        reply["content"] = text
    return [reply], text


def _collapsed(types: list[str]) -> list[str]:
    return [t for t, _ in groupby(types)]


def _headers(recorded: list) -> dict:
    skip = {"host", "content-length", "authorization", "accept-encoding", "connection"}
    return {k: v for k, v in recorded if k.lower() not in skip}


@pytest.mark.parametrize("path", CODEX, ids=lambda p: p.name[:60])
def test_codex_request_replayed_through_the_gateway(gateway, fake_model, search, path: Path) -> None:
    rec = json.loads(path.read_text())
    body = rec["request"]["body"]
    recorded = [{**e["data"], "type": e["event"]} for e in rec["response"]["sse"]]
    expected = recorded[-1]["response"]["output"]
    gw = gateway(ws_config(fake_model.url, search))
    script, text = script_for(expected)
    fake_model.script(*script)
    events = post_sse(gw, copy.deepcopy(body), _headers(rec["request"]["headers"]))
    final = check_events(events)

    # event by event the same sequence as the provider's (runs of deltas folded)
    assert _collapsed([e["type"] for e in events]) == _collapsed([e["type"] for e in recorded])
    assert [i["type"] for i in final["output"]] == [i["type"] for i in expected]
    for got, want in zip(final["output"], expected, strict=True):
        if want["type"] in ("function_call", "custom_tool_call"):
            assert {k: got[k] for k in ("call_id", "name", "status")} == {k: want[k] for k in ("call_id", "name",
                                                                                            "status")}
            assert got.get("arguments") == want.get("arguments") and got.get("input") == want.get("input")
        elif want["type"] == "message":
            assert got["content"][0]["text"] == text
            assert len(got["content"][0]["annotations"]) == len(want["content"][0]["annotations"])
        elif want["type"] == "web_search_call":
            assert got["action"]["query"] == want["action"]["query"] and got["action"]["sources"]
        elif want["type"] == "reasoning":
            assert got["summary"] == want["summary"]
    assert final["status"] == "completed" and final["store"] is False

    # what the model saw: one system prompt, the client's tools plus the gateway's web_search
    sent = fake_model.requests[0]
    assert sent["messages"][0]["role"] == "system" and sent["messages"][0]["content"].startswith("You are")
    assert [m["role"] for m in sent["messages"]].count("system") == 1
    names = [t["function"]["name"] for t in sent["tools"]]
    assert "exec_command" in names or "exec" in names
    assert ("web_search" in names) == any(t.get("type") == "web_search" for t in body.get("tools", []))
    # nothing was stored: Codex sends store=false
    with gw.client() as c:
        assert c.get(f"/v1/responses/{final['id']}").status_code == 404


# --- store, previous_response_id, GET and DELETE ---------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_previous_response_chain_get_and_delete(gateway, fake_model, search, stream) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    client = sdk(gw)
    fake_model.script({"content": "Nice to meet you, Bob."}, {"content": "Your name is Bob."})
    if stream:
        with client.responses.stream(model="default", input="My name is Bob.", instructions="old rules") as s:
            first = s.get_final_response()
    else:
        first = client.responses.create(model="default", input="My name is Bob.", instructions="old rules")
    # stored before the client saw the end: the next request can continue at once
    second = client.responses.create(model="default", input="What is my name?", previous_response_id=first.id,
                                     instructions="new rules")
    assert second.output_text == "Your name is Bob." and second.previous_response_id == first.id
    assert fake_model.requests[-1]["messages"] == [
        {"role": "system", "content": "new rules"},
        {"role": "user", "content": "My name is Bob."},
        {"role": "assistant", "content": "Nice to meet you, Bob."},
        {"role": "user", "content": "What is my name?"},
    ]
    got = client.responses.retrieve(first.id)
    assert got.id == first.id and got.output_text == "Nice to meet you, Bob." and got.store is True
    client.responses.delete(first.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(first.id)
    with gw.client() as c:
        assert c.delete(f"/v1/responses/{first.id}").status_code == 404
    # the second response is still there and continues a three-turn chain
    fake_model.script({"content": "Still Bob."})
    client.responses.create(model="default", input="Again?", previous_response_id=second.id)
    assert [m["role"] for m in fake_model.requests[-1]["messages"]] == ["user", "assistant", "user",
                                                                       "assistant", "user"]


def test_chain_through_tool_calls_and_searches(gateway, fake_model, search) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    client = sdk(gw)
    fake_model.script(
        {"tool_calls": [{"name": "web_search", "arguments": {"query": "rust"}}]},
        {"content": "Rust 1.91 [1].", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"},
                                                      "id": "call_o"}]},
        {"content": "Done."},
    )
    first = client.responses.create(model="default", input="rust and weather", tools=[WEATHER, {"type": "web_search"}])
    assert [o.type for o in first.output] == ["web_search_call", "message", "function_call"]
    stored = client.responses.retrieve(first.id)
    assert [o.type for o in stored.output] == ["web_search_call", "message", "function_call"]
    client.responses.create(model="default", previous_response_id=first.id, tools=[WEATHER, {"type": "web_search"}],
                            input=[{"type": "function_call_output", "call_id": "call_o", "output": "-3C"}])
    sent = fake_model.requests[-1]["messages"]
    assert sent[-2]["role"] == "assistant" and sent[-2]["tool_calls"][0]["id"] == "call_o"
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_o", "content": "-3C"}


def test_unknown_previous_response_is_404(gateway, fake_model, search) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    with gw.client() as c:
        r = c.post("/v1/responses", json={"model": "default", "input": "x", "previous_response_id": "resp_nope"})
        assert r.status_code == 404
        assert r.json() == {"error": {"message": "Previous response with id 'resp_nope' not found.",
                                      "type": "invalid_request_error", "param": "previous_response_id",
                                      "code": "previous_response_not_found"}}
        r = c.get("/v1/responses/resp_nope")
        assert r.status_code == 404 and set(r.json()["error"]) == {"message", "type", "param", "code"}
    with pytest.raises(openai.NotFoundError):
        sdk(gw).responses.create(model="default", input="x", previous_response_id="resp_nope")
    assert fake_model.requests == []


def test_store_false_keeps_nothing(gateway, fake_model, search) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    r = sdk(gw).responses.create(model="default", input="x", store=False)
    with pytest.raises(openai.NotFoundError):
        sdk(gw).responses.retrieve(r.id)


# --- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("body, param", [
    ({"model": "default", "input": [{"type": "message", "content": "no role"}]}, "input[0].role"),
    ({"model": "default", "input": [{"role": "user", "content": "x"},
                                    {"type": "function_call_output", "output": "y"}]}, "input[1].call_id"),
    ({"model": "default", "input": {"not": "a list"}}, "input"),
    ({"model": "default", "input": [{"type": "made_up_item"}]}, "input[0].type"),
    ({"model": "default", "input": "x", "tools": [{"type": "function"}]}, "tools[0].name"),
    ({"input": "x"}, "model"),
])
def test_malformed_requests_are_400(gateway, fake_model, search, body, param) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    with gw.client() as c:
        r = c.post("/v1/responses", json=body)
    assert r.status_code == 400 and r.headers["x-should-retry"] == "false"
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and err["param"] == param and err["message"]
    assert fake_model.requests == []


def test_malformed_request_through_the_sdk(gateway, fake_model, search) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    with pytest.raises(openai.BadRequestError) as info:
        sdk(gw).responses.create(model="default", input=[{"type": "function_call", "name": "f", "arguments": "{}"}])
    assert info.value.body["param"] == "input[0].call_id"


def test_upstream_failure_before_the_stream_is_an_http_error(gateway, fake_model, search) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    fake_model.script({"status": 500})
    with gw.client() as c:
        r = c.post("/v1/responses", json={"model": "default", "input": "x", "stream": True})
    assert r.status_code == 502 and r.json()["error"]["type"] == "server_error"


def test_upstream_breaking_mid_stream_fails_the_response(gateway, fake_model, search) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    fake_model.script({"content": "one two three four five", "cut_after": 3})
    events = post_sse(gw, {"model": "default", "input": "x", "stream": True})
    final = check_events(events)
    assert events[-1]["type"] == "response.failed" and final["error"]["code"] == "server_error"
    assert final["output"][0]["status"] == "incomplete"
    with gw.client() as c:  # a failed response is not stored
        assert c.get(f"/v1/responses/{final['id']}").status_code == 404


def test_sdk_stream_reports_a_failed_response(gateway, fake_model, search) -> None:
    gw = gateway(ws_config(fake_model.url, search))
    fake_model.script({"content": "one two three four five", "cut_after": 3})
    with sdk(gw).responses.stream(model="default", input="x") as s:
        kinds = [e.type for e in s]
    assert kinds[-1] == "response.failed"


# --- commercial OpenAI targets: untouched ----------------------------------------------------------


class FakeOpenAI:
    """Just enough of OpenAI's Responses endpoint to check what the gateway forwards."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.status = 200
        self.server = ServerThread(Starlette(routes=[Route("/v1/responses", self.create, methods=["POST"])])).start()

    async def create(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append({"body": body, "headers": dict(request.headers)})
        if self.status != 200:
            return JSONResponse({"error": {"message": "native no", "type": "invalid_request_error", "param": "input",
                                           "code": None}}, status_code=self.status)
        resp = {"id": "resp_native", "object": "response", "created_at": 1, "status": "completed", "model": body["model"],
                "output": [{"type": "message", "id": "msg_n", "status": "completed", "role": "assistant",
                            "content": [{"type": "output_text", "text": "native answer", "annotations": []}]}],
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "metadata": {}, "error": None,
                "incomplete_details": None, "instructions": None,
                "usage": {"input_tokens": 3, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 2,
                          "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 5}}
        if not body.get("stream"):
            return JSONResponse(resp)

        async def events():
            start = {**resp, "status": "in_progress", "output": [], "usage": None}
            for n, data in enumerate([{"type": "response.created", "response": start},
                                      {"type": "response.in_progress", "response": start},
                                      {"type": "response.completed", "response": resp}]):
                yield f"event: {data['type']}\ndata: {json.dumps({**data, 'sequence_number': n})}\n\n".encode()

        return StreamingResponse(events(), media_type="text/event-stream")


@pytest.fixture(scope="module")
def native() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    yield fake
    fake.server.stop()


def test_openai_target_passthrough(gateway, fake_model, search, native) -> None:
    native.requests.clear()
    native.status = 200
    cfg = ws_config(fake_model.url, search)
    cfg["providers"]["oa"] = {"type": "openai", "baseURL": native.server.url + "/v1", "apiKey": "sk-provider"}
    cfg["virtualrouter"]["routing"]["cloud"] = [{"id": "c", "priority": 100, "targets": ["oa.gpt-5.5"]}]
    gw = gateway(cfg)
    client = sdk(gw)
    body = {"model": "cloud", "input": [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
                                        {"role": "user", "content": "hi"}],
            "tools": [{"type": "web_search", "external_web_access": True}], "store": True, "include": ["x"]}
    r = client.responses.create(**body)
    assert r.output_text == "native answer" and r.id == "resp_native"
    sent = native.requests[0]
    assert sent["headers"]["authorization"] == "Bearer sk-provider"  # the provider's key, never the client's
    assert sent["body"] == {**body, "model": "gpt-5.5"}  # untouched but for the model name
    with client.responses.stream(model="oa.gpt-5.5", input="hi") as s:
        assert s.get_final_response().output_text == "native answer"
    assert native.requests[1]["body"]["stream"] is True and native.requests[1]["body"]["model"] == "gpt-5.5"
    native.status = 400  # OpenAI's own error body comes back as it is
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="cloud", input="x")
    assert info.value.body["message"] == "native no"
    assert fake_model.requests == []  # nothing went to the self-hosted model
