"""Client search tools recognized by what they are (hub/injection/client_search.py), and the recorded Qwen Code and
opencode requests replayed through the gateway: their grep/tool/file searches never keep web_search out."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.injection.client_search import client_web_search, is_web_search_tool, name_words

from .helpers import base_config, searxng_engine

FIXTURES = Path(__file__).parent / "fixtures"

WEB = ["web_search", "WebSearch", "websearch", "google_search", "search_web", "internet_search", "brave_search",
       "tavily_search", "web_search_preview", "searchWeb", "bing-search", "duckduckgo_search", "SearchTheWeb",
       "google", "exa_search", "online_search"]
LOCAL = ["grep_search", "tool_search", "ToolSearch", "file_search", "codebase_search", "search_files",
         "search_code", "semantic_search", "memory_search", "search", "find_files", "glob", "grep", "webfetch",
         "WebFetch", "web_fetch", "search_docs", "search_issues", "symbol_search", "web_file_search", "lookup"]


@pytest.mark.parametrize("name", WEB)
def test_web_search_names(name: str) -> None:
    assert is_web_search_tool(name)


@pytest.mark.parametrize("name", LOCAL)
def test_local_search_names(name: str) -> None:
    assert not is_web_search_tool(name)


@pytest.mark.parametrize("description", [
    "Search the web for current information.", "Searches the internet and returns links.",
    "Run a web search", "Query a search engine and return the top results", "Look up a topic online.",
])
def test_a_description_that_says_web_counts(description: str) -> None:
    assert is_web_search_tool("search", description)
    assert is_web_search_tool("lookup", description)


@pytest.mark.parametrize("name,description", [
    ("search", "Search files in the repository by regular expression."),
    ("tool_search", "Search the web-tool catalog: Searches the web for tools"),  # a local word wins
    ("webfetch", "Fetches content from a specified URL. Use this tool to retrieve web content"),
    ("search", None), ("search", 42),
])
def test_a_description_without_web_search_does_not(name: str, description) -> None:
    assert not is_web_search_tool(name, description)


def test_name_words() -> None:
    assert name_words("WebSearch") == ["web", "search"]
    assert name_words("search_web-v2") == ["search", "web", "v", "2"]
    assert name_words("HTTPSearch") == ["http", "search"]


def ask(tools, messages=()) -> tuple:
    return tools, list(messages) or [{"role": "user", "content": "hi"}]


def test_client_web_search_skips_ours_and_garbage() -> None:
    ours = {"type": "function", "function": {"name": "web_search"}}
    theirs = {"type": "function", "function": {"name": "brave_search"}}
    assert client_web_search(*ask([ours]), "web_search") is None
    assert client_web_search(*ask([ours, theirs]), "web_search") == "brave_search"
    assert client_web_search(*ask(["x", 3, None, {"function": "x"}, {"function": {"name": 7}}]), "web_search") is None
    assert client_web_search(*ask("tools"), "web_search") is None
    assert client_web_search(*ask([{"name": "WebSearch", "input_schema": {}}]), "web_search") == "WebSearch"


LOADER = {"type": "function", "function": {"name": "ToolSearch", "description": "Fetches deferred tool schemas"}}


def test_a_web_search_tool_deferred_behind_a_loader_counts() -> None:
    listing = ("<system-reminder>\nThe following deferred tools are now available via ToolSearch:\nCronCreate\n"
               "WebFetch\nWebSearch\n\nOther text</system-reminder>")
    assert client_web_search(*ask([LOADER], [{"role": "user", "content": listing}]), "web_search") == "WebSearch"
    # the same list without a loader tool is just text
    assert client_web_search(*ask([], [{"role": "user", "content": listing}]), "web_search") is None
    qwen_style = {"type": "function", "function": {"name": "tool_search", "description":
                  'Deferred tools:\n- "web_fetch": "Fetches a URL"\n- "cron_create": "Schedules"'}}
    assert client_web_search(*ask([qwen_style]), "web_search") is None
    qwen_style["function"]["description"] += '\n- "google_search": "Search Google"'
    assert client_web_search(*ask([qwen_style]), "web_search") == "google_search"
    listing_after_blank = "Deferred tools you may load:\nCronCreate\n\nWebSearch is something else"
    assert client_web_search(*ask([LOADER], [{"role": "system", "content": listing_after_blank}]), "web_search") is None


def test_recorded_claude_code_main_requests_defer_their_web_search() -> None:
    from hub.protocols.messages import to_chat

    for path in sorted((FIXTURES / "claude-code").glob("*-main-*.json")):
        chat, _ = to_chat(json.loads(path.read_text())["request"]["body"])
        assert client_web_search(chat.get("tools"), chat["messages"], "web_search") == "WebSearch", path.name


@given(st.one_of(st.text(max_size=40), st.none(), st.integers(), st.lists(st.text(max_size=5))),
       st.one_of(st.text(max_size=200), st.none(), st.integers()))
def test_never_raises(name, description) -> None:
    assert is_web_search_tool(name, description) in (True, False)


@given(st.sampled_from(LOCAL), st.sampled_from(["_", "-", ""]), st.sampled_from(["v2", "tool", "x"]))
def test_local_words_stay_local_with_suffixes(name: str, sep: str, suffix: str) -> None:
    if name in ("search", "lookup"):  # a bare search word depends on its description
        return
    assert not is_web_search_tool(name + sep + suffix)


@pytest.mark.parametrize("name", ["qwen-code", "opencode"])
def test_recorded_clients_offer_no_web_search_tool(name: str) -> None:
    for path in sorted((FIXTURES / name).glob("*.json")):
        body = json.loads(path.read_text())["request"]["body"]
        assert client_web_search(body.get("tools"), body["messages"], "web_search") is None, path.name


# --- end to end ---------------------------------------------------------------------------------


def replay_chat(gw, fixture: Path):
    """POST a recorded chat request as the client sent it (same path, headers and body); the SSE lines."""
    request = json.loads(fixture.read_text())["request"]
    headers = {k: v for k, v in request["headers"]
               if k.lower() not in {"host", "content-length", "connection", "accept-encoding"}}
    r = gw.client().post(request["path"], content=json.dumps(copy.deepcopy(request["body"])), headers=headers)
    assert r.status_code == 200, r.text
    return r


def tool_names(req: dict) -> list[str]:
    return [t["function"]["name"] for t in req.get("tools", [])]


def test_recorded_qwen_code_request_gets_web_search(gateway, fake_model, search_fakes) -> None:
    gw = gateway(base_config(fake_model.url, webSearch={"engines": [searxng_engine(search_fakes)], "cacheTtlMs": 0}))

    def reply(body: dict) -> dict:
        if body["messages"][-1]["role"] == "tool":
            return {"content": "Rust 1.91.0 [1]"}
        return {"tool_calls": [{"name": "web_search", "arguments": {"query": "latest stable rust"}}]}

    fake_model.default = reply
    r = replay_chat(gw, FIXTURES / "qwen-code" / "web-search-001-POST-chat-plain-sse.json")
    assert "Rust 1.91.0 [1]" in "".join(json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
                                        for line in r.text.splitlines()
                                        if line.startswith("data: {") and json.loads(line[6:])["choices"])
    first = fake_model.requests[0]
    assert "grep_search" in tool_names(first) and "tool_search" in tool_names(first)
    assert tool_names(first)[-2:] == ["web_search", "web_fetch"]  # injected beside the client's own tools
    assert len(search_fakes.calls("searxng")) == 1
    assert fake_model.requests[1]["messages"][-1]["role"] == "tool"
