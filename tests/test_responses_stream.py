"""hub/protocols/responses_stream: pipeline items -> Responses SSE events (no HTTP).

`check_events` holds the invariants Codex and the openai SDK rely on; the HTTP tests reuse it.
"""

from __future__ import annotations

import asyncio
import copy
import json
import typing
from itertools import groupby
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import Response, ResponseStreamEvent

from hub.protocols.responses import KEEPALIVE, ResponsesStream, to_chat
from hub.search.base import Hit, SearchRequest, SearchResult
from hub.tools.events import Keepalive, ToolFinished, ToolStarted
from hub.tools.kinds.web_search import SearchCall

from .helpers import as_reads

FIXTURES = Path(__file__).parent / "fixtures" / "codex"
CODEX = sorted(FIXTURES.glob("*.json"))
_EVENT_TYPES = {typing.get_args(cls.model_fields["type"].annotation)[0]: cls
                for cls in typing.get_args(typing.get_args(ResponseStreamEvent)[0])}
TERMINAL = ("response.completed", "response.failed", "response.incomplete")


# --- shared checks -------------------------------------------------------------------------------


def parse_sse(raw: bytes) -> list[dict]:
    """Events of a Responses SSE body; `event:` must name the data's type; comment lines are skipped."""
    events = []
    for block in raw.decode().split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if not lines:
            continue
        assert lines[0].startswith("event: ") and lines[1].startswith("data: ") and len(lines) == 2, block
        event = json.loads(lines[1][6:])
        assert event["type"] == lines[0][7:]
        events.append(event)
    return events


def check_events(events: list[dict]) -> dict:
    """Codex's and the SDK's requirements on a Responses stream; returns the final Response."""
    assert [e["type"] for e in events[:2]] == ["response.created", "response.in_progress"]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] in TERMINAL for e in events].count(True) == 1 and events[-1]["type"] in TERMINAL
    added: dict[int, dict] = {}
    done: dict[int, dict] = {}
    parts: set[tuple[int, int]] = set()
    for e in events:
        _EVENT_TYPES[e["type"]].model_validate(e)  # the SDK's own event type accepts it
        if "output_index" not in e:
            continue
        index = e["output_index"]
        if e["type"] == "response.output_item.added":
            assert index == len(added), "items open in output order"
            added[index] = e["item"]
            continue
        assert index in added and index not in done, f"{e['type']} outside its item's lifetime"
        item = added[index]
        if "item_id" in e:
            assert e["item_id"] == item["id"]
        if e["type"] == "response.content_part.added":
            parts.add((index, e["content_index"]))
        elif "content_index" in e:
            assert (index, e["content_index"]) in parts
        if e["type"] == "response.output_item.done":
            assert (e["item"]["type"], e["item"]["id"]) == (item["type"], item["id"])
            assert e["item"].get("call_id") == item.get("call_id")
            done[index] = e["item"]
    assert sorted(done) == sorted(added), "every item is delivered by output_item.done"
    final = events[-1]["response"]
    assert final["id"] == events[0]["response"]["id"]
    assert final["output"] == [done[i] for i in range(len(done))]
    assert "output_text" not in final
    Response.model_validate(final)
    return final


def collapsed(events: list[dict]) -> list[str]:
    """Event types with runs of the same delta type folded into one."""
    return [t for t, _ in groupby(e["type"] for e in events)]


def run(ctx, items: list, **kw) -> tuple[list[dict], bytes]:
    async def source():
        for item in items:
            if isinstance(item, Exception):
                raise item
            yield item

    async def collect() -> bytes:
        enc = ResponsesStream(ctx)
        return b"".join([chunk async for chunk in enc.encode(source(), **kw)])

    raw = asyncio.run(collect())
    return parse_sse(raw), raw


def chunk(delta: dict | None = None, finish: str | None = None) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}]}


def usage_chunk(prompt: int = 10, completion: int = 5) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}


def ctx_for(req: dict):
    return to_chat(req)[1]


# --- replaying the Codex recordings --------------------------------------------------------------


