"""Every answer names the model the client asked for (a route, `provider.model`), never the backend's
own name for itself (llama.cpp's server answers with its GGUF file's path): chat completions and
every chunk, the Responses `response.model` in the object and in every event that carries it,
Anthropic's `message.model`, relayed, through the tool loop and passed through to commercial
providers, on the real wire."""

from __future__ import annotations

import json

import anthropic
import msgspec
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hub.backends.normalize import ModelName

from .fakes.raw_http import framed
from .helpers import base_config, serper_engine

GGUF = "/models/some-file.gguf"
HI = [{"role": "user", "content": "hi"}]
SEARCHED = ({"tool_calls": [{"name": "web_search", "arguments": {"query": "rust release"}}]},
            {"content": "Rust 1.91 is out [1]."})


@pytest.fixture
def gw(gateway, fake_model, search_fakes):
    """The gateway in front of a backend that calls itself by its GGUF file, with a search engine."""
    fake_model.served_model = GGUF
    return gateway(base_config(fake_model.url, webSearch={"engines": [serper_engine(search_fakes)],
                                                          "cacheTtlMs": 0}))


def script(fake_model, searched: bool) -> dict:
    """The backend's answers; the request field that makes the turn search or not."""
    fake_model.script(*SEARCHED) if searched else fake_model.script({"content": "hello there"})
    return {"web_search": searched}


def check_searched(fake_model, search_fakes, searched: bool) -> None:
    assert len(fake_model.requests) == (2 if searched else 1)
    assert len(search_fakes.calls("serper")) == (1 if searched else 0)
    search_fakes.reset()


def sse_events(text: str) -> list[dict]:
    return [json.loads(line[6:]) for line in text.splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"]


@pytest.mark.parametrize("model", ["default", "local.m"])
@pytest.mark.parametrize("searched", [False, True])
def test_chat(gw, fake_model, search_fakes, model, searched) -> None:
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    extra = script(fake_model, searched)
    r = client.chat.completions.create(model=model, messages=HI, extra_body=extra)
    assert r.model == model and r.choices[0].message.content
    check_searched(fake_model, search_fakes, searched)
    extra = script(fake_model, searched)
    with gw.client() as c:
        resp = c.post("/v1/chat/completions", json={"model": model, "messages": HI, "stream": True,
                                                     "stream_options": {"include_usage": True}, **extra})
    chunks = sse_events(resp.text)
    assert len(chunks) >= 4 and chunks[-1]["usage"]
    assert {c["model"] for c in chunks} == {model}
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    check_searched(fake_model, search_fakes, searched)


@pytest.mark.parametrize("searched", [False, True])
def test_messages(gw, fake_model, search_fakes, searched) -> None:
    client = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)
    extra = script(fake_model, searched)
    m = client.messages.create(model="default", max_tokens=100, messages=HI, extra_body=extra)
    assert m.model == "default" and m.content[-1].text
    check_searched(fake_model, search_fakes, searched)
    extra = script(fake_model, searched)
    with gw.client() as c:
        resp = c.post("/v1/messages", json={"model": "default", "max_tokens": 100, "messages": HI, "stream": True,
                                            **extra})
    events = sse_events(resp.text)
    assert events[0]["type"] == "message_start" and events[0]["message"]["model"] == "default"
    assert events[-1]["type"] == "message_stop"
    assert GGUF not in resp.text
    check_searched(fake_model, search_fakes, searched)


@pytest.mark.parametrize("searched", [False, True])
def test_responses(gw, fake_model, search_fakes, searched) -> None:
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    extra = script(fake_model, searched)
    r = client.responses.create(model="default", input="hi", extra_body=extra)
    assert r.model == "default" and r.output_text
    check_searched(fake_model, search_fakes, searched)
    extra = script(fake_model, searched)
    events = list(client.responses.create(model="default", input="hi", stream=True, extra_body=extra))
    carrying = [e for e in events if getattr(e, "response", None) is not None]
    assert [e.type for e in carrying] == ["response.created", "response.in_progress", "response.completed"]
    assert {e.response.model for e in carrying} == {"default"}
    check_searched(fake_model, search_fakes, searched)


# --- on the wire: compact JSON, escapes, reads cut anywhere ---------------------------------------


UPSTREAM = 'C:\\models\\"q" é.gguf'  # a name JSON has to escape
TRICKY = 'says "model": "x" and \\"model\\":\\"y\\"'  # text that quotes a model member


def compact_chunk(delta: dict, finish: str | None = None) -> bytes:
    """A chunk as llama.cpp writes it: compact, choices first."""
    c = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "created": 0, "id": "chatcmpl-1",
         "model": UPSTREAM, "object": "chat.completion.chunk"}
    return b"data: " + msgspec.json.encode(c) + b"\n\n"


def cut(payload: bytes, every: int, *, ctype: str = "text/event-stream") -> list:
    """The answer written `every` bytes at a time (a member is cut by a read's end more than once)."""
    head, _, rest = framed(payload, "eof", ctype=ctype)[0].partition(b"\r\n\r\n")
    steps: list = [head + b"\r\n\r\n"]
    for i in range(0, len(rest), every):
        steps += [rest[i:i + every], 0.0005]
    return [*steps, None]


