"""Side requests (titles, summaries, memory extraction, classification) are not search turns:
hub/injection/side_requests.py on every recorded request, and the gateway end to end on the recorded ones."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.config import ConfigError, load
from hub.config.side_requests import SideConfig, compile_side_config
from hub.injection.side_requests import ClientTools, classify_side
from hub.protocols.messages import to_chat as messages_to_chat
from hub.protocols.responses import to_chat as responses_to_chat
from hub.runtime import PLUGINS

from .helpers import base_config, hermetic, searxng_engine
from .test_metrics import samples, value

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
SIDE = ["opencode/plain-001-POST-chat-side-title-sse.json", "opencode/probe-undefined-tool-001-POST-chat-side-title-sse.json",
        "opencode/read-file-001-POST-chat-side-title-sse.json", "opencode/web-search-001-POST-chat-side-title-sse.json",
        "qwen-code/plain-002-POST-chat-plain-sse.json", "qwen-code/web-search-002-POST-chat-plain-sse.json",
        "claude-code/interactive-ws-ok-002-POST-side-structured-sse.json"]
ALL = sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("*/*.json"))
MAIN = [name for name in ALL if name not in SIDE]


def recorded(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())["request"]


def internal(name: str) -> dict:
    """The recorded request in the gateway's internal chat form."""
    request = recorded(name)
    body = copy.deepcopy(request["body"])
    if request["path"].startswith("/v1/messages"):
        return messages_to_chat(body)[0]
    if request["path"].startswith("/v1/responses"):
        return responses_to_chat(body)[0]
    return body


@pytest.mark.parametrize("name", SIDE)
def test_recorded_side_requests_are_side_requests(name: str) -> None:
    decision = classify_side(internal(name))
    assert decision.side, decision
    assert decision.rule in ("task-prompt", "structured-output") and decision.reason


@pytest.mark.parametrize("name", MAIN)
def test_no_recorded_main_request_is_a_side_request(name: str) -> None:
    assert len(MAIN) >= 35
    decision = classify_side(internal(name), client_uses_tools=True)
    assert not decision.side, decision


def test_claude_code_title_request_is_recognised_by_its_prompt_too() -> None:
    chat = internal("claude-code/interactive-ws-ok-002-POST-side-structured-sse.json")
    del chat["response_format"]
    assert classify_side(chat).rule == "task-prompt"


def chat(system: str | None = None, user: str = "search the web for the latest Rust release", **extra) -> dict:
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    return {"model": "m", "messages": messages, **extra}


TOOL = {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}


@pytest.mark.parametrize("system", [
    "You are a title generator. You output ONLY a thread title.",
    "Generate a concise, 3-5 word title for the conversation.",
    "Summarize the conversation so far in a few bullet points.",
    "Your task is to create a detailed summary of the conversation so far.",
    "You are the memory extraction subagent.",
    "Extract durable facts from the chat and store them.",
    "Classify whether the user's message starts a new topic. Respond with JSON only.",
    "Respond only with valid JSON: {\"isNewTopic\": bool}",
    "Generate 1-3 broad tags categorizing the main themes of the chat history.",
])
def test_task_prompts(system: str) -> None:
    assert classify_side(chat(system)).rule == "task-prompt"
    assert classify_side(chat(system, tools=[TOOL])).side  # a subagent with tools is still a side request


@pytest.mark.parametrize("system", [
    "You are a helpful assistant.",
    "You are opencode, an interactive CLI tool that helps users with software engineering tasks.",
    "You are a research assistant. Search the web before answering and cite sources.",
    "When you write a commit message, give it a short title line.",
])
def test_ordinary_prompts(system: str) -> None:
    assert not classify_side(chat(system)).side


def test_open_webui_style_task_in_the_user_message() -> None:
    user = "### Task:\nGenerate a concise, 3-5 word title with an emoji summarizing the chat history.\n### Chat History: ..."
    assert classify_side(chat(None, user)).rule == "task-prompt"


def test_structured_output_without_tools() -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "t", "schema": {"type": "object"}}}
    assert classify_side(chat(response_format=fmt)).rule == "structured-output"
    assert classify_side(chat(response_format={"type": "json_object"})).side
    assert not classify_side(chat(response_format=fmt, tools=[TOOL])).side
    assert not classify_side(chat(response_format={"type": "text"})).side