def items_from_recording(events: list[dict]) -> list:
    """The pipeline items that would make the recorded answer: chat chunks and search events."""
    out: list = [chunk({"role": "assistant", "content": ""})]
    calls: dict[int, int] = {}
    for ev in events:
        data, kind = ev["data"], ev["event"]
        if kind == "response.reasoning_summary_text.delta":
            out.append(chunk({"reasoning_content": data["delta"]}))
        elif kind == "response.output_text.delta":
            out.append(chunk({"content": data["delta"]}))
        elif kind == "response.output_item.added" and data["item"]["type"] in ("function_call", "custom_tool_call"):
            item = data["item"]
            calls[data["output_index"]] = index = len(calls)
            out.append(chunk({"tool_calls": [{"index": index, "id": item["call_id"], "type": "function",
                                              "function": {"name": item["name"], "arguments": ""}}]}))
        elif kind == "response.function_call_arguments.delta":
            out.append(chunk({"tool_calls": [{"index": calls[data["output_index"]],
                                              "function": {"arguments": data["delta"]}}]}))
        elif kind == "response.custom_tool_call_input.done":
            out.append(chunk({"tool_calls": [{"index": calls[data["output_index"]],
                                              "function": {"arguments": json.dumps({"input": data["input"]})}}]}))
        elif kind == "response.output_item.done" and data["item"]["type"] == "web_search_call":
            action = data["item"]["action"]
            result = SearchResult("serper", action["query"], tuple(Hit("t", s["url"], "s") for s in action["sources"]))
            call = SearchCall(data["item"]["id"], SearchRequest(action["query"], engine="serper"))
            out.append(ToolStarted(call))
            out.append(ToolFinished(SearchCall(call.id, call.request, result)))
        elif kind == "response.output_text.annotation.added":
            a = data["annotation"]
            out.append(chunk({"annotations": [{"type": "url_citation", "url_citation": {
                k: a[k] for k in ("start_index", "end_index", "url", "title")}}]}))
        elif kind == "response.completed":
            finish = "tool_calls" if calls else "stop"
            out.append(chunk({}, finish))
            u = data["response"]["usage"]
            out.append(usage_chunk(u["input_tokens"], u["output_tokens"]))
    return out


def without_ids(item: dict) -> dict:
    out = {k: v for k, v in item.items() if k not in ("id", "encrypted_content")}
    action = out.get("action")
    if isinstance(action, dict) and action.get("queries") == [action.get("query")]:
        # the recordings predate `action.queries` (every query of a call, beside `query`)
        out["action"] = {k: v for k, v in action.items() if k != "queries"}
    return out


@pytest.mark.parametrize("path", CODEX, ids=lambda p: p.name[:60])
def test_codex_recordings_reencode_to_the_same_events(path: Path) -> None:
    rec = json.loads(path.read_text())
    recorded = [{**ev["data"], "type": ev["event"]} for ev in rec["response"]["sse"]]
    ctx = ctx_for(copy.deepcopy(rec["request"]["body"]))
    events, _ = run(ctx, items_from_recording(rec["response"]["sse"]))
    final = check_events(events)
    assert collapsed(events) == collapsed(recorded)
    expected = recorded[-1]["response"]["output"]
    assert [without_ids(i) for i in final["output"]] == [without_ids(i) for i in expected]
    assert final["usage"]["input_tokens"] == recorded[-1]["response"]["usage"]["input_tokens"]


# --- encoder behaviour ---------------------------------------------------------------------------


def test_text_answer_with_keepalive() -> None:
    ctx = ctx_for({"model": "m", "input": "hi", "stream": True})
    events, raw = run(ctx, [Keepalive(), chunk({"role": "assistant", "content": ""}), chunk({"content": "Hel"}),
                            Keepalive(), chunk({"content": "lo"}), chunk(finish="stop"), usage_chunk()])
    assert raw.count(KEEPALIVE) == 2
    final = check_events(events)
    assert final["status"] == "completed" and final["output"][0]["content"][0]["text"] == "Hello"
    assert final["usage"]["total_tokens"] == 15
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert deltas == ["Hel", "lo"] and all(e["logprobs"] == [] for e in events if "delta" in e and "logprobs" in e)


