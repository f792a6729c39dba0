"""The server-tool fields of 2026 (issue 28; /work/shared/reference/protocols-2026-11.md §1 and §2),
through the real gateway on loopback, driven by the official anthropic and openai SDKs, in front of
the fake model, the fake search providers and the fake web site:

- Anthropic `web_search_*` / `web_fetch_*` (every version, and one not known yet): `allowed_callers`
  (a tool only for code execution is not offered to the model), `defer_loading`, `strict`,
  `response_inclusion`, `use_cache` and `url_sources` are accepted; `url_sources` is honoured; every
  server tool block carries `caller: {"type": "direct"}`, streamed or not;
- Responses: `include: ["web_search_call.results"]` lists what each call brought back on its item,
  and `action.queries` lists the call's queries beside `query`.
"""

from __future__ import annotations

import anthropic
import openai
import pytest

from .fakes.search_providers import CORPUS
from .test_responses_gateway import WEATHER
from .test_responses_gateway import sdk as openai_sdk
from .test_responses_gateway import ws_config as serper_config
from .test_responses_stream import check_events, parse_sse
from .test_web_fetch_gateway import cite_the_page, config, fetch_first_hit, hits

SEARCH_VERSIONS = ("web_search_20250305", "web_search_20260209", "web_search_20260318", "web_search_20991231")
FETCH_VERSIONS = ("web_fetch_20250910", "web_fetch_20260209", "web_fetch_20260309", "web_fetch_20260318",
                  "web_fetch_20991231")
GET_PAGES = {"name": "get_pages", "description": "Pages the user bookmarked.",
             "input_schema": {"type": "object", "properties": {}}}
FETCH = {"type": "web_fetch_20260318", "name": "web_fetch"}
SEARCH = {"type": "web_search_20260318", "name": "web_search"}


def sdk(gw) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)


def create(gw, stream: bool, **kw):
    """The SDK's Message, streamed (assembled by the SDK from the events) or not."""
    kw.setdefault("model", "claude-sonnet-4-5")
    kw.setdefault("max_tokens", 300)
    if stream:
        with sdk(gw).messages.stream(**kw) as s:
            return s.get_final_message()
    return sdk(gw).messages.create(**kw)


def offered(fake_model, i: int = 0) -> list[str]:
    """The function names the fake model was offered in its i-th request."""
    return [t["function"]["name"] for t in fake_model.requests[i].get("tools") or ()]


def assert_direct(message) -> None:
    server_blocks = [b for b in message.content if b.type in ("server_tool_use", "web_search_tool_result",
                                                              "web_fetch_tool_result")]
    assert server_blocks
    assert all(b.caller is not None and b.caller.type == "direct" for b in server_blocks), server_blocks


# --- Anthropic: the fields are accepted on every version ----------------------------------------


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("version", SEARCH_VERSIONS)
def test_search_tool_fields_on_every_version(gateway, fake_model, search_fakes, site, version, stream) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    search_fakes.script("searxng", hits(site))
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "kestrel bridge"}}]},
                      {"content": "It reopened in March [1]."})
    tool = {"type": version, "name": "web_search", "max_uses": 2, "allowed_callers": ["direct", "code_execution_20250825"],
            "defer_loading": True, "strict": True, "response_inclusion": "excluded"}
    m = create(gw, stream, tools=[tool], messages=[{"role": "user", "content": "Is the Kestrel Bridge open?"}])
    assert [b.type for b in m.content][:2] == ["server_tool_use", "web_search_tool_result"]
    assert [r.url for r in m.content[1].content][0] == site.origin + "/article"
    assert_direct(m)  # a direct call's results are returned whatever response_inclusion says
    assert m.usage.server_tool_use.web_search_requests == 1
    assert offered(fake_model) == ["web_search"]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_fetch_tool_fields_on_every_version(gateway, fake_model, search_fakes, site, version, stream) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    article = site.origin + "/article"
    fake_model.script({"tool_calls": [{"name": "web_fetch", "arguments": {"url": article}}]},
                      {"content": "It has a cycle lane [1]."})
    tool = {"type": version, "name": "web_fetch", "allowed_callers": ["direct"], "defer_loading": True,
            "strict": False, "response_inclusion": "full", "use_cache": False,
            "url_sources": {"user_input": {"type": "all"}, "server_tool_results": {"type": "all"},
                            "client_tool_results": {"type": "none"}}}
    m = create(gw, stream, tools=[tool], messages=[{"role": "user", "content": f"What changed? {article}"}])
    assert [b.type for b in m.content][:2] == ["server_tool_use", "web_fetch_tool_result"]
    assert m.content[1].content.type == "web_fetch_result" and m.content[1].content.url == article
    assert_direct(m)
    assert offered(fake_model) == ["web_fetch"]