def test_tool_less_and_short_only_when_the_client_uses_tools() -> None:
    body = chat(max_tokens=200)
    assert not classify_side(body).side
    assert classify_side(body, client_uses_tools=True).rule == "tool-less-short"
    assert not classify_side(chat(max_tokens=32000), client_uses_tools=True).side
    assert not classify_side(chat(max_tokens=200, tools=[TOOL]), client_uses_tools=True).side


def test_operator_rules_come_first_and_may_say_main() -> None:
    errors: list[str] = []
    cfg = compile_side_config({"rules": [
        {"name": "titles are turns here", "system": "title generator", "decision": "main"},
        {"name": "probe", "user": "^ping\\b", "maxTokensAtMost": 10, "tools": False},
        {"name": "json", "structuredOutput": True, "model": "^small-"},
    ]}, errors)
    assert errors == []
    title = chat("You are a title generator.")
    decision = classify_side(title, rules=cfg.rules)
    assert not decision.side and decision.rule == "operator:titles are turns here"
    assert classify_side(chat(None, "ping me", max_tokens=5), rules=cfg.rules).rule == "operator:probe"
    assert not classify_side(chat(None, "ping me", max_tokens=50), rules=cfg.rules).side
    assert classify_side(chat(model="small-1", response_format={"type": "json_object"}, tools=[TOOL]),
                         rules=cfg.rules).rule == "operator:json"


def test_bad_operator_regex_is_a_config_error(tmp_path: Path) -> None:
    cfg = base_config("http://127.0.0.1:9/v1", webSearch={"sideRequests": {"rules": [{"system": "(unclosed"}]}})
    path = tmp_path / "engines.json"
    path.write_text(json.dumps(hermetic(cfg)))
    with pytest.raises(ConfigError, match=r"webSearch.sideRequests.rules\[0\].system"):
        load(str(path), plugins=PLUGINS)
    assert compile_side_config(None, []) == SideConfig()


def test_client_tools_memory() -> None:
    now = [0.0]
    tools = ClientTools(ttl_s=60, size=2, clock=lambda: now[0])
    assert not tools.note("a", False)
    assert tools.note("a", True)
    assert tools.note("a", False)
    now[0] = 61
    assert not tools.note("a", False)
    tools.note("b", True)
    tools.note("c", True)
    tools.note("d", True)  # "b" falls out
    assert not tools.note("b", False) and tools.note("d", False)


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                     max_leaves=20)


@given(st.dictionaries(st.sampled_from(["messages", "tools", "max_tokens", "response_format", "model", "x"]), _json))
def test_never_raises(body: dict) -> None:
    assert classify_side(body, client_uses_tools=True).side in (True, False)


@given(st.lists(st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "developer", 7]),
                                       "content": _json}), max_size=4))
def test_never_raises_on_odd_messages(messages: list) -> None:
    classify_side({"messages": messages})


# --- the gateway ---------------------------------------------------------------------------------


def ws_gateway(gateway, fake_model, search_fakes, **ws):
    return gateway(base_config(fake_model.url, webSearch={"engines": [searxng_engine(search_fakes)], "cacheTtlMs": 0,
                                                          **ws}))


def replay(gw, name: str, headers: dict | None = None):
    request = recorded(name)
    sent = {k: v for k, v in request["headers"]
            if k.lower() not in {"host", "content-length", "connection", "accept-encoding"}}
    r = gw.client().post(request["path"], content=json.dumps(request["body"]), headers={**sent, **(headers or {})})
    assert r.status_code == 200, r.text
    return r


def streamed_text(sse: str) -> str:
    chunks = [json.loads(line[6:]) for line in sse.splitlines() if line.startswith("data: {")]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


def tool_names(req: dict) -> list[str]:
    return [t["function"]["name"] for t in req.get("tools", [])]


@pytest.mark.parametrize("name", SIDE)
def test_recorded_side_requests_get_no_web_search(gateway, fake_model, search_fakes, name: str) -> None:
    gw = ws_gateway(gateway, fake_model, search_fakes)
    fake_model.default = {"content": "Latest Rust release"}
    replay(gw, name)
    assert len(fake_model.requests) == 1
    assert "web_search" not in tool_names(fake_model.requests[0])
    assert search_fakes.calls("searxng") == []