def test_function_calls_stream_and_interleave() -> None:
    ctx = ctx_for({"model": "m", "input": "x", "tools": [{"type": "function", "name": "a"},
                                                         {"type": "function", "name": "b"}]})
    events, _ = run(ctx, [
        chunk({"content": "Calling."}),
        chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "a", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"x\":"}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "b", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}),
        chunk(finish="tool_calls"), usage_chunk(),
    ])
    final = check_events(events)
    msg, fa, fb = final["output"]
    assert msg["content"][0]["text"] == "Calling."
    assert (fa["call_id"], fa["name"], fa["arguments"]) == ("call_a", "a", "{\"x\":1}")
    assert (fb["call_id"], fb["arguments"]) == ("call_b", "{}")
    done = [e for e in events if e["type"] == "response.function_call_arguments.done"]
    assert [(e["name"], e["arguments"]) for e in done] == [("a", "{\"x\":1}"), ("b", "{}")]


def test_custom_tool_and_namespaced_calls() -> None:
    ctx = ctx_for({"model": "m", "input": "x", "tools": [
        {"type": "custom", "name": "apply_patch"},
        {"type": "namespace", "name": "multi_agent_v1", "description": "",
         "tools": [{"type": "function", "name": "spawn_agent", "parameters": None, "strict": False}]}]})
    patch = "*** Begin Patch\n*** End Patch\n"
    args = json.dumps({"input": patch})
    events, _ = run(ctx, [
        chunk({"tool_calls": [{"index": 0, "id": "call_p", "type": "function",
                               "function": {"name": "apply_patch", "arguments": args[:9]}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[9:]}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "call_s", "type": "function",
                               "function": {"name": "spawn_agent", "arguments": "{}"}}]}),
        chunk(finish="tool_calls"), usage_chunk(),
    ])
    final = check_events(events)
    ctc, fc = final["output"]
    assert ctc == {"type": "custom_tool_call", "id": ctc["id"], "call_id": "call_p", "name": "apply_patch",
                   "input": patch, "status": "completed"}
    assert [e["input"] for e in events if e["type"] == "response.custom_tool_call_input.done"] == [patch]
    assert not any(e["type"] == "response.function_call_arguments.delta" and e["item_id"] == ctc["id"]
                   for e in events)
    assert fc["namespace"] == "multi_agent_v1" and fc["name"] == "spawn_agent"


RUST = SearchResult("serper", "rust", (Hit("Rust 1.91", "https://blog.rust-lang.org/r", "s"),))


def test_search_rounds_with_hosted_tool() -> None:
    """Text before a search, the search, then the cited answer: citations land on the answer's message."""
    ctx = ctx_for({"model": "m", "input": "rust?", "tools": [{"type": "web_search"}]})
    first = "Let me check."
    answer = "\n\nRust 1.91 is out."
    start = len(first) + 2
    call = SearchCall("call_s", SearchRequest("rust", engine="serper"))
    events, _ = run(ctx, [
        chunk({"reasoning_content": "need to search"}), chunk({"content": first}),
        ToolStarted(call), Keepalive(), ToolFinished(SearchCall("call_s", SearchRequest("rust", engine="serper"), RUST)),
        chunk({"content": answer}),
        chunk({"annotations": [
            {"type": "url_citation", "url_citation": {"start_index": start, "end_index": start + 9,
                                                      "url": "https://blog.rust-lang.org/r", "title": "Rust 1.91"}},
            {"type": "url_citation", "url_citation": {"start_index": 0, "end_index": 5, "url": "https://x.y/",
                                                      "title": "cites the first message"}}]}),
        chunk(finish="stop"), usage_chunk(),
    ])
    final = check_events(events)
    assert [i["type"] for i in final["output"]] == ["reasoning", "message", "web_search_call", "message"]
    ws = final["output"][2]
    assert ws["action"] == {"type": "search", "query": "rust", "queries": ["rust"], "sources": [
        {"type": "url", "url": "https://blog.rust-lang.org/r"}]}
    assert collapsed([e for e in events if e.get("output_index") == 2]) == [
        "response.output_item.added", "response.web_search_call.in_progress", "response.web_search_call.searching",
        "response.web_search_call.completed", "response.output_item.done"]
    part = final["output"][3]["content"][0]
    assert part["text"] == "Rust 1.91 is out."  # the pipeline's round separator does not open the message
    assert part["annotations"] == [{"type": "url_citation", "start_index": 0, "end_index": 9,
                                    "url": "https://blog.rust-lang.org/r", "title": "Rust 1.91"}]
    assert part["text"][0:9] == "Rust 1.91"