@pytest.mark.parametrize("every", [3, 7, 4096])
def test_a_plain_relay_renames_every_chunk_however_the_reads_cut_it(gateway, raw, every) -> None:
    words = ["one ", TRICKY, " two"]
    usage = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": UPSTREAM, "choices": [],
             "usage": {"prompt_tokens": 1, "completion_tokens": 3, "total_tokens": 4}}
    payload = (compact_chunk({"role": "assistant", "content": ""})
               + b"".join(compact_chunk({"content": w}) for w in words)
               + compact_chunk({}, "stop") + b"data: " + msgspec.json.encode(usage) + b"\n\ndata: [DONE]\n\n")
    up = raw(lambda req: cut(payload, every))
    gw = gateway(base_config(up.url + "/v1"))
    with gw.client() as c:
        r = c.post("/v1/chat/completions", json={"model": "local.m", "messages": HI, "stream": True,
                                                 "stream_options": {"include_usage": True}, "web_search": False})
    chunks = sse_events(r.text)
    assert {c["model"] for c in chunks} == {"local.m"}
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == "".join(words)
    assert r.text.rstrip().endswith("data: [DONE]")


ANTHROPIC_SSE = [
    ("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x-20990101", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                             "delta": {"type": "text_delta", "text": TRICKY}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
    ("message_stop", {"type": "message_stop"}),
]

_RESPONSE = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "error": None,
             "incomplete_details": None, "instructions": None, "model": "gpt-x-2099", "output": [],
             "parallel_tool_calls": True, "tool_choice": "auto", "metadata": {},
             "tools": [{"type": "image_generation", "model": "gpt-image-1"}]}  # a nested member stays
_MESSAGE = {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": TRICKY, "annotations": []}]}
RESPONSES_SSE = [
    ("response.created", {"type": "response.created", "response": _RESPONSE}),
    ("response.in_progress", {"type": "response.in_progress", "response": _RESPONSE}),
    ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                    "item": {**_MESSAGE, "status": "in_progress", "content": []}}),
    ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                                    "content_index": 0, "delta": TRICKY}),
    ("response.completed", {"type": "response.completed", "response": {
        **_RESPONSE, "status": "completed", "output": [_MESSAGE],
        "usage": {"input_tokens": 3, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 2,
                  "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 5}}}),
]


def native_sse(events: list[tuple[str, dict]]) -> bytes:
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


@pytest.mark.parametrize("every", [3, 7, 4096])
@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_a_commercial_pass_through_names_the_clients_model(gateway, fake_model, raw, kind, every) -> None:
    stream_events = ANTHROPIC_SSE if kind == "anthropic" else RESPONSES_SSE
    whole = stream_events[0][1]["message"] if kind == "anthropic" else stream_events[-1][1]["response"]

    def answer(req):
        if json.loads(req.body).get("stream"):
            return cut(native_sse(stream_events), every)
        return cut(json.dumps(whole).encode(), every, ctype="application/json")

    up = raw(answer)
    cfg = base_config(fake_model.url)
    cfg["providers"]["cloud"] = {"type": kind, "baseURL": up.url + ("" if kind == "anthropic" else "/v1"),
                                 "apiKey": "sk-provider"}
    cfg["virtualrouter"]["routing"]["premium"] = [{"id": "c", "priority": 100, "targets": ["cloud.big"]}]
    gw = gateway(cfg)
    path = "/v1/messages" if kind == "anthropic" else "/v1/responses"
    body = {"model": "premium", "max_tokens": 10, "messages": HI} if kind == "anthropic" else \
        {"model": "premium", "input": "hi"}
    with gw.client() as c:
        plain = c.post(path, json=body)
        streamed = c.post(path, json={**body, "stream": True})
    assert plain.json()["model"] == "premium"
    assert json.loads(up.requests[0].body)["model"] == "big"  # the provider is asked for its own model
    events = sse_events(streamed.text)
    assert [e["type"] for e in events] == [name for name, _ in stream_events]
    named = [e["message"] if kind == "anthropic" else e["response"] for e in events
             if "message" in e or "response" in e]
    assert named and {m["model"] for m in named} == {"premium"}
    if kind == "openai":
        assert {m["tools"][0]["model"] for m in named} == {"gpt-image-1"}
    text = [e["delta"]["text"] if kind == "anthropic" else e["delta"] for e in events
            if e["type"] in ("content_block_delta", "response.output_text.delta")]
    assert text == [TRICKY]
    assert fake_model.requests == []


# --- the rewrite itself ---------------------------------------------------------------------------


_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(upstream=_names, client=_names, text=st.lists(_names, min_size=1, max_size=4),
       encoding=st.sampled_from(["compact", "spaced", "ascii"]), cuts=st.lists(st.integers(1, 400), max_size=6))
def test_model_name_rewrites_the_member_and_nothing_else(upstream, client, text, encoding, cuts) -> None:
    """Whatever the backend's name, the client's and the text (which may quote either), and however
    the JSON is spaced: each chunk then names the client's model, with everything else as it was,
    also when whole lines come in pieces and a piece is rewritten again with the next."""
    dump = {"compact": msgspec.json.encode,
            "spaced": lambda o: json.dumps(o, ensure_ascii=False).encode(),
            "ascii": lambda o: json.dumps(o).encode()}[encoding]
    text = [*text, f'"model":"{upstream}"', f'"model": "{client}"']  # text that quotes a member
    chunks = [{"id": "c", "model": upstream, "choices": [{"index": 0, "delta": {"content": t}}]} for t in text]
    stream = b"".join(b"data: " + dump(c) + b"\n\n" for c in chunks)
    rename = ModelName(client)
    out, buf, pos = [], b"", 0
    for n in [*sorted({c for c in cuts if c < len(stream)}), len(stream)]:  # the reads, as sse_batches takes them
        piece, pos = stream[pos:n], n
        buf += piece
        if piece.find(b"\n") < 0:
            continue
        buf = rename(buf)  # a line the read left unfinished is given again with the next
        *lines, buf = buf.split(b"\n")
        out += lines
    decoded = [json.loads(line[6:]) for line in out if line.startswith(b"data: ")]
    assert decoded == [{**c, "model": client} for c in chunks]