def test_opencode_session_title_then_search(gateway, fake_model, search_fakes) -> None:
    """The title request stays a title request; the main request of the same session searches."""
    gw = ws_gateway(gateway, fake_model, search_fakes)

    def reply(body: dict) -> dict:
        if not body.get("tools"):
            return {"content": "Latest stable Rust release"}
        if body["messages"][-1]["role"] == "tool":
            return {"content": "Rust 1.91.0 [1]"}
        return {"tool_calls": [{"name": "web_search", "arguments": {"query": "latest stable rust"}}]}

    fake_model.default = reply
    title = replay(gw, "opencode/web-search-001-POST-chat-side-title-sse.json")
    assert streamed_text(title.text) == "Latest stable Rust release"
    replay(gw, "opencode/web-search-002-POST-chat-plain-sse.json")
    assert tool_names(fake_model.requests[0]) == []
    assert tool_names(fake_model.requests[1])[-2:] == ["web_search", "web_fetch"]
    assert len(search_fakes.calls("searxng")) == 1


def test_explicit_override_still_searches_a_side_request(gateway, fake_model, search_fakes) -> None:
    gw = ws_gateway(gateway, fake_model, search_fakes)
    replay(gw, "opencode/web-search-001-POST-chat-side-title-sse.json", {"x-searchhub-web-search": "on"})
    assert tool_names(fake_model.requests[0]) == ["web_search", "web_fetch"]


def test_operator_rule_in_engines_json(gateway, fake_model, search_fakes) -> None:
    gw = ws_gateway(gateway, fake_model, search_fakes, sideRequests={"rules": [
        {"name": "our titles are turns", "system": "title generator", "decision": "main"},
        {"name": "nightly digest", "user": "^digest:"}]})
    replay(gw, "opencode/web-search-001-POST-chat-side-title-sse.json")
    assert tool_names(fake_model.requests[0]) == ["web_search", "web_fetch"]
    r = gw.client().post("/v1/chat/completions", json={
        "model": "m", "messages": [{"role": "user", "content": "digest: search the web for today's news"}]})
    assert r.status_code == 200
    assert tool_names(fake_model.requests[1]) == []


def test_side_detection_can_be_switched_off(gateway, fake_model, search_fakes) -> None:
    gw = ws_gateway(gateway, fake_model, search_fakes, sideRequests={"enabled": False})
    replay(gw, "opencode/web-search-001-POST-chat-side-title-sse.json")
    assert tool_names(fake_model.requests[0]) == ["web_search", "web_fetch"]


def test_tool_less_short_request_after_tool_requests_of_the_same_client(gateway, fake_model, search_fakes) -> None:
    gw = ws_gateway(gateway, fake_model, search_fakes)
    c = gw.client(headers={"authorization": "Bearer k1", "user-agent": "some-agent/1.0"})
    ask = [{"role": "user", "content": "search the web for the latest Rust release"}]
    c.post("/v1/chat/completions", json={"model": "m", "messages": ask, "max_tokens": 100})
    assert tool_names(fake_model.requests[-1]) == ["web_search", "web_fetch"]  # nothing known about this client yet
    c.post("/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [TOOL]})
    c.post("/v1/chat/completions", json={"model": "m", "messages": ask, "max_tokens": 100})
    assert tool_names(fake_model.requests[-1]) == []
    other = gw.client(headers={"authorization": "Bearer k2", "user-agent": "some-agent/1.0"})
    other.post("/v1/chat/completions", json={"model": "m", "messages": ask, "max_tokens": 100})
    assert tool_names(fake_model.requests[-1]) == ["web_search", "web_fetch"]  # another client


def test_decision_is_logged(gateway, fake_model, search_fakes, caplog) -> None:
    gw = ws_gateway(gateway, fake_model, search_fakes)
    with caplog.at_level("INFO", logger="searchhub.pipeline"):
        replay(gw, "qwen-code/web-search-002-POST-chat-plain-sse.json")
    assert any("side request, not a search turn (task-prompt)" in r.getMessage() and "memory extraction" in r.getMessage()
               for r in caplog.records)


def test_side_requests_are_counted_by_client_family(gateway, fake_model, search_fakes) -> None:
    """searchhub_side_requests_skipped_total{client}: each side request that got no search, once, under
    its client's family; not a main request, nor a side request the client forced to search."""
    gw = ws_gateway(gateway, fake_model, search_fakes)
    fake_model.default = {"content": "Latest Rust release"}

    def skipped(client: str) -> float:
        return value(samples(gw.url), "searchhub_side_requests_skipped_total", client=client)

    before = {c: skipped(c) for c in ("opencode", "qwen-code", "other")}
    replay(gw, "opencode/web-search-001-POST-chat-side-title-sse.json")  # a session title
    replay(gw, "qwen-code/web-search-002-POST-chat-plain-sse.json")  # a memory extraction
    replay(gw, "opencode/web-search-001-POST-chat-side-title-sse.json", {"x-searchhub-web-search": "on"})  # forced
    fake_model.default = {"content": "Rust 1.91.0"}
    replay(gw, "opencode/web-search-002-POST-chat-plain-sse.json")  # the session's main request
    assert {c: skipped(c) - before[c] for c in before} == {"opencode": 1, "qwen-code": 1, "other": 0}


# --- searchhub classify --request ----------------------------------------------------------------


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hub", *args], cwd=ROOT, capture_output=True, text=True,
                          input=stdin, timeout=60)