def test_searches_are_invisible_without_the_hosted_tool() -> None:
    ctx = ctx_for({"model": "m", "input": "rust?"})
    call = SearchCall("call_s", SearchRequest("rust", engine="serper"), RUST)
    events, _ = run(ctx, [ToolStarted(call), ToolFinished(call), chunk({"content": "ok"}), chunk(finish="stop")])
    final = check_events(events)
    assert [i["type"] for i in final["output"]] == ["message"]
    assert not any("web_search" in e["type"] for e in events)


def test_parallel_searches_and_a_failed_one() -> None:
    ctx = ctx_for({"model": "m", "input": "x", "tools": [{"type": "web_search_preview"}]})
    a, b = SearchCall("a", SearchRequest("qa", engine="e")), SearchCall("b", SearchRequest("qb", engine="e"))
    failed = SearchCall("b", SearchRequest("qb", engine="e"), SearchResult("e", "qb", error="down", error_code="unavailable"))
    events, _ = run(ctx, [ToolStarted(a), ToolStarted(b), ToolFinished(failed),
                          ToolFinished(SearchCall("a", SearchRequest("qa", engine="e"), RUST)), chunk({"content": "done"}),
                          chunk(finish="stop")])
    final = check_events(events)
    ws_a, ws_b, _ = final["output"]
    assert ws_a["action"]["query"] == "qa" and ws_a["action"]["sources"]
    assert ws_b["status"] == "completed" and ws_b["action"]["sources"] == []


def test_length_finish_is_incomplete_but_completed_event() -> None:
    ctx = ctx_for({"model": "m", "input": "x", "max_output_tokens": 3})
    events, _ = run(ctx, [chunk({"content": "abc"}), chunk(finish="length"), usage_chunk()])
    final = check_events(events)
    assert events[-1]["type"] == "response.completed"
    assert final["status"] == "incomplete" and final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["output"][0]["status"] == "incomplete"


def test_empty_answer_is_an_empty_message() -> None:
    events, _ = run(ctx_for({"model": "m", "input": "x"}), [chunk(finish="stop")])
    final = check_events(events)
    assert final["output"][0]["content"][0]["text"] == ""


def test_mid_stream_error_fails_the_response() -> None:
    ctx = ctx_for({"model": "m", "input": "x", "tools": [{"type": "function", "name": "f"}]})
    events, _ = run(ctx, [
        chunk({"content": "partial"}),
        chunk({"tool_calls": [{"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": "{"}}]}),
        ConnectionError("upstream died")],
        describe_error=lambda e: ("server_error", f"stream broke: {type(e).__name__}"))
    final = check_events(events)
    assert events[-1]["type"] == "response.failed"
    assert final["status"] == "failed" and final["error"] == {"code": "server_error",
                                                              "message": "stream broke: ConnectionError"}
    assert [i["status"] for i in final["output"]] == ["incomplete", "incomplete"]


def test_error_before_any_item_still_starts_and_fails() -> None:
    events, _ = run(ctx_for({"model": "m", "input": "x"}), [RuntimeError("boom")])
    check_events(events)
    assert [e["type"] for e in events] == ["response.created", "response.in_progress", "response.failed"]


def test_before_end_sees_the_final_response_before_it_is_sent() -> None:
    ctx = ctx_for({"model": "m", "input": "x"})
    seen: list[dict] = []

    async def before_end(response: dict) -> None:
        seen.append(response)

    events, _ = run(ctx, [chunk({"content": "ok"}), chunk(finish="stop")], before_end=before_end)
    assert seen and seen[0] == events[-1]["response"]


def test_events_are_not_mutated_after_they_are_made() -> None:
    ctx = ctx_for({"model": "m", "input": "x"})
    enc = ResponsesStream(ctx)
    events = enc.start() + enc.feed(chunk({"content": "a"}))
    snapshot = copy.deepcopy(events)
    events += enc.feed(chunk({"content": "b"})) + enc.finish()
    assert events[:len(snapshot)] == snapshot


# --- any sequence of pipeline items gives a valid stream ----------------------------------------------

