"""`item_reference` input items on /v1/responses: a stored response's output items (messages, hosted
web searches, reasoning, function and custom tool calls) are kept by id beside it and a later request
may name them instead of sending them (the Vercel AI SDK does so by default). Driven over HTTP with
the official openai SDK, in front of the fake model and the fake search providers on loopback; the
replica test shares one real redis-server between two gateways."""

from __future__ import annotations

import json
import time
import uuid

import openai
import pytest
import redis

from .fakes.search_providers import KEYS
from .helpers import base_config

WEATHER = {"type": "function", "name": "get_weather", "description": "Weather for a city.", "strict": False,
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
PATCH = {"type": "custom", "name": "apply_patch", "description": "Edit files."}
SEARCH_REPLIES = (
    {"tool_calls": [{"name": "web_search", "arguments": {"query": "latest rust release"}}]},
    {"content": "Rust 1.91.0 is the latest stable release [1]."},
)


def config(model_url: str, search_fakes, **extra) -> dict:
    """base_config plus one Serper engine on the fake providers (as tests/test_responses_gateway.py)."""
    engine = {"id": "google", "type": "serper", "apiKey": KEYS["serper"],
              "baseURL": search_fakes.base_url(search_fakes.server, "serper")}
    return base_config(model_url, webSearch={"engines": [engine], "cacheTtlMs": 0}, **extra)


def sdk(gw) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)


def first_turn(client: openai.OpenAI, stream: bool, **kw):
    if stream:
        with client.responses.stream(model="default", **kw) as s:
            return s.get_final_response()
    return client.responses.create(model="default", **kw)


def by_value(response) -> list[dict]:
    return [o.model_dump(exclude_none=True) for o in response.output]


def by_reference(response) -> list[dict]:
    return [{"type": "item_reference", "id": o.id} for o in response.output]


def upstream_messages(fake_model, client: openai.OpenAI, input: list, **kw) -> list[dict]:
    """What the backend receives for a second turn with this input (its reply is 'ok')."""
    fake_model.script({"content": "ok"})
    r = client.responses.create(model="default", input=input, **kw)
    assert r.status == "completed" and r.output_text == "ok"
    return fake_model.requests[-1]["messages"]


def error_of(gw, body: dict, status: int = 400) -> dict:
    with gw.client() as c:
        r = c.post("/v1/responses", json=body)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    return err


# --- each item type the gateway emits resolves ---------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_plain_chat_turn_then_references(gateway, fake_model, search_fakes, stream) -> None:
    gw = gateway(config(fake_model.url, search_fakes))
    client = sdk(gw)
    fake_model.script({"content": "Nice to meet you, Bob.", "reasoning": "the user greets"})
    question = {"role": "user", "content": "My name is Bob."}
    first = first_turn(client, stream, input=[question])
    assert [o.type for o in first.output] == ["reasoning", "message"]
    assert first.output[0].id.startswith("rs_") and first.output[1].id.startswith("msg_")

    follow_up = {"role": "user", "content": "What is my name?"}
    fake_model.script({"content": "Your name is Bob."})
    second = client.responses.create(model="default", input=[question, *by_reference(first), follow_up])
    assert second.status == "completed" and second.output_text == "Your name is Bob."
    sent = fake_model.requests[-1]["messages"]
    assert sent == [
        {"role": "user", "content": "My name is Bob."},
        {"role": "assistant", "content": "Nice to meet you, Bob."},  # the reasoning item is dropped, as by value
        {"role": "user", "content": "What is my name?"},
    ]
    assert upstream_messages(fake_model, client, [question, *by_value(first), follow_up], store=False) == sent

    # the second turn was stored too: its items resolve on a third turn, beside the first's
    third = upstream_messages(fake_model, client, [question, *by_reference(first), follow_up,
                                                   *by_reference(second), {"role": "user", "content": "Sure?"}])
    assert third[-2:] == [{"role": "assistant", "content": "Your name is Bob."}, {"role": "user", "content": "Sure?"}]