def test_classify_request_reports_side_and_intent() -> None:
    out = cli("classify", "--request", str(FIXTURES / "opencode/web-search-001-POST-chat-side-title-sse.json"))
    assert out.returncode == 0, out.stderr
    assert "side request:     yes (task-prompt)" in out.stdout
    assert 'title generator' in out.stdout and "injection:        no" in out.stdout
    out = cli("classify", "--request", "-", stdin=json.dumps(recorded("qwen-code/web-search-001-POST-chat-plain-sse.json")["body"]))
    assert "side request:     no" in out.stdout and "client search:    -" in out.stdout
    assert 'en-hard: phrase "search the web"' in out.stdout
    out = cli("classify", "--request", str(FIXTURES / "claude-code/interactive-ws-ok-002-POST-side-structured-sse.json"))
    assert "protocol:         messages" in out.stdout and "(structured-output)" in out.stdout


def test_classify_request_uses_the_operator_rules(tmp_path: Path) -> None:
    cfg = base_config("http://127.0.0.1:9/v1", webSearch={"sideRequests": {"rules": [
        {"name": "titles are turns", "system": "title generator", "decision": "main"}]}})
    (tmp_path / "e.json").write_text(json.dumps(hermetic(cfg)))
    out = cli("classify", "--config", str(tmp_path / "e.json"), "--request",
              str(FIXTURES / "opencode/web-search-001-POST-chat-side-title-sse.json"))
    assert "side request:     no (operator:titles are turns)" in out.stdout, out.stdout + out.stderr


def test_classify_request_bad_input() -> None:
    out = cli("classify", "--request", "-", stdin="{not json")
    assert out.returncode == 1 and "searchhub classify:" in out.stderr and "Traceback" not in out.stderr
    out = cli("classify", "--request", "-", stdin='{"model": "m", "messages": [{"role": 1}]}', )
    assert "Traceback" not in out.stderr


ROLES = st.sampled_from(["system", "developer", "user", "assistant", "tool"])
MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": ROLES, "content": st.text(max_size=30)}),
    st.fixed_dictionaries({"role": ROLES, "content": st.lists(
        st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=20)}), max_size=3)}),
    st.integers(),
)


@given(st.lists(MESSAGE, max_size=8))
def test_shape_reads_the_last_user_message(messages: list) -> None:
    from hub.core.text import text_of
    from hub.injection.side_requests import shape_of

    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    want = text_of(users[-1]["content"], any_part=True)[:600] if users else ""
    assert shape_of({"messages": messages}).last_user == want


@given(st.sampled_from(["Generate a concise title for this conversation.", "You are a coding agent.",
                        "Summarize the conversation so far in two lines."]), st.integers(0, 2))
def test_a_system_prompt_gets_the_same_decision_every_time(system: str, extra: int) -> None:
    """The verdict on a system prompt is kept per prompt: later requests decide the same as the first."""
    body = {"model": "m", "messages": [{"role": "system", "content": system},
                                       {"role": "user", "content": "hi " * extra}]}
    first = classify_side(body)
    assert classify_side(copy.deepcopy(body)) == first
    assert first.side == (not system.startswith("You are"))
