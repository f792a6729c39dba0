"""/v1/messages through the real gateway, driven by the official anthropic SDK, in front of the fake
model and fake search providers on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anthropic
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .fakes.search_providers import Reply
from .fakes.server import ServerThread
from .helpers import base_config, serper_engine

WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
HI = [{"role": "user", "content": "hi"}]


def ws_config(model_url: str, search_fakes, *, aliases: dict | None = None, **web_search) -> dict:
    """base_config plus one Serper engine on the fake providers (no result cache, so every search is seen)."""
    engine = serper_engine(search_fakes, id="google")
    cfg = base_config(model_url, webSearch={"engines": [engine], "cacheTtlMs": 0, **web_search})
    if aliases:
        cfg["modelAliases"] = aliases
    return cfg


def sdk(gw, **kw) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.url, api_key=kw.pop("api_key", "k"), max_retries=0, **kw)


def types(message) -> list[str]:
    return [b.type for b in message.content]


# --- plain messages -----------------------------------------------------------------------------


def test_sdk_message_and_what_the_backend_receives(gateway, fake_model, search_fakes) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes))
    fake_model.script({"content": "hello there"})
    m = sdk(gw).messages.create(model="claude-sonnet-4-5", max_tokens=50, system="be brief", messages=HI,
                                stop_sequences=["END"], metadata={"user_id": "u1"}, extra_body={"temperature": 0.3})
    assert m.content[0].text == "hello there" and m.stop_reason == "end_turn"
    assert m.model == "claude-sonnet-4-5" and m.id.startswith("msg_")
    assert m.usage.input_tokens == 10 and m.usage.output_tokens == 5
    sent = fake_model.requests[0]
    assert sent["model"] == "m"
    assert sent["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert (sent["max_tokens"], sent["temperature"], sent["stop"]) == (50, 0.3, ["END"])
    assert "metadata" not in sent


def test_sdk_stream(gateway, fake_model, search_fakes) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes))
    fake_model.script({"content": "one two three", "reasoning": "thinking hard"})
    with sdk(gw).messages.stream(model="claude-opus-5-5", max_tokens=50, messages=HI,
                                 thinking={"type": "enabled", "budget_tokens": 2000}) as s:
        text = "".join(s.text_stream)
        m = s.get_final_message()
    assert text == "one two three"
    assert types(m) == ["thinking", "text"] and m.content[0].thinking == "thinking hard"
    assert m.stop_reason == "end_turn" and m.usage.output_tokens == 5
    assert fake_model.requests[0]["reasoning_effort"] == "low"


@pytest.mark.parametrize("stream", [False, True])
def test_client_tool_use(gateway, fake_model, search_fakes, stream) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes))
    fake_model.script({"content": "Checking.", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]})
    kw = dict(model="claude-sonnet-4-5", max_tokens=50, messages=[{"role": "user", "content": "weather in Paris?"}],
              tools=[{"name": "get_weather", "input_schema": {"type": "object",
                                                              "properties": {"city": {"type": "string"}}}}])
    m = final_message(gw, stream, **kw)
    assert types(m) == ["text", "tool_use"] and m.stop_reason == "tool_use"
    assert m.content[1].name == "get_weather" and m.content[1].input == {"city": "Paris"}
    # the tool result goes back with the same id
    fake_model.script({"content": "18°C"})
    m2 = sdk(gw).messages.create(model="claude-sonnet-4-5", max_tokens=50, tools=kw["tools"], messages=[
        *kw["messages"], {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in m.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": m.content[1].id, "content": "18°C"}]}])
    assert m2.content[0].text == "18°C"
    sent = fake_model.requests[-1]["messages"]
    assert sent[-1] == {"role": "tool", "tool_call_id": m.content[1].id, "content": "18°C"}


def test_model_aliases(gateway, fake_model, fake_model_b, search_fakes) -> None:
    cfg = ws_config(fake_model.url, search_fakes, aliases={"haiku": "small.qwen3-4b", "reasoning": "local.big"})
    cfg["providers"]["small"] = {"type": "ollama", "baseURL": fake_model_b.url}
    gw = gateway(cfg)
    fake_model_b.script({"content": "from the small model"})
    m = sdk(gw).messages.create(model="claude-haiku-4-5-20251001", max_tokens=50, messages=HI)
    assert m.content[0].text == "from the small model" and m.model == "claude-haiku-4-5-20251001"
    assert fake_model_b.requests[0]["model"] == "qwen3-4b"
    sdk(gw).messages.create(model="claude-opus-5-5", max_tokens=50, messages=HI, thinking={"type": "adaptive"})
    assert fake_model.requests[-1]["model"] == "big"


# --- the hosted web_search server tool ----------------------------------------------------------


def final_message(gw, stream: bool, **kw):
    """The SDK's Message for this request, streamed (and assembled by the SDK) or not."""
    if stream:
        with sdk(gw).messages.stream(**kw) as s:
            return s.get_final_message()
    return sdk(gw).messages.create(**kw)