@pytest.mark.parametrize("stream", [False, True])
def test_hosted_web_search_turn_then_references(gateway, fake_model, search_fakes, stream) -> None:
    gw = gateway(config(fake_model.url, search_fakes))
    client = sdk(gw)
    fake_model.script(*SEARCH_REPLIES)
    question = {"role": "user", "content": "What is the latest Rust release?"}
    tools = [{"type": "web_search"}]
    first = first_turn(client, stream, input=[question], tools=tools)
    ws, msg = first.output
    assert ws.type == "web_search_call" and ws.id.startswith("ws_") and ws.action.sources
    assert msg.type == "message" and msg.content[0].annotations
    assert len(search_fakes.calls("serper")) == 1

    follow_up = {"role": "user", "content": "And the one before?"}
    sent = upstream_messages(fake_model, client, [question, *by_reference(first), follow_up], tools=tools)
    # exactly what the same items sent by value give: the search call is dropped there too, the
    # answer that cites its results comes through
    assert sent == upstream_messages(fake_model, client, [question, *by_value(first), follow_up], tools=tools,
                                     store=False)
    assert sent == [
        {"role": "user", "content": "What is the latest Rust release?"},
        {"role": "assistant", "content": "Rust 1.91.0 is the latest stable release [1]."},
        {"role": "user", "content": "And the one before?"},
    ]
    assert len(search_fakes.calls("serper")) == 1  # a referenced search is not run again


@pytest.mark.parametrize("stream", [False, True])
def test_function_and_custom_tool_calls_by_reference(gateway, fake_model, search_fakes, stream) -> None:
    gw = gateway(config(fake_model.url, search_fakes))
    client = sdk(gw)
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    fake_model.script({"content": "Checking.", "tool_calls": [
        {"name": "get_weather", "arguments": {"city": "Paris"}, "id": "call_w"},
        {"name": "apply_patch", "arguments": {"input": patch}, "id": "call_p"}]})
    question = {"role": "user", "content": "weather in Paris, and add a.txt"}
    tools = [WEATHER, PATCH]
    first = first_turn(client, stream, input=[question], tools=tools)
    assert [o.type for o in first.output] == ["message", "function_call", "custom_tool_call"]
    assert first.output[1].id.startswith("fc_") and first.output[2].id.startswith("ctc_")

    results = [{"type": "function_call_output", "call_id": "call_w", "output": "18C"},
               {"type": "custom_tool_call_output", "call_id": "call_p", "output": "done"}]
    sent = upstream_messages(fake_model, client, [question, *by_reference(first), *results], tools=tools)
    assert sent == upstream_messages(fake_model, client, [question, *by_value(first), *results], tools=tools,
                                     store=False)
    assert sent[1] == {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": "call_w", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"id": "call_p", "type": "function", "function": {"name": "apply_patch",
                                                          "arguments": json.dumps({"input": patch})}}]}
    assert sent[2:] == [{"role": "tool", "tool_call_id": "call_w", "content": "18C"},
                        {"role": "tool", "tool_call_id": "call_p", "content": "done"}]


def test_reference_without_type_and_beside_previous_response_id(gateway, fake_model, search_fakes) -> None:
    """The API's ItemReference may leave `type` out; references resolve with previous_response_id too."""
    gw = gateway(config(fake_model.url, search_fakes))
    client = sdk(gw)
    fake_model.script({"content": "Nice to meet you, Bob."}, {"content": "Oslo is lovely."})
    bob = client.responses.create(model="default", input="My name is Bob.")
    oslo = client.responses.create(model="default", input="I live in Oslo.")
    sent = upstream_messages(fake_model, client, previous_response_id=oslo.id, input=[
        {"role": "user", "content": "My name is Bob."}, {"id": bob.output[0].id},
        {"role": "user", "content": "Who am I and where do I live?"}])
    assert sent == [
        {"role": "user", "content": "I live in Oslo."},
        {"role": "assistant", "content": "Oslo is lovely."},
        {"role": "user", "content": "My name is Bob."},
        {"role": "assistant", "content": "Nice to meet you, Bob."},
        {"role": "user", "content": "Who am I and where do I live?"},
    ]


# --- references that do not resolve --------------------------------------------------------------------


