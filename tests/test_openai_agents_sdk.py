"""The OpenAI Agents SDK (`openai-agents`, in the test extras) as a real client of /v1/responses: an
Agent with the SDK's hosted WebSearchTool on an OpenAIResponsesModel whose AsyncOpenAI points at the
gateway, run with Runner.run and with Runner.run_streamed, then followed up with previous_response_id
and with the input list (result.to_input_list() plus a new user message), in front of the fake model
and the fake SearXNG on loopback. Tracing is off, so the SDK reaches nothing but the gateway."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest
from agents import (
    Agent,
    OpenAIResponsesModel,
    RawResponsesStreamEvent,
    RunItemStreamEvent,
    Runner,
    ToolCallItem,
    WebSearchTool,
    set_tracing_disabled,
)

from .helpers import base_config, searxng_engine

set_tracing_disabled(True)  # no trace export to the internet

QUESTION = "What is the latest Rust release?"
ANSWER = "Rust 1.91.0 is the latest stable release [1]."
FOLLOW_UP = "And the one before?"
SECOND = "Rust 1.90.0 came before it."
POST_URL = "https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/"  # the fake engine's first hit
LIMIT = 30  # seconds any one run may take


class Client:
    """An Agent on the gateway, with the bodies of the requests the SDK sent to /v1/responses."""

    def __init__(self, gw) -> None:
        self.sent: list[dict] = []

        async def record(request) -> None:
            if request.url.path.endswith("/responses"):
                self.sent.append(json.loads(request.content))

        http = openai.DefaultAsyncHttpxClient(event_hooks={"request": [record]})
        self.openai = openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0, http_client=http)
        self.agent = Agent(name="researcher", instructions="Answer briefly.", tools=[WebSearchTool()],
                           model=OpenAIResponsesModel(model="default", openai_client=self.openai))

    def drive(self, turns):
        """Run the coroutine `turns`, then close the SDK's HTTP client."""
        async def main():
            try:
                return await turns
            finally:
                await self.openai.close()

        return asyncio.run(main())

    async def run(self, input, **kw):
        return await asyncio.wait_for(Runner.run(self.agent, input, **kw), LIMIT)

    async def run_streamed(self, input, **kw) -> tuple:
        """(the finished streamed result, its events)"""
        result = Runner.run_streamed(self.agent, input, **kw)
        events: list = []

        async def drain() -> None:
            async for event in result.stream_events():
                events.append(event)

        await asyncio.wait_for(drain(), LIMIT)
        return result, events


def gateway_with_search(gateway, fake_model, search_fakes):
    return gateway(base_config(fake_model.url, webSearch={"engines": [searxng_engine(search_fakes)],
                                                          "cacheTtlMs": 0}))


def script_search_then_answer(fake_model, *more: dict) -> None:
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "latest rust release"}}]},
                      {"content": ANSWER, "chunk_delay": 0.01}, *more)


def assert_searched(fake_model, search_fakes) -> None:
    """The gateway ran one search on the engine and gave its results to the backend model."""
    assert [c.params["q"] for c in search_fakes.calls("searxng")] == ["latest rust release"]
    first, second = fake_model.requests[:2]
    assert "web_search" in [t["function"]["name"] for t in first["tools"]]
    assert first["messages"] == [{"role": "system", "content": "Answer briefly."},
                                 {"role": "user", "content": QUESTION}]
    result = second["messages"][-1]
    assert result["role"] == "tool" and result["tool_call_id"] == second["messages"][-2]["tool_calls"][0]["id"]
    hits = json.loads(result["content"])["results"]
    assert hits[0]["url"] == POST_URL and hits[0]["title"] == "Announcing Rust 1.91.0 | Rust Blog"


def assert_search_item(items) -> None:
    """The run's items: the hosted web search call, then the answer."""
    calls = [i for i in items if isinstance(i, ToolCallItem)]
    assert len(calls) == 1 and calls[0].raw_item.type == "web_search_call", items
    ws = calls[0].raw_item
    assert ws.status == "completed" and ws.id.startswith("ws_")
    assert ws.action.query == "latest rust release" and ws.action.sources[0].url == POST_URL
    assert [i.type for i in items] == ["tool_call_item", "message_output_item"]


def assert_follow_up_saw(fake_model, n: int) -> None:
    """The backend's n-th request (the follow-up) holds the first turn's answer before the new question."""
    assert len(fake_model.requests) == n + 1
    assert fake_model.requests[n]["messages"] == [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": ANSWER},
        {"role": "user", "content": FOLLOW_UP},
    ]