def _search_script(fake_model, *queries: str, answer: str = "Rust 1.91.0 is out [1].") -> None:
    fake_model.script(*[{"tool_calls": [{"name": "web_search", "arguments": {"query": q}}]} for q in queries],
                      {"content": answer})


@pytest.mark.parametrize("stream", [False, True])
def test_server_tool_search_blocks_and_citations(gateway, fake_model, search_fakes, stream) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes))
    _search_script(fake_model, "rust release")
    kw = dict(model="claude-sonnet-4-5", max_tokens=200, messages=[{"role": "user", "content": "latest rust?"}],
              tools=[WEB_SEARCH])
    m = final_message(gw, stream, **kw)
    assert types(m)[:2] == ["server_tool_use", "web_search_tool_result"]
    use, result = m.content[0], m.content[1]
    assert use.id.startswith("srvtoolu_") and use.input == {"query": "rust release"} and use.name == "web_search"
    assert result.tool_use_id == use.id
    assert [r.url for r in result.content][:2] == ["https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/",
                                                   "https://doc.rust-lang.org/stable/releases.html"]
    assert all(r.title and r.encrypted_content for r in result.content)
    text_blocks = [b for b in m.content if b.type == "text"]
    assert "".join(b.text for b in text_blocks) == "Rust 1.91.0 is out [1]."
    cited = [c for b in text_blocks for c in (b.citations or [])]
    assert cited and cited[0].url == result.content[0].url and cited[0].type == "web_search_result_location"
    assert 0 < len(cited[0].cited_text) <= 150
    assert m.usage.server_tool_use.web_search_requests == 1 and m.stop_reason == "end_turn"
    # the backend never saw the server tool; it got the gateway's web_search function instead
    names = [t["function"]["name"] for t in fake_model.requests[0]["tools"]]
    assert names == ["web_search"]
    assert len(search_fakes.calls("serper")) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_server_tool_max_uses_exceeded(gateway, fake_model, search_fakes, stream) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes))
    _search_script(fake_model, "first query", "second query", answer="Done.")
    kw = dict(model="claude-sonnet-4-5", max_tokens=200, messages=[{"role": "user", "content": "research rust"}],
              tools=[{**WEB_SEARCH, "max_uses": 1}])
    m = final_message(gw, stream, **kw)
    assert types(m) == ["server_tool_use", "web_search_tool_result", "server_tool_use", "web_search_tool_result",
                        "text"]
    assert isinstance(m.content[1].content, list)
    assert m.content[3].content.error_code == "max_uses_exceeded"
    assert m.usage.server_tool_use.web_search_requests == 1
    assert len(search_fakes.calls("serper")) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_server_tool_provider_failure_is_an_error_block(gateway, fake_model, search_fakes, stream) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes))
    search_fakes.script("serper", Reply(status=500, body={"message": "internal"}))
    _search_script(fake_model, "rust release", answer="I could not search.")
    kw = dict(model="claude-sonnet-4-5", max_tokens=200, messages=[{"role": "user", "content": "latest rust?"}],
              tools=[WEB_SEARCH])
    m = final_message(gw, stream, **kw)
    assert types(m) == ["server_tool_use", "web_search_tool_result", "text"]
    assert m.content[1].content.type == "web_search_tool_result_error"
    assert m.content[1].content.error_code == "unavailable"
    assert m.content[2].text == "I could not search."