_names = st.sampled_from(["f", "apply_patch", "spawn_agent", "unknown", ""])
_fragment = st.fixed_dictionaries(
    {"index": st.integers(0, 2)},
    optional={"id": st.sampled_from(["call_a", "call_b", ""]), "type": st.just("function"),
              "function": st.fixed_dictionaries({}, optional={"name": _names,
                                                              "arguments": st.text(max_size=6)})},
)
_annotation = st.fixed_dictionaries({"type": st.just("url_citation"), "url_citation": st.fixed_dictionaries(
    {"url": st.sampled_from(["https://a.example/", ""]), "start_index": st.integers(-3, 40),
     "end_index": st.integers(-3, 40)}, optional={"title": st.one_of(st.none(), st.text(max_size=4))})})
_delta = st.fixed_dictionaries({}, optional={
    "content": st.text(max_size=6), "reasoning_content": st.text(max_size=6), "refusal": st.text(max_size=3),
    "tool_calls": st.lists(_fragment, max_size=2), "annotations": st.lists(_annotation, max_size=2)})
_search = st.builds(lambda cid, q, ok: SearchCall(cid, SearchRequest(q, engine="e"), RUST if ok else None),
                    st.sampled_from(["s1", "s2"]), st.text(max_size=4), st.booleans())
_item = st.one_of(
    st.builds(lambda d, f: chunk(d, f), _delta, st.sampled_from([None, None, "stop", "length", "tool_calls"])),
    st.builds(ToolStarted, _search), st.builds(ToolFinished, _search), st.just(Keepalive()),
    st.builds(usage_chunk, st.integers(0, 50), st.integers(0, 50)),
)
_CTX_REQUESTS = [
    {"model": "m", "input": "x"},
    {"model": "m", "input": "x", "tools": [
        {"type": "function", "name": "f"}, {"type": "custom", "name": "apply_patch"}, {"type": "web_search"},
        {"type": "namespace", "name": "multi_agent_v1", "description": "",
         "tools": [{"type": "function", "name": "spawn_agent", "parameters": None, "strict": False}]}]},
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(_item, max_size=14), req=st.sampled_from(_CTX_REQUESTS), breaks=st.booleans())
def test_any_item_sequence_encodes_to_a_valid_stream(items: list, req: dict, breaks: bool) -> None:
    events, _ = run(ctx_for(req), [*items, *([RuntimeError("broke")] if breaks else [])])
    final = check_events(events)
    assert final["status"] == "failed" if breaks else final["status"] in ("completed", "incomplete")


def _shape(events: list[dict]) -> list:
    """Events with the generated ids and times taken out."""
    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items()
                    if k not in ("id", "item_id", "created_at", "completed_at", "call_id")}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    return [strip(e) for e in events]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(_item, max_size=14), req=st.sampled_from(_CTX_REQUESTS),
       cuts=st.lists(st.integers(0, 14), max_size=4))
def test_a_read_of_chunks_encodes_as_its_chunks_one_by_one(items: list, req: dict, cuts: list[int]) -> None:
    one_by_one, _ = run(ctx_for(req), items)
    grouped, raw = run(ctx_for(req), as_reads(items, cuts))
    assert _shape(grouped) == _shape(one_by_one)
    check_events(grouped)


@pytest.mark.parametrize("first", ["item", "keepalive", "error"])
def test_response_created_waits_for_the_producers_first_step(first) -> None:
    """The start events are made with the first item's: by then the producer has started the
    turn's work (a search round's requests leave before them). They still come first, also
    before a keepalive or an error."""
    log: list[str] = []

    async def source():
        log.append("work started")
        if first == "error":
            raise RuntimeError("broke")
        yield Keepalive() if first == "keepalive" else chunk({"role": "assistant", "content": "Hi"})
        yield chunk(finish="stop")

    async def collect() -> list[bytes]:
        out = []
        async for data in ResponsesStream(ctx_for({"model": "m", "input": "hi", "stream": True})).encode(source()):
            out.append((list(log), data))
        return out

    out = asyncio.run(collect())
    assert out[0][0] == ["work started"]
    events = parse_sse(b"".join(d for _, d in out))
    assert [e["type"] for e in events[:2]] == ["response.created", "response.in_progress"]
    assert events[-1]["type"] == ("response.failed" if first == "error" else "response.completed")