@pytest.mark.timeout(60)
def test_run_searches_and_answers(gateway, fake_model, search_fakes) -> None:
    gw = gateway_with_search(gateway, fake_model, search_fakes)
    script_search_then_answer(fake_model)
    client = Client(gw)
    result = client.drive(client.run(QUESTION))
    assert result.final_output == ANSWER
    assert_search_item(result.new_items)
    assert_searched(fake_model, search_fakes)
    (sent,) = client.sent
    assert sent["tools"][0]["type"] == "web_search" and sent["input"] == [{"role": "user", "content": QUESTION}]
    (response,) = result.raw_responses
    assert result.last_response_id == response.response_id and response.response_id.startswith("resp_")
    text = result.new_items[1].raw_item.content[0]
    assert text.annotations[0].type == "url_citation" and text.annotations[0].url == POST_URL


@pytest.mark.timeout(60)
def test_run_streamed_yields_the_search_and_the_text(gateway, fake_model, search_fakes) -> None:
    gw = gateway_with_search(gateway, fake_model, search_fakes)
    script_search_then_answer(fake_model)
    client = Client(gw)
    result, events = client.drive(client.run_streamed(QUESTION))
    assert result.is_complete and result.final_output == ANSWER
    raw = [e.data for e in events if isinstance(e, RawResponsesStreamEvent)]
    kinds = [d.type for d in raw]
    deltas = [d.delta for d in raw if d.type == "response.output_text.delta"]
    assert len(deltas) > 1 and "".join(deltas) == ANSWER  # the answer arrives in pieces
    assert kinds.index("response.web_search_call.searching") < kinds.index("response.web_search_call.completed") \
        < kinds.index("response.output_text.delta")
    assert kinds[-1] == "response.completed"
    assert [e.name for e in events if isinstance(e, RunItemStreamEvent)] == ["tool_called", "message_output_created"]
    assert_search_item(result.new_items)
    assert_searched(fake_model, search_fakes)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("streamed", [False, True], ids=["run", "streamed"])
def test_follow_up_with_previous_response_id(gateway, fake_model, search_fakes, streamed) -> None:
    gw = gateway_with_search(gateway, fake_model, search_fakes)
    script_search_then_answer(fake_model, {"content": SECOND, "chunk_delay": 0.01})
    client = Client(gw)

    async def turns():
        first = await client.run(QUESTION)
        kw = {"previous_response_id": first.last_response_id}
        second = (await client.run_streamed(FOLLOW_UP, **kw))[0] if streamed else await client.run(FOLLOW_UP, **kw)
        return first, second

    first, second = client.drive(turns())
    assert first.final_output == ANSWER and second.final_output == SECOND
    assert_search_item(first.new_items)
    assert [i.type for i in second.new_items] == ["message_output_item"]
    sent = client.sent[-1]
    assert sent["previous_response_id"] == first.last_response_id
    assert sent["input"] == [{"role": "user", "content": FOLLOW_UP}]  # the SDK sent only the new message
    assert_follow_up_saw(fake_model, 2)
    assert len(search_fakes.calls("searxng")) == 1  # the follow-up did not search again


@pytest.mark.timeout(60)
@pytest.mark.parametrize("streamed", [False, True], ids=["run", "streamed"])
def test_follow_up_with_the_input_list(gateway, fake_model, search_fakes, streamed) -> None:
    gw = gateway_with_search(gateway, fake_model, search_fakes)
    script_search_then_answer(fake_model, {"content": SECOND, "chunk_delay": 0.01})
    client = Client(gw)

    async def turns():
        first = (await client.run_streamed(QUESTION))[0] if streamed else await client.run(QUESTION)
        history = first.to_input_list() + [{"role": "user", "content": FOLLOW_UP}]
        return first, history, await client.run(history)

    first, history, second = client.drive(turns())
    assert first.final_output == ANSWER and second.final_output == SECOND
    # the input list replays the web search call and the answer by value
    assert [i.get("type", "message") for i in history] == ["message", "web_search_call", "message", "message"]
    sent = client.sent[-1]
    assert "previous_response_id" not in sent and sent["input"] == json.loads(json.dumps(history))
    assert sent["input"][1]["action"]["query"] == "latest rust release"
    assert_follow_up_saw(fake_model, 2)
    assert len(search_fakes.calls("searxng")) == 1