def test_replayed_search_history_reaches_the_backend(gateway, fake_model, search_fakes) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes))
    _search_script(fake_model, "rust release")
    client = sdk(gw)
    first = client.messages.create(model="claude-sonnet-4-5", max_tokens=200, tools=[WEB_SEARCH],
                                   messages=[{"role": "user", "content": "latest rust?"}])
    fake_model.script({"content": "You're welcome."})
    client.messages.create(model="claude-sonnet-4-5", max_tokens=200, tools=[WEB_SEARCH], messages=[
        {"role": "user", "content": "latest rust?"},
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": "thanks"}])
    sent = fake_model.requests[-1]["messages"]
    assert sent[1]["tool_calls"][0]["function"]["name"] == "web_search"
    assert sent[2]["role"] == "tool" and "The Rust team is happy to announce" in sent[2]["content"]
    assert sent[3]["role"] == "assistant" and "Rust 1.91.0" in sent[3]["content"]


# --- errors -------------------------------------------------------------------------------------


def test_bad_request_shape(gateway, fake_model, search_fakes) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes))
    with pytest.raises(anthropic.BadRequestError) as info:
        sdk(gw).messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=[{"role": "robot", "content": "x"}])
    assert info.value.status_code == 400
    assert info.value.body["type"] == "error"
    assert info.value.body["error"]["type"] == "invalid_request_error"
    assert info.value.body["error"]["message"].startswith("messages.0.role: ")
    assert info.value.request_id and info.value.response.headers["x-should-retry"] == "false"
    r = gw.client().post("/v1/messages", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    assert fake_model.requests == []


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("status", "exc", "etype"), [
    (500, anthropic.InternalServerError, "api_error"),
    (503, anthropic.OverloadedError, "overloaded_error"),
])
def test_backend_failure(gateway, fake_model, search_fakes, stream, status, exc, etype) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes))
    fake_model.script({"status": status})
    with pytest.raises(exc) as info:
        if stream:
            with sdk(gw).messages.stream(model="claude-sonnet-4-5", max_tokens=10, messages=HI) as s:
                s.get_final_message()
        else:
            sdk(gw).messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=HI)
    assert info.value.body["error"]["type"] == etype


def _vllm_400(message: str) -> dict:
    return {"status": 400, "body": {"object": "error", "type": "BadRequestError", "code": 400, "message": message}}


@pytest.mark.parametrize(("body", "expected"), [
    (_vllm_400("This model's maximum context length is 32768 tokens. However, your request has 40000 input "
               "tokens. Please reduce the length of the input messages."),
     "prompt is too long: 40000 tokens > 32768 maximum"),
    (_vllm_400("This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4200 in "
               "the messages, 800 in the completion). Please reduce the length of the messages or completion."),
     "prompt is too long: 4200 tokens > 4096 maximum"),
    ({"status": 400, "body": {"error": {"code": 400, "message": "the request exceeds the available context size, "
                                        "try increasing it", "type": "exceed_context_size_error",
                                        "n_prompt_tokens": 9000, "n_ctx": 8192}}},
     "prompt is too long: 9000 tokens > 8192 maximum"),
])
def test_context_overflow_in_anthropics_words(gateway, fake_model, search_fakes, body, expected) -> None:
    """Claude Code's auto-compaction recognises Anthropic's wording."""
    gw = gateway(ws_config(fake_model.url, search_fakes))
    fake_model.script(body)
    with pytest.raises(anthropic.BadRequestError) as info:
        sdk(gw).messages.create(model="claude-sonnet-4-5", max_tokens=1000, messages=HI)
    assert info.value.body["error"]["message"] == expected
    assert len(fake_model.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_max_tokens_too_large_retried_without_it(gateway, fake_model, search_fakes, stream) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes))
    fake_model.script(_vllm_400("'max_tokens' or 'max_completion_tokens' is too large: 128000. This model's maximum "
                                "context length is 32768 tokens and your request has 900 input tokens "
                                "(128000 > 32768 - 900)."), {"content": "fits now"})
    kw = dict(model="claude-opus-5-5", max_tokens=128000, messages=HI, timeout=30)
    m = final_message(gw, stream, **kw)
    assert m.content[0].text == "fits now"
    assert fake_model.requests[0]["max_tokens"] == 128000 and "max_tokens" not in fake_model.requests[1]