def test_caller_is_on_the_streamed_block_starts(gateway, fake_model, search_fakes, site) -> None:
    """In the stream, the caller comes with each block's content_block_start (what the SDK builds from)."""
    gw = gateway(config(fake_model.url, search_fakes, site))
    search_fakes.script("searxng", hits(site))
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "kestrel bridge"}}]},
                      fetch_first_hit, cite_the_page)
    with sdk(gw).messages.stream(model="claude-sonnet-4-5", max_tokens=300, tools=[SEARCH, FETCH],
                                 messages=[{"role": "user", "content": "How was the bridge rebuilt?"}]) as s:
        starts = [e.content_block for e in s if e.type == "content_block_start"]
    server = [b for b in starts if b.type != "text"]
    assert [b.type for b in server] == ["server_tool_use", "web_search_tool_result", "server_tool_use",
                                        "web_fetch_tool_result"]
    assert all(b.caller.type == "direct" for b in server)


# --- Anthropic: allowed_callers ------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_a_search_tool_only_for_code_execution_is_not_offered(gateway, fake_model, search_fakes, site,
                                                               stream) -> None:
    cfg = config(fake_model.url, search_fakes, site)
    cfg["webSearch"]["injectPolicy"] = "always"  # not even the gateway's own search: the client said who may search
    gw = gateway(cfg)
    fake_model.script({"content": "I cannot search here."})
    m = create(gw, stream, messages=[{"role": "user", "content": "search the web for kestrel bridge news"}], tools=[
        {**SEARCH, "allowed_callers": ["code_execution_20250825"]},
        {"type": "code_execution_20250825", "name": "code_execution"}, GET_PAGES])
    assert [b.type for b in m.content] == ["text"] and m.content[0].text == "I cannot search here."
    assert offered(fake_model) == ["get_pages"]
    assert search_fakes.calls("searxng") == []


def test_code_execution_only_tools_leave_the_direct_ones(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    fake_model.script({"content": "ok"}, {"content": "ok"}, {"content": "ok"})
    question = [{"role": "user", "content": "search the web for kestrel bridge"}]
    sdk(gw).messages.create(model="m", max_tokens=50, messages=question, tools=[
        {**SEARCH, "allowed_callers": ["code_execution_20260120"]}, {**FETCH, "allowed_callers": ["direct"]}])
    sdk(gw).messages.create(model="m", max_tokens=50, messages=question, tools=[
        {**SEARCH, "allowed_callers": ["direct", "code_execution_20260521"]}, {**FETCH, "allowed_callers": []}])
    # Claude Code's WebSearch side call, its one tool for code execution only: not answered as a search
    sdk(gw).messages.create(model="m", max_tokens=50, tools=[{**SEARCH, "allowed_callers": ["code_execution_20250825"]}],
                            messages=[{"role": "user", "content": "Perform a web search for the query: kestrel"}])
    assert [offered(fake_model, i) for i in range(3)] == [["web_fetch"], ["web_search"], []]
    assert search_fakes.calls("searxng") == []


# --- Anthropic: url_sources ----------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("none", ["none", {"type": "none"}])
def test_user_input_none_refuses_a_url_from_the_users_text(gateway, fake_model, search_fakes, site, none,
                                                          stream) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    article = site.origin + "/article"
    fake_model.script({"tool_calls": [{"name": "web_fetch", "arguments": {"url": article}}]},
                      {"content": "I may not read that page."})
    m = create(gw, stream, messages=[{"role": "user", "content": f"Read {article}"}],
               tools=[{**FETCH, "url_sources": {"user_input": none}}])
    assert [b.type for b in m.content] == ["server_tool_use", "web_fetch_tool_result", "text"]
    assert m.content[1].content.type == "web_fetch_tool_result_error"
    assert m.content[1].content.error_code == "url_not_in_prior_context"
    assert site.connections == 0


def test_user_input_none_holds_when_the_operator_turned_the_rule_off(gateway, fake_model, search_fakes,
                                                                     site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site, requirePriorContext=False))
    article = site.origin + "/article"
    fake_model.script({"tool_calls": [{"name": "web_fetch", "arguments": {"url": article}}]}, {"content": "No."},
                      {"tool_calls": [{"name": "web_fetch", "arguments": {"url": site.origin + "/notes.txt"}}]},
                      {"content": "Read."})
    refused = sdk(gw).messages.create(model="m", max_tokens=100, messages=[{"role": "user", "content": f"Read {article}"}],
                                      tools=[{**FETCH, "url_sources": {"user_input": "none"}}])
    assert refused.content[1].content.error_code == "url_not_in_prior_context" and site.connections == 0
    read = sdk(gw).messages.create(model="m", max_tokens=100, messages=[{"role": "user", "content": "Read anything"}],
                                   tools=[FETCH])  # the operator's choice stands when the client narrows nothing
    assert read.content[1].content.type == "web_fetch_result"


