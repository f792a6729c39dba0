"""Graceful shutdown (routes/app.py, Drain; docs/deployment.md, "Graceful shutdown"): the real
`searchhub serve` as a process in front of a slow streaming fake model, SIGTERM with a stream open on
each protocol, read by the official SDKs. /health says draining at once, new model requests get a
protocol-shaped 503 on connections already open (new connections are refused), and when the grace
ends each stream still open gets its protocol's error event before the connection closes, never a
dropped connection; the upstream streams are closed and the process exits within the grace."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from hub.protocols.responses import ResponsesStream, to_chat
from routes.common import EventStream

from .helpers import base_config
from .test_hardening import Serve, refused
from .test_responses_stream import check_events, parse_sse

GRACE_MS = 2000
WORDS = 400  # 20 s of stream at 50 ms a word: far longer than the grace
SHUTTING_DOWN = "the gateway is shutting down; retry the request"


def scripted(body: dict) -> dict:
    """Every request of this test: a stream that lasts, or (for "slow start") an answer that does
    not begin before the grace ends."""
    text = str(body["messages"][-1].get("content"))
    if "slow start" in text:
        return {"delay": 30, "content": "late"}
    return {"content": " ".join(f"w{i}" for i in range(WORDS)), "chunk_delay": 0.05}


@pytest.fixture
def gateway(tmp_path: Path, fake_model) -> Iterator[Callable[..., Serve]]:
    fake_model.default = scripted
    started: list[Serve] = []

    def start(grace_ms: int = GRACE_MS) -> Serve:
        s = Serve(tmp_path, base_config(fake_model.url, server={"shutdownGraceMs": grace_ms}))
        started.append(s)
        s.wait_ready()
        return s

    yield start
    for s in started:
        s.close()


class Client(threading.Thread):
    """One request read in a thread: what it received (`seen`), the exception it ended with
    (`error`), when it ended (`ended_at`), and `first`, set once content arrived."""

    def __init__(self, run: Callable[[Client], None]) -> None:
        super().__init__(daemon=True)
        self.run_request = run
        self.seen: list = []
        self.error: BaseException | None = None
        self.first = threading.Event()
        self.ended_at: float | None = None

    def run(self) -> None:
        try:
            self.run_request(self)
        except BaseException as e:  # noqa: BLE001 (the test looks at it)
            self.error = e
        self.ended_at = time.monotonic()
        self.first.set()


def chat_stream(url: str) -> Client:
    def run(c: Client) -> None:
        sdk = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0, timeout=30)
        for chunk in sdk.chat.completions.create(model="d", stream=True,
                                                 messages=[{"role": "user", "content": "count slowly"}]):
            c.seen.append(chunk)
            if chunk.choices and chunk.choices[0].delta.content:
                c.first.set()
    return Client(run)


def responses_stream(url: str) -> Client:
    def run(c: Client) -> None:
        sdk = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0, timeout=30)
        for event in sdk.responses.create(model="d", input="count slowly", stream=True):
            c.seen.append(event)
            if event.type == "response.output_text.delta":
                c.first.set()
    return Client(run)


def messages_stream(url: str) -> Client:
    def run(c: Client) -> None:
        sdk = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0, timeout=30)
        for event in sdk.messages.create(model="d", max_tokens=4000, stream=True,
                                         messages=[{"role": "user", "content": "count slowly"}]):
            c.seen.append(event)
            if event.type == "content_block_delta":
                c.first.set()
    return Client(run)


def chat_not_answered(url: str) -> Client:
    def run(c: Client) -> None:
        sdk = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0, timeout=30)
        c.seen.append(sdk.chat.completions.create(model="d", messages=[{"role": "user", "content": "slow start"}]))
    return Client(run)


def warm(url: str) -> httpx.Client:
    """A client whose keep-alive connection is open before the signal (as a load balancer's)."""
    client = httpx.Client(base_url=url, timeout=5)
    assert client.get("/health").status_code == 200
    return client


def test_sigterm_drains_then_ends_each_stream_with_its_error_event(gateway, fake_model) -> None:
    gw = gateway()
    streams = [chat_stream(gw.url), responses_stream(gw.url), messages_stream(gw.url)]
    for c in streams:
        c.start()
    for c in streams:
        assert c.first.wait(15), f"no content: {c.error!r}"
    waiting = chat_not_answered(gw.url)
    waiting.start()
    deadline = time.monotonic() + 5
    while len(fake_model.requests) < 4:  # the unanswered request reached the model
        assert time.monotonic() < deadline
        time.sleep(0.02)
    health, chat_conn, messages_conn = warm(gw.url), warm(gw.url), warm(gw.url)

    gw.proc.send_signal(signal.SIGTERM)
    signalled = time.monotonic()

    r = health.get("/health")  # at once, on a connection that was open
    assert r.status_code == 503, r.text
    assert r.json()["status"] == "draining"
    assert r.json()["draining"]["requestsInFlight"] == 4
    assert time.monotonic() - signalled < 1
    assert refused(gw.port)  # no new connection is accepted

    r = chat_conn.post("/v1/chat/completions", json={"model": "d", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 503
    assert r.headers["retry-after"] == "1" and r.headers["connection"] == "close"
    assert r.json()["error"]["code"] == "shutting_down" and r.json()["error"]["message"] == SHUTTING_DOWN
    r = messages_conn.post("/v1/messages", json={"model": "d", "max_tokens": 10,
                                                 "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 529
    assert r.json()["type"] == "error" and r.json()["error"]["type"] == "overloaded_error"
    assert r.headers["retry-after"] == "1"

    assert gw.proc.poll() is None, "exited with streams in flight"
    for c in [*streams, waiting]:
        c.join(GRACE_MS / 1000 + 5)
        assert not c.is_alive()
        assert c.ended_at is not None and c.ended_at - signalled > GRACE_MS / 1000 - 1  # ran on until then

    chat, responses, messages = streams
    # chat: the error chunk (the SDK raises it as an APIError), after content, not a dropped connection
    assert type(chat.error) is openai.APIError, repr(chat.error)
    assert chat.error.message == SHUTTING_DOWN and chat.error.body["code"] == "shutting_down"
    assert any(ch.choices and ch.choices[0].delta.content for ch in chat.seen)
    # responses: response.failed ends the stream
    assert responses.error is None, repr(responses.error)
    last = responses.seen[-1]
    assert last.type == "response.failed"
    assert last.response.status == "failed" and last.response.error.message == SHUTTING_DOWN
    assert [e.type for e in responses.seen].count("response.failed") == 1
    assert any(e.type == "response.output_text.delta" for e in responses.seen)
    # messages: the `error` event (the SDK raises it), after content
    assert isinstance(messages.error, anthropic.APIStatusError), repr(messages.error)
    assert messages.error.body["error"] == {"type": "overloaded_error", "message": SHUTTING_DOWN}
    assert any(e.type == "content_block_delta" for e in messages.seen)
    # the request that had not answered: the 503
    assert isinstance(waiting.error, openai.InternalServerError) and waiting.error.status_code == 503, \
        repr(waiting.error)
    assert waiting.error.body["code"] == "shutting_down"

    assert gw.proc.wait(5) in (0, -signal.SIGTERM)
    assert time.monotonic() - signalled < GRACE_MS / 1000 + 3
    deadline = time.monotonic() + 5
    while fake_model.cancelled < 4:  # the gateway closed every upstream request
        assert time.monotonic() < deadline, f"{fake_model.cancelled} upstream requests closed"
        time.sleep(0.05)
    log = gw.log()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log


def test_a_second_signal_ends_the_streams_at_once(gateway) -> None:
    gw = gateway(grace_ms=30_000)
    streams = [chat_stream(gw.url), responses_stream(gw.url), messages_stream(gw.url)]
    for c in streams:
        c.start()
    for c in streams:
        assert c.first.wait(15), f"no content: {c.error!r}"
    gw.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    assert gw.proc.poll() is None
    assert all(c.is_alive() for c in streams), [(c.error, c.seen[-1:]) for c in streams]  # draining: the streams run on
    gw.proc.send_signal(signal.SIGINT)
    signalled = time.monotonic()
    for c in streams:
        c.join(5)
        assert not c.is_alive()
    chat, responses, messages = streams
    assert type(chat.error) is openai.APIError and chat.error.message == SHUTTING_DOWN, repr(chat.error)
    assert responses.error is None and responses.seen[-1].type == "response.failed", repr(responses.error)
    assert isinstance(messages.error, anthropic.APIStatusError), repr(messages.error)
    assert messages.error.body["error"]["type"] == "overloaded_error"
    assert gw.proc.wait(5) in (0, -signal.SIGTERM, -signal.SIGINT)
    assert time.monotonic() - signalled < 3


def test_an_idle_gateway_exits_at_once(gateway) -> None:
    gw = gateway(grace_ms=30_000)
    gw.proc.send_signal(signal.SIGTERM)
    started = time.monotonic()
    assert gw.proc.wait(5) in (0, -signal.SIGTERM)
    assert time.monotonic() - started < 2


# --- EventStream.interrupt on the Responses encoder: the cases a process cannot time -------------


async def interrupted_body(stream: EventStream, when: asyncio.Event) -> bytes:
    """Serve `stream` to a recording client, interrupt it once `when` is set; the body it wrote."""
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    async def receive() -> dict:
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    task = asyncio.ensure_future(stream({"type": "http"}, receive, send))
    await asyncio.wait_for(when.wait(), 5)
    stream.interrupt(SHUTTING_DOWN)
    await asyncio.wait_for(task, 5)
    bodies = [m for m in sent if m["type"] == "http.response.body"]
    assert sent[0]["type"] == "http.response.start" and bodies[-1]["more_body"] is False
    return b"".join(m["body"] for m in bodies)


def chunk(delta: dict, finish: str | None = None) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_a_responses_stream_cut_while_it_waits_for_the_model_ends_failed() -> None:
    closed: list[bool] = []

    async def main() -> bytes:
        waiting = asyncio.Event()

        async def items():
            try:
                yield chunk({"role": "assistant", "content": "half an "})
                waiting.set()
                await asyncio.sleep(3600)
                yield chunk({"content": "answer"})
            finally:
                closed.append(True)

        encoder = ResponsesStream(to_chat({"model": "m", "input": "hi", "stream": True})[1])
        stream = EventStream(encoder.encode(items()), interrupted=encoder.interrupted)
        return await interrupted_body(stream, waiting)

    events = parse_sse(asyncio.run(main()))
    final = check_events(events)  # one terminal event, every item closed, sequence numbers in order
    assert events[-1]["type"] == "response.failed" and final["status"] == "failed"
    assert final["error"] == {"code": "server_error", "message": SHUTTING_DOWN}
    assert final["output"][0]["content"][0]["text"] == "half an " and final["output"][0]["status"] == "incomplete"
    assert closed == [True]  # the pipeline's stream (and with it the upstream request) was closed


def test_a_responses_stream_cut_while_its_response_is_stored_ends_failed() -> None:
    async def main() -> bytes:
        storing = asyncio.Event()

        async def items():
            yield chunk({"role": "assistant", "content": "the answer"})
            yield chunk({}, finish="stop")

        async def before_end(response: dict) -> None:  # a store write that does not return in time
            storing.set()
            await asyncio.sleep(3600)

        encoder = ResponsesStream(to_chat({"model": "m", "input": "hi", "stream": True})[1])
        stream = EventStream(encoder.encode(items(), before_end=before_end), interrupted=encoder.interrupted)
        return await interrupted_body(stream, storing)

    events = parse_sse(asyncio.run(main()))
    final = check_events(events)
    assert [e["type"] for e in events].count("response.completed") == 0
    assert events[-1]["type"] == "response.failed" and final["error"]["message"] == SHUTTING_DOWN
    assert final["output"][0]["content"][0]["text"] == "the answer"


def test_another_cancellation_is_not_taken_for_an_interrupt() -> None:
    """The server cancelling the task when the grace is over stays a cancellation."""
    async def main() -> None:
        waiting = asyncio.Event()

        async def items():
            yield b"data: {}\n\n"
            waiting.set()
            await asyncio.sleep(3600)

        sent: list[dict] = []

        async def send(message: dict) -> None:
            sent.append(message)

        async def receive() -> dict:
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        stream = EventStream(items(), interrupted=lambda message: b"data: tail\n\n")
        task = asyncio.ensure_future(stream({"type": "http"}, receive, send))
        await waiting.wait()
        stream.interrupt(SHUTTING_DOWN)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
        assert all(m.get("body") != b"data: tail\n\n" for m in sent)

    asyncio.run(main())