def test_request_too_large(gateway, fake_model, search_fakes) -> None:
    cfg = ws_config(fake_model.url, search_fakes)
    cfg["server"]["maxBodyBytes"] = 2048
    gw = gateway(cfg)
    with pytest.raises(anthropic.APIStatusError) as info:
        sdk(gw).messages.create(model="claude-sonnet-4-5", max_tokens=10,
                                messages=[{"role": "user", "content": "x" * 5000}])
    assert info.value.status_code == 413 and info.value.body["error"]["type"] == "request_too_large"


def test_mid_stream_failure_is_an_error_event(gateway, fake_model, search_fakes) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes))
    fake_model.script({"content": "a b c d e f", "cut_after": 3})
    with gw.client() as c, c.stream("POST", "/v1/messages", json={
            "model": "claude-sonnet-4-5", "max_tokens": 10, "messages": HI, "stream": True}) as r:
        assert r.status_code == 200
        events = [line[7:] for line in r.iter_lines() if line.startswith("event: ")]
    assert events[0] == "message_start" and events[-1] == "error" and "message_stop" not in events


def test_auth_accepts_x_api_key_and_bearer(gateway, fake_model, search_fakes) -> None:
    cfg = ws_config(fake_model.url, search_fakes)
    cfg["server"]["apiKeys"] = ["sk-gateway-key-123"]
    gw = gateway(cfg)
    with pytest.raises(anthropic.AuthenticationError) as info:
        sdk(gw, api_key="wrong").messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=HI)
    assert info.value.body["error"]["type"] == "authentication_error"
    assert sdk(gw, api_key="sk-gateway-key-123").messages.create(
        model="claude-sonnet-4-5", max_tokens=10, messages=HI).content[0].text == "ok"
    bearer = anthropic.Anthropic(base_url=gw.url, auth_token="sk-gateway-key-123", max_retries=0)
    assert bearer.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=HI).content[0].text == "ok"


def test_anthropic_prefix_and_beta_query(gateway, fake_model, search_fakes) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes))
    client = anthropic.Anthropic(base_url=gw.url + "/anthropic", api_key="k", max_retries=0,
                                 default_headers={"anthropic-beta": "claude-code-20250219,unknown-flag-2099-01-01"})
    assert client.messages.create(model="x", max_tokens=10, messages=HI).content[0].text == "ok"
    r = gw.client().post("/v1/messages?beta=true", json={"model": "x", "max_tokens": 10, "messages": HI})
    assert r.status_code == 200 and r.headers["request-id"] and r.json()["type"] == "message"


# --- count_tokens and models --------------------------------------------------------------------


def test_count_tokens_and_models(gateway, fake_model, search_fakes) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes, aliases={"exact": {"claude-haiku-4-5-20251001": "local.m"}}))
    client = sdk(gw)
    short = client.messages.count_tokens(model="claude-sonnet-4-5", messages=HI).input_tokens
    long = client.messages.count_tokens(model="claude-sonnet-4-5", system="x" * 4000, messages=HI).input_tokens
    assert 0 < short < long and 1000 <= long - short <= 1100
    with pytest.raises(anthropic.BadRequestError):
        client.messages.count_tokens(model="claude-sonnet-4-5", messages=[])
    models = client.models.list()
    ids = [m.id for m in models.data]
    assert "default" in ids and "claude-haiku-4-5-20251001" in ids
    assert all(m.type == "model" and m.display_name for m in models.data)
    r = gw.client().get("/anthropic/v1/models")
    assert r.json()["data"][0]["type"] == "model"
    # OpenAI clients (no anthropic-version header) still get OpenAI's list shape
    assert gw.client().get("/v1/models").json()["object"] == "list"
    assert fake_model.requests == []


# --- commercial Anthropic targets: passthrough --------------------------------------------------