SERVER_TOOL_RESULTS = [  # (url_sources.server_tool_results, whether a search hit may then be read)
    ({"type": "only", "tools": [{"type": "tool_reference", "name": "web_search"}]}, True),
    ({"type": "except", "tools": [{"type": "tool_reference", "name": "web_fetch"}]}, True),
    ({"type": "except", "tools": [{"type": "tool_reference", "name": "web_search"}]}, False),
    ({"type": "only", "tools": [{"type": "tool_reference", "name": "web_fetch"}]}, False),
    ("none", False),
]


def test_server_tool_results_decide_whether_a_search_hit_may_be_read(gateway, fake_model, search_fakes,
                                                                     site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    for server_tool_results, fetched in SERVER_TOOL_RESULTS:
        search_fakes.script("searxng", hits(site))
        fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "kestrel bridge"}}]},
                          fetch_first_hit, {"content": "Done."})
        site.reset()
        m = sdk(gw).messages.create(model="m", max_tokens=300, tools=[SEARCH, {**FETCH, "url_sources": {
            "user_input": "none", "server_tool_results": server_tool_results}}],
            messages=[{"role": "user", "content": "How was the Kestrel Bridge rebuilt?"}])
        assert [b.type for b in m.content][:4] == ["server_tool_use", "web_search_tool_result", "server_tool_use",
                                                   "web_fetch_tool_result"]
        result = m.content[3].content
        if fetched:
            assert result.type == "web_fetch_result" and result.url == site.origin + "/article", server_tool_results
        else:
            assert result.error_code == "url_not_in_prior_context" and site.connections == 0, server_tool_results


CLIENT_TOOL_RESULTS = [  # (url_sources.client_tool_results, whether a URL the client's tool gave may be read)
    (None, True),
    ({"type": "only", "tools": [{"type": "tool_reference", "name": "get_pages"}]}, True),
    ({"type": "none"}, False),
    ({"type": "except", "tools": [{"type": "tool_reference", "name": "get_pages"}]}, False),
]