def test_unknown_reference_is_400_naming_it(gateway, fake_model, search_fakes) -> None:
    gw = gateway(config(fake_model.url, search_fakes))
    client = sdk(gw)
    fake_model.script({"content": "Nice to meet you, Bob."})
    first = client.responses.create(model="default", input="My name is Bob.")
    fake_model.script()
    body = {"model": "default", "input": [
        {"role": "user", "content": "My name is Bob."}, *by_reference(first),
        {"role": "user", "content": "and?"}, {"type": "item_reference", "id": "msg_nope"}]}
    err = error_of(gw, body)
    assert err["type"] == "invalid_request_error" and err["param"] == "input[3]"
    assert "'msg_nope'" in err["message"] and "not found" in err["message"]
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="default", input=body["input"], stream=True)
    assert info.value.body["param"] == "input[3]" and "msg_nope" in info.value.body["message"]
    err = error_of(gw, {"model": "default", "input": [{"role": "user", "content": "x"}, {"type": "item_reference"}]})
    assert err["param"] == "input[1].id"
    assert fake_model.requests == []  # nothing reached the backend
    with gw.client() as c:  # an item is no response
        assert c.get(f"/v1/responses/item:{first.output[0].id}").status_code == 404


def test_expired_reference_is_400(gateway, fake_model, search_fakes) -> None:
    gw = gateway(config(fake_model.url, search_fakes, responses={"storeTtlMs": 1000}))
    client = sdk(gw)
    fake_model.script(*SEARCH_REPLIES)
    first = client.responses.create(model="default", input="latest rust?", tools=[{"type": "web_search"}])
    ws_id = first.output[0].id
    upstream_messages(fake_model, client, [*by_reference(first), {"role": "user", "content": "more?"}],
                      store=False)  # still there
    time.sleep(1.3)
    fake_model.script()
    err = error_of(gw, {"model": "default", "input": [
        {"role": "user", "content": "latest rust?"}, *by_reference(first), {"role": "user", "content": "more?"}]})
    assert err["param"] == "input[1]" and f"'{ws_id}'" in err["message"] and "1 s" in err["message"]
    assert fake_model.requests == []
    with pytest.raises(openai.NotFoundError):  # the response expired with its items
        client.responses.retrieve(first.id)


@pytest.mark.parametrize("how", ["store_false", "deleted"])
def test_items_of_unstored_or_deleted_responses_do_not_resolve(gateway, fake_model, search_fakes, how) -> None:
    gw = gateway(config(fake_model.url, search_fakes))
    client = sdk(gw)
    fake_model.script({"content": "hello"})
    first = client.responses.create(model="default", input="hi", store=how != "store_false")
    if how == "deleted":
        client.responses.delete(first.id)
    err = error_of(gw, {"model": "default", "input": [{"role": "user", "content": "hi"}, *by_reference(first)]})
    assert err["param"] == "input[1]" and first.output[0].id in err["message"]


# --- replicas sharing Redis ----------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_reference_stored_on_a_resolves_on_b(gateway, fake_model, search_fakes, redis_server, stream) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    cfg = config(fake_model.url, search_fakes, responses={"storeTtlMs": 300_000})
    cfg["state"] = {"backend": "redis", "url": redis_server.url, "keyPrefix": prefix, "timeoutMs": 250}
    a, b = gateway(cfg, name="a.json"), gateway(cfg, name="b.json")
    fake_model.script(*SEARCH_REPLIES)
    question = {"role": "user", "content": "What is the latest Rust release?"}
    tools = [{"type": "web_search"}]
    first = first_turn(sdk(a), stream, input=[question], tools=tools)
    assert [o.type for o in first.output] == ["web_search_call", "message"]
    follow_up = {"role": "user", "content": "And the one before?"}
    sent = upstream_messages(fake_model, sdk(b), [question, *by_reference(first), follow_up], tools=tools)
    assert sent[1] == {"role": "assistant", "content": "Rust 1.91.0 is the latest stable release [1]."}
    assert sent == upstream_messages(fake_model, sdk(b), [question, *by_value(first), follow_up], tools=tools,
                                     store=False)

    # in Redis the items carry the response's TTL; deleting the response on B forgets them on A too
    raw = redis.Redis.from_url(redis_server.url)
    try:
        ttls = {k.decode().removeprefix(prefix): raw.pttl(k) for k in raw.keys(prefix + "resp:*")}
    finally:
        raw.close()
    for o in first.output:
        assert 290_000 < ttls[f"resp:item:{o.id}"] <= 300_000, ttls
    assert 290_000 < ttls[f"resp:{first.id}"] <= 300_000
    sdk(b).responses.delete(first.id)
    err = error_of(a, {"model": "default", "input": [question, *by_reference(first), follow_up]})
    assert err["param"] == "input[1]"
