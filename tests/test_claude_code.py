"""Claude Code 2.1.330's recorded requests replayed through the gateway (fixtures/claude-code), checking
what Claude Code parses from the answers; and the search-execution side call in detail."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from hub.protocols.messages.claude_code import PREFIX, search_execution_query

from .fakes.search_providers import CORPUS, Reply
from .test_messages import accumulate, parse_sse
from .test_messages_gateway import ws_config

FIXTURES = Path(__file__).parent / "fixtures" / "claude-code"
_DROP_HEADERS = {"host", "content-length", "connection", "accept-encoding", "x-api-key"}
EXEC = sorted(p.name for p in FIXTURES.glob("*websearch-exec*"))
MAIN = sorted(p.name for p in FIXTURES.glob("*-main-*"))
QUERY = "latest stable Rust release version"


def load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def replay(gw, request: dict, *, stream: bool | None = None):
    """Send a recorded request as Claude Code sent it: same path, ?beta=true, same headers and body."""
    body = copy.deepcopy(request["body"])
    if stream is not None:
        body["stream"] = stream
    headers = {k: v for k, v in request["headers"] if k.lower() not in _DROP_HEADERS}
    query = "&".join(f"{k}={v}" for k, vs in request["query"].items() for v in vs)
    r = gw.client().post(f"{request['path']}?{query}", content=json.dumps(body), headers=headers)
    assert r.status_code == 200, r.text
    if body.get("stream"):
        assert r.headers["content-type"].startswith("text/event-stream")
        events = parse_sse(r.content)
        return events, accumulate(events).model_dump(exclude_none=True)
    assert r.headers["content-type"].startswith("application/json")
    return None, r.json()


def recorded_message(response: dict) -> dict:
    if "body" in response:
        return response["body"]
    return accumulate([(e["event"], e["data"]) for e in response["sse"]]).model_dump(exclude_none=True)


def claude_code_tool_result(message: dict) -> str:
    """What Claude Code builds from a search-execution answer: title+url of each
    result, then the text blocks."""
    links = [{"title": r["title"], "url": r["url"]}
             for b in message["content"] if b["type"] == "web_search_tool_result" and isinstance(b["content"], list)
             for r in b["content"]]
    text = "".join(b["text"] for b in message["content"] if b["type"] == "text")
    return f"Links: {json.dumps(links)}\n\n{text}"


def check_tool_input_via_deltas(events) -> None:
    """Claude Code ignores input given in content_block_start: it must come as input_json_delta."""
    for i, (name, data) in enumerate(events):
        if name == "content_block_start" and data["content_block"]["type"] in ("tool_use", "server_tool_use"):
            assert data["content_block"]["input"] == {}
            deltas = [d["delta"]["partial_json"] for n, d in events[i + 1:]
                      if n == "content_block_delta" and d["index"] == data["index"]]
            assert json.loads("".join(deltas))


# --- the search-execution request ---------------------------------------------------------------


@pytest.mark.parametrize("name", EXEC)
@pytest.mark.parametrize("stream", [None, False])  # as recorded, and Claude Code's non-streaming retry
def test_search_execution_fixture(gateway, fake_model, search_fakes, name, stream) -> None:
    fixture = load(name)
    gw = gateway(ws_config(fake_model.url, search_fakes))
    events, message = replay(gw, fixture["request"], stream=stream)
    blocks = message["content"]
    assert [b["type"] for b in blocks] == ["server_tool_use", "web_search_tool_result", "text"]
    assert [b["type"] for b in blocks] == [b["type"] for b in recorded_message(fixture["response"])["content"]]
    use, result, text = blocks
    assert use["id"].startswith("srvtoolu_") and use["name"] == "web_search" and use["input"] == {"query": QUERY}
    assert result["tool_use_id"] == use["id"]
    assert isinstance(result["content"], list) and result["content"]
    assert all(r["type"] == "web_search_result" and r["title"] and r["url"].startswith("https://")
               and r["encrypted_content"] for r in result["content"])
    # the snippets reach the main model only through the text block
    tool_result = claude_code_tool_result(message)
    assert "The Rust team is happy to announce a new version of Rust, 1.91.0" in tool_result
    assert "https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/" in text["text"]
    assert message["stop_reason"] == "end_turn"
    assert message["usage"]["server_tool_use"]["web_search_requests"] == 1
    assert message["model"] == fixture["request"]["body"]["model"]
    if events is not None:
        check_tool_input_via_deltas(events)
        assert events[-2][1]["usage"]["server_tool_use"] == {"web_search_requests": 1, "web_fetch_requests": 0}
    # one search, with the query from the text; no model round at all
    calls = search_fakes.calls("serper")
    assert len(calls) == 1 and calls[0].json["q"] == QUERY
    assert fake_model.requests == []


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(("reply", "code"), [
    (Reply(status=500, body={"message": "internal"}), "unavailable"),
    (Reply(status=429, body={"message": "rate limited"}), "too_many_requests"),
])
def test_search_execution_provider_failure(gateway, fake_model, search_fakes, stream, reply, code) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes))
    search_fakes.script("serper", reply)
    events, message = replay(gw, load(EXEC[0])["request"], stream=stream)
    assert [b["type"] for b in message["content"]] == ["server_tool_use", "web_search_tool_result", "text"]
    assert message["content"][1]["content"] == {"type": "web_search_tool_result_error", "error_code": code}
    assert "failed" in message["content"][2]["text"]
    assert message["usage"]["server_tool_use"]["web_search_requests"] == 1
    assert fake_model.requests == []


def test_search_execution_keepalive_while_searching(gateway, fake_model, search_fakes) -> None:
    """A slow engine: the stream opens at once and pings until the results are there."""
    gw = gateway(ws_config(fake_model.url, search_fakes, timeoutMs=10000))
    search_fakes.script("serper", Reply(delay=5.5))
    events, message = replay(gw, load(EXEC[0])["request"], stream=True)
    names = [n for n, _ in events]
    first_result = next(i for i, (n, d) in enumerate(events)
                        if n == "content_block_start" and d["content_block"]["type"] == "web_search_tool_result")
    assert "ping" in names[:first_result] and names.index("content_block_start") < names.index("ping")
    assert isinstance(message["content"][1]["content"], list)


@pytest.mark.parametrize(("query", "code"), [("", "invalid_tool_input"), ("x" * 600, "query_too_long")])
def test_search_execution_bad_input(gateway, fake_model, search_fakes, query, code) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes))
    request = copy.deepcopy(load(EXEC[0])["request"])
    request["body"]["messages"][0]["content"][0]["text"] = PREFIX + query
    _, message = replay(gw, request, stream=False)
    assert message["content"][1]["content"]["error_code"] == code
    assert search_fakes.calls("serper") == []


def test_search_execution_domain_filters(gateway, fake_model, search_fakes) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes))
    request = copy.deepcopy(load(EXEC[0])["request"])
    request["body"]["tools"][0].update(allowed_domains=["rust-lang.org"], blocked_domains=None)
    replay(gw, request, stream=False)
    assert search_fakes.calls("serper")[0].json["q"] == f"{QUERY} site:rust-lang.org"


@pytest.mark.parametrize("stream", [True, False])
def test_search_execution_model_summary(gateway, fake_model, search_fakes, stream) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes, execSummary="model"))
    fake_model.script({"content": "Rust 1.91.0 was released on October 30, 2025 (blog.rust-lang.org)."})
    events, message = replay(gw, load(EXEC[0])["request"], stream=stream)
    assert [b["type"] for b in message["content"]] == ["server_tool_use", "web_search_tool_result", "text"]
    assert message["content"][2]["text"] == "Rust 1.91.0 was released on October 30, 2025 (blog.rust-lang.org)."
    assert message["usage"]["server_tool_use"]["web_search_requests"] == 1
    assert len(fake_model.requests) == 1
    sent = fake_model.requests[0]
    assert "tools" not in sent  # one round, no search loop
    assert "The Rust team is happy to announce" in sent["messages"][-1]["content"]


@pytest.mark.parametrize("stream", [True, False])
def test_search_execution_model_summary_falls_back_to_digest(gateway, fake_model, search_fakes, stream) -> None:
    gw = gateway(ws_config(fake_model.url, search_fakes, execSummary="model"))
    fake_model.script({"status": 500})
    _, message = replay(gw, load(EXEC[0])["request"], stream=stream)
    assert "The Rust team is happy to announce" in message["content"][2]["text"]


# --- the main requests around it --------------------------------------------------------------


def _script_from_recording(fake_model, recorded: dict) -> None:
    text = "".join(b["text"] for b in recorded["content"] if b["type"] == "text")
    calls = [{"name": b["name"], "arguments": b["input"]} for b in recorded["content"] if b["type"] == "tool_use"]
    fake_model.script({"content": text, "tool_calls": calls} if calls else {"content": text})


@pytest.mark.parametrize("name", MAIN)
def test_main_request_fixture(gateway, fake_model, search_fakes, name) -> None:
    fixture = load(name)
    gw = gateway(ws_config(fake_model.url, search_fakes))
    recorded = recorded_message(fixture["response"])
    _script_from_recording(fake_model, recorded)
    events, message = replay(gw, fixture["request"])
    strip = lambda blocks: [  # noqa: E731
        {k: v for k, v in b.items() if k in ("type", "text", "name", "input")} for b in blocks]
    assert strip(message["content"]) == strip(recorded["content"])
    assert message["stop_reason"] == recorded["stop_reason"]
    check_tool_input_via_deltas(events)
    # what reached the backend: one system message first, no billing header, tools as functions,
    # deferred tools only once ToolSearch loaded them, and no injected web_search (Claude Code searches itself)
    sent = fake_model.requests[0]
    assert sent["messages"][0]["role"] == "system"
    assert [m["role"] for m in sent["messages"]].count("system") == 1
    assert "x-anthropic-billing-header" not in json.dumps(sent)
    names = [t["function"]["name"] for t in sent["tools"]]
    assert "web_search" not in names and "DeferredToolPlaceholder" not in names
    body = fixture["request"]["body"]
    offered = {t["name"] for t in body["tools"] if not t.get("defer_loading")}
    assert offered <= set(names)
    if any(t["name"] == "WebSearch" for t in body["tools"]):
        assert "WebSearch" in names
    assert search_fakes.calls("serper") == []


def test_full_flow_snippets_reach_the_main_model(gateway, fake_model, search_fakes) -> None:
    """main request -> WebSearch tool_use -> search execution -> tool_result built like Claude Code
    does -> final request: the main model sees the snippets."""
    gw = gateway(ws_config(fake_model.url, search_fakes))
    _, exec_message = replay(gw, load("ws-direct-002-POST-websearch-exec-sse.json")["request"])
    final = copy.deepcopy(load("ws-direct-003-POST-main-final-after-tool-result-sse.json")["request"])
    result = final["body"]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result"
    result["content"] = (f'Web search results for query: "{QUERY}"\n\n' + claude_code_tool_result(exec_message)
                         + "\n\n\nREMINDER: You MUST include the sources above in your response to the user.")
    fake_model.script({"content": "Rust 1.91.0 is the latest stable release."})
    replay(gw, final)
    tool_messages = [m for m in fake_model.requests[0]["messages"] if m["role"] == "tool"]
    assert "The Rust team is happy to announce" in tool_messages[-1]["content"]


# --- detection by shape -------------------------------------------------------------------------


def _exec_body() -> dict:
    return copy.deepcopy(load(EXEC[0])["request"]["body"])


def test_detection_positive_variants() -> None:
    body = _exec_body()
    assert search_execution_query(body) == QUERY
    for choice in (None, {"type": "auto"}, {"type": "any"}, {"type": "tool", "name": "web_search"},
                   {"type": "tool", "name": "web_search", "disable_parallel_tool_use": True}):
        b = {**body, "tool_choice": choice} if choice else {k: v for k, v in body.items() if k != "tool_choice"}
        assert search_execution_query(b) == QUERY
    # older system prompts, no system prompt, string content, a newer tool version: still detected
    assert search_execution_query({**body, "system": "You are an assistant for performing a web search tool use"})
    assert search_execution_query({k: v for k, v in body.items() if k != "system"}) == QUERY
    assert search_execution_query({**body, "messages": [{"role": "user", "content": PREFIX + " q "}]}) == "q"
    assert search_execution_query({**body, "tools": [{"type": "web_search_20260209", "name": "web_search"}]})


def test_detection_negative_variants() -> None:
    body = _exec_body()
    two_tools = [*body["tools"], {"name": "f", "input_schema": {"type": "object"}}]
    cases = [
        {**body, "tools": two_tools},
        {**body, "tools": [{"name": "web_search", "input_schema": {"type": "object"}}]},  # a client tool
        {**body, "tool_choice": {"type": "none"}},
        {**body, "tool_choice": {"type": "tool", "name": "other"}},
        {**body, "messages": [*body["messages"], {"role": "assistant", "content": "x"}]},
        {**body, "messages": [{"role": "user", "content": "Search for rust please"}]},
        {**body, "messages": [{"role": "assistant", "content": PREFIX + "q"}]},
        {k: v for k, v in body.items() if k != "tools"},
        "not a dict",
    ]
    for case in cases:
        assert search_execution_query(case) is None


def test_fixture_corpus_is_what_the_fakes_serve() -> None:
    # the assertions above rely on the fake Serper's first hit
    assert CORPUS[0][1] == "https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/"