def test_client_tool_results_decide_whether_a_url_a_client_tool_gave_may_be_read(gateway, fake_model, search_fakes,
                                                                                 site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    article = site.origin + "/article"
    for client_tool_results, fetched in CLIENT_TOOL_RESULTS:
        fake_model.script({"tool_calls": [{"name": "web_fetch", "arguments": {"url": article}}]}, {"content": "Done."})
        site.reset()
        sources = {"user_input": "none", **({"client_tool_results": client_tool_results} if client_tool_results else {})}
        m = sdk(gw).messages.create(model="m", max_tokens=300, tools=[GET_PAGES, {**FETCH, "url_sources": sources}],
                                    messages=[
            {"role": "user", "content": "Read my first bookmark."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "get_pages", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": article}]}])
        result = m.content[1].content
        if fetched:
            assert result.type == "web_fetch_result" and result.url == article, client_tool_results
        else:
            assert result.error_code == "url_not_in_prior_context" and site.connections == 0, client_tool_results


@pytest.mark.parametrize(("tool", "path"), [
    ({**FETCH, "url_sources": {"user_input": "some"}}, "tools.0.url_sources.user_input"),
    ({**FETCH, "url_sources": {"user_input": {"type": "only", "tools": []}}}, "tools.0.url_sources.user_input.type"),
    ({**FETCH, "url_sources": ["all"]}, "tools.0.url_sources"),
    ({**FETCH, "url_sources": {"server_tool_results": {"type": "only"}}}, "tools.0.url_sources.server_tool_results.tools"),
    ({**FETCH, "url_sources": {"client_tool_results": {"type": "only", "tools": [
        {"type": "tool_reference", "name": "nowhere"}]}}}, "tools.0.url_sources.client_tool_results.tools.0.name"),
    ({**FETCH, "allowed_callers": "direct"}, "tools.0.allowed_callers"),
    ({**SEARCH, "defer_loading": "yes"}, "tools.0.defer_loading"),
    ({**SEARCH, "strict": 1}, "tools.0.strict"),
    ({**SEARCH, "response_inclusion": 0}, "tools.0.response_inclusion"),
    ({**FETCH, "use_cache": "no"}, "tools.0.use_cache"),
])
def test_malformed_fields_are_a_400_naming_them(gateway, fake_model, search_fakes, site, tool, path) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    with pytest.raises(anthropic.BadRequestError) as e:
        sdk(gw).messages.create(model="m", max_tokens=50, tools=[tool], messages=[{"role": "user", "content": "x"}])
    assert e.value.body["error"]["type"] == "invalid_request_error"
    assert e.value.body["error"]["message"].startswith(path + ":"), e.value.body
    assert fake_model.requests == []


# --- Responses: include web_search_call.results, action.queries -----------------------------------


def search_then_answer(fake_model) -> None:
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "latest rust release"}}]},
                      {"content": "Rust 1.91.0 is the latest stable release [1]."})


@pytest.mark.parametrize("stream", [False, True])
def test_include_results_lists_them_on_the_item(gateway, fake_model, search_fakes, stream) -> None:
    gw = gateway(serper_config(fake_model.url, (search_fakes, search_fakes.server)))
    search_then_answer(fake_model)
    kw = dict(model="default", input="What is the latest Rust release?", store=False,
              include=["web_search_call.action.sources", "web_search_call.results"],
              tools=[{"type": "web_search", "search_context_size": "low"}])
    if stream:
        with gw.client() as c:
            events = parse_sse(c.post("/v1/responses", json={**kw, "stream": True}).content)
        body = check_events(events)
        (done,) = [e["item"] for e in events if e["type"] == "response.output_item.done"
                   and e["item"]["type"] == "web_search_call"]
        (added,) = [e["item"] for e in events if e["type"] == "response.output_item.added"
                    and e["item"]["type"] == "web_search_call"]
        assert "results" not in added and added["action"]["queries"] == ["latest rust release"]
        assert body["output"][0] == done
    else:
        r = openai_sdk(gw).responses.create(**kw)
        body = r.model_dump(exclude_unset=True)
        done = body["output"][0]
    assert done["action"]["query"] == "latest rust release" and done["action"]["queries"] == ["latest rust release"]
    results = done["results"]
    # the engine's hits, the mirror URL folded into the first (the same as action.sources)
    assert [x["url"] for x in results] == [s["url"] for s in done["action"]["sources"]] == [u for _, u, _, _ in CORPUS[:2]]
    assert results[0]["title"] == CORPUS[0][0] and "The Rust team is happy to announce" in results[0]["snippet"]
    openai.types.responses.Response.model_validate(body)


def test_without_include_no_results_but_queries(gateway, fake_model, search_fakes) -> None:
    gw = gateway(serper_config(fake_model.url, (search_fakes, search_fakes.server)))
    search_then_answer(fake_model)
    r = openai_sdk(gw).responses.create(model="default", input="latest rust?", tools=[{"type": "web_search"}, WEATHER])
    item = r.output[0].model_dump(exclude_unset=True)
    assert "results" not in item and item["action"]["queries"] == ["latest rust release"]
    assert r.output[0].action.queries == ["latest rust release"]  # the SDK's own field


def test_include_must_be_an_array_of_strings(gateway, fake_model, search_fakes) -> None:
    gw = gateway(serper_config(fake_model.url, (search_fakes, search_fakes.server)))
    for include, param in (("web_search_call.results", "include"), (["web_search_call.results", 3], "include[1]")):
        with pytest.raises(openai.BadRequestError) as e:
            openai_sdk(gw).responses.create(model="default", input="x", tools=[{"type": "web_search"}],
                                            extra_body={"include": include})
        assert e.value.body["param"] == param
    assert fake_model.requests == []