class FakeAnthropic:
    """Just enough of Anthropic's API to check what the gateway forwards."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.status = 200
        self.server = ServerThread(Starlette(routes=[
            Route("/v1/messages", self.messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", self.count, methods=["POST"]),
        ])).start()

    async def _record(self, request: Request) -> dict:
        body = await request.json()
        self.requests.append({"path": request.url.path, "query": request.url.query, "body": body,
                              "headers": dict(request.headers)})
        return body

    async def messages(self, request: Request) -> Response:
        body = await self._record(request)
        if self.status != 200:
            return JSONResponse({"type": "error", "error": {"type": "invalid_request_error", "message": "native no"}},
                                status_code=self.status)
        message = {"id": "msg_native", "type": "message", "role": "assistant", "model": body["model"],
                   "content": [{"type": "text", "text": "native answer"}], "stop_reason": "end_turn",
                   "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 2}}
        if not body.get("stream"):
            return JSONResponse(message)

        async def events():
            start = {**message, "content": [], "stop_reason": None}
            for name, data in [
                ("message_start", {"type": "message_start", "message": start}),
                ("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": "native answer"}}),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                   "usage": {"output_tokens": 2}}),
                ("message_stop", {"type": "message_stop"}),
            ]:
                yield f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

        return StreamingResponse(events(), media_type="text/event-stream")

    async def count(self, request: Request) -> Response:
        await self._record(request)
        return JSONResponse({"input_tokens": 77})


@pytest.fixture(scope="module")
def native() -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic()
    yield fake
    fake.server.stop()


def test_anthropic_target_passthrough(gateway, fake_model, search_fakes, native) -> None:
    native.requests.clear()
    native.status = 200
    cfg = ws_config(fake_model.url, search_fakes, aliases={"opus": "claude.claude-opus-4-1"})
    cfg["providers"]["claude"] = {"type": "anthropic", "baseURL": native.server.url, "apiKey": "sk-ant-provider"}
    gw = gateway(cfg)
    client = sdk(gw, api_key="client-key", default_headers={"anthropic-beta": "web-search-2025-03-05"})
    tools = [WEB_SEARCH]
    m = client.messages.create(model="claude-opus-5-5", max_tokens=10, messages=HI, tools=tools)
    assert m.content[0].text == "native answer" and m.id == "msg_native"
    sent = native.requests[0]
    assert sent["headers"]["x-api-key"] == "sk-ant-provider"  # the provider's key, never the client's
    assert sent["headers"]["anthropic-beta"] == "web-search-2025-03-05"
    assert sent["body"] == {"model": "claude-opus-4-1", "max_tokens": 10, "messages": HI, "tools": tools}
    with client.messages.stream(model="claude-opus-5-5", max_tokens=10, messages=HI) as s:
        assert s.get_final_message().content[0].text == "native answer"
    assert native.requests[1]["body"]["stream"] is True
    r = gw.client().post("/v1/messages?beta=true", json={"model": "claude-opus-5-5", "max_tokens": 10,
                                                          "messages": HI})
    assert r.json()["id"] == "msg_native" and native.requests[-1]["query"] == "beta=true"
    assert client.messages.count_tokens(model="claude-opus-5-5", messages=HI).input_tokens == 77
    native.status = 400  # Anthropic's own error body comes back as it is
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.create(model="claude-opus-5-5", max_tokens=10, messages=HI)
    assert info.value.body["error"]["message"] == "native no"
    assert fake_model.requests == []  # nothing went to the self-hosted model


def test_async_sdk(gateway, fake_model, search_fakes) -> None:
    import asyncio

    gw = gateway(ws_config(fake_model.url, search_fakes))
    fake_model.default = {"content": "async ok"}

    async def run() -> tuple[str, str]:
        client = anthropic.AsyncAnthropic(base_url=gw.url, api_key="k", max_retries=0)
        m = await client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=HI)
        async with client.messages.stream(model="claude-sonnet-4-5", max_tokens=10, messages=HI) as s:
            final = await s.get_final_message()
        await client.close()
        return m.content[0].text, final.content[0].text

    assert asyncio.run(run()) == ("async ok", "async ok")
