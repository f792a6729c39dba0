"""web_fetch through the real gateway on all three protocols: a self-hosted model (the fake model on
the chat wire) searches and then reads a page of a fake web site on loopback, driven by the official
openai and anthropic SDKs. The site is on 127.0.0.1, so these configs open it through the operator's
allow-list (webFetch.allowHosts / allowPorts); one test proves the default refuses it."""

from __future__ import annotations

import asyncio
import json

import anthropic
import openai
import pytest

from hub.fetcher import ERROR_CODES

from .fakes.search_providers import Reply
from .fakes.web import ARTICLE_TITLE, INJECTION, MAIN_SENTENCES, NAV_WORDS, SCRIPT_TEXT, FakeWeb
from .helpers import base_config, searxng_engine
from .test_mcp import fetch_config, over_http
from .test_metrics import samples, value
from .test_responses_stream import check_events, parse_sse
from .test_traces import ADMIN, CLIENT, admin, wait_trace

FETCH_VERSIONS = ("web_fetch_20250910", "web_fetch_20260209", "web_fetch_20260309", "web_fetch_20260318")
WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search"}




def config(model_url: str, fakes, web: FakeWeb | None, **web_fetch) -> dict:
    """One self-hosted model, SearXNG on the fake providers, and the fake site opened (unless web is None)."""
    opened = {"allowHosts": ["127.0.0.1"], "allowPorts": [web.port]} if web is not None else {}
    return base_config(model_url, webSearch={"engines": [searxng_engine(fakes)], "cacheTtlMs": 0},
                       webFetch={"cacheTtlMs": 0, **opened, **web_fetch})


def hits(web: FakeWeb) -> Reply:
    """A SearXNG answer whose first hit is the site's article."""
    results = [
        {"url": web.origin + "/article", "title": "Kestrel Bridge reopens", "content": "The bridge reopened in March.",
         "engine": "duckduckgo", "score": 2.0, "category": "general"},
        {"url": web.origin + "/notes.txt", "title": "Notes", "content": "Plain notes.", "engine": "duckduckgo",
         "score": 1.0, "category": "general"},
    ]
    return Reply(body={"query": "kestrel bridge", "number_of_results": 2, "results": results, "answers": [],
                       "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []})


def tool_payloads(body: dict) -> list[dict]:
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def fetch_first_hit(body: dict) -> dict:
    """The model reads the first search hit."""
    url = tool_payloads(body)[-1]["results"][0]["url"]
    return {"tool_calls": [{"name": "web_fetch", "arguments": {"url": url}}]}


def cite_the_page(body: dict) -> dict:
    """The model answers from the page it read, citing it by its number."""
    n = tool_payloads(body)[-1]["n"]
    return {"content": f"The Kestrel Bridge reopened in March after eighteen months of reconstruction [{n}]."}


def assert_main_content(text: str) -> None:
    """What the model read is the article, not the page around it."""
    assert all(s in text for s in MAIN_SENTENCES)
    assert not any(w in text for w in NAV_WORDS) and SCRIPT_TEXT not in text


# --- Chat Completions: search, then read a result page ---------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_chat_model_searches_then_reads_a_result_page(gateway, fake_model, search_fakes, site, stream) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    search_fakes.script("searxng", hits(site))
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "kestrel bridge"}}]},
                      fetch_first_hit, cite_the_page)
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    messages = [{"role": "user", "content": "search the web for how the Kestrel Bridge was rebuilt"}]
    if stream:
        text, annotations = "", []
        for chunk in client.chat.completions.create(model="d", messages=messages, stream=True):
            delta = chunk.choices[0].delta if chunk.choices else None
            text += (delta.content or "") if delta else ""
            annotations += (getattr(delta, "annotations", None) or []) if delta else []
    else:
        message = client.chat.completions.create(model="d", messages=messages).choices[0].message
        text, annotations = message.content, message.annotations or []
    article = site.origin + "/article"
    assert text.startswith("The Kestrel Bridge reopened in March")
    cited = [a["url_citation"]["url"] if isinstance(a, dict) else a.url_citation.url for a in annotations]
    assert cited == [article]
    # what the model read: the article's main text, marked untrusted, numbered after the search hits
    page = tool_payloads(fake_model.requests[-1])[-1]
    assert page["n"] == 3 and page["url"] == article and page["title"].startswith(ARTICLE_TITLE)
    assert "untrusted" in page["note"]
    assert_main_content(page["text"])
    assert [t["function"]["name"] for t in fake_model.requests[0]["tools"]] == ["web_search", "web_fetch"]
    assert [path for path, _ in site.requests] == ["/article"]


def test_chat_fetch_of_a_url_the_conversation_never_showed_is_refused(gateway, fake_model, search_fakes,
                                                                       site, caplog) -> None:
    caplog.set_level("INFO", logger="searchhub.fetch")
    gw = gateway(config(fake_model.url, search_fakes, site))
    made_up = site.origin + "/article?leak=secret"
    fake_model.script({"tool_calls": [{"name": "web_fetch", "arguments": {"url": made_up}}]}, {"content": "Sorry."})
    r = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
        model="d", messages=[{"role": "user", "content": "search the web for the bridge"}])
    assert r.choices[0].message.content == "Sorry."
    (refusal,) = tool_payloads(fake_model.requests[-1])
    assert refusal["error_code"] == "url_not_in_prior_context"
    assert site.connections == 0
    # counted by reason, logged without the query string, never a URL in the metrics
    with gw.client() as c:
        exposed = c.get("/metrics").text
    assert 'web_fetch_blocked_total{reason="not_in_context"}' in exposed
    assert 'web_fetch_calls_total{outcome="url_not_in_prior_context"}' in exposed
    assert "leak=" not in exposed
    logged = [r.getMessage() for r in caplog.records if r.name == "searchhub.fetch"]
    assert any("/article -> url_not_in_prior_context" in line for line in logged)
    assert not any("secret" in line for line in logged)


def test_default_config_refuses_the_loopback_site(gateway, fake_model, search_fakes, site) -> None:
    """Without the operator's allow-list a URL the user gave is still refused: it leads to loopback."""
    gw = gateway(config(fake_model.url, search_fakes, None))
    url = site.origin.replace(f":{site.port}", "") + "/article"  # a default port, so only the address check refuses
    fake_model.script({"tool_calls": [{"name": "web_fetch", "arguments": {"url": url}}]}, {"content": "Cannot."})
    openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
        model="d", messages=[{"role": "user", "content": f"search the web and read {url}"}])
    (refusal,) = tool_payloads(fake_model.requests[-1])
    assert refusal["error_code"] == "url_not_allowed" and site.connections == 0


@pytest.mark.parametrize("policy, offered", [("always", ["web_search", "web_fetch"]), ("hosted", ["web_search"]),
                                             ("never", ["web_search"])])
def test_inject_policy(gateway, fake_model, search_fakes, site, policy, offered) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site, injectPolicy=policy))
    openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
        model="d", messages=[{"role": "user", "content": "search the web for the bridge"}])
    assert [t["function"]["name"] for t in fake_model.requests[0]["tools"]] == offered


def test_max_fetches_per_turn_and_the_shared_budget(gateway, fake_model, search_fakes, site) -> None:
    """Per backend: one fetch per turn; the page is cut to what is left of the tool-result budget."""
    cfg = config(fake_model.url, search_fakes, site, perBackend={"local": {"maxFetchesPerTurn": 1}})
    cfg["webSearch"]["maxTotalResultBytes"] = 1024
    gw = gateway(cfg)
    article, notes = site.origin + "/article", site.origin + "/notes.txt"
    fake_model.script({"tool_calls": [{"name": "web_fetch", "arguments": {"url": article}},
                                      {"name": "web_fetch", "arguments": {"url": notes}}]}, {"content": "Done."})
    openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
        model="d", messages=[{"role": "user", "content": f"search the web, read {article} and {notes}"}])
    page, refused = fake_model.requests[-1]["messages"][-2:]
    assert json.loads(refused["content"])["error"].startswith("max_uses_exceeded")
    assert len(page["content"].encode()) <= 1024
    payload = json.loads(page["content"])
    assert payload["truncated"] is True and payload["text"].endswith("…") and MAIN_SENTENCES[0] in payload["text"]
    assert [path for path, _ in site.requests] == ["/article"]


# --- Anthropic Messages: the web_fetch server tool -----------------------------------------------


def sdk(gw) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)


def create(gw, stream: bool, **kw):
    if stream:
        with sdk(gw).messages.stream(**kw) as s:
            return s.get_final_message()
    return sdk(gw).messages.create(**kw)


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_web_fetch_blocks_citations_and_usage(gateway, fake_model, search_fakes, site, stream) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    article = site.origin + "/article"
    fake_model.script({"tool_calls": [{"name": "web_fetch", "arguments": {"url": article}}]},
                      {"content": "The new deck is two metres wider and has a cycle lane [1]."})
    m = create(gw, stream, model="claude-sonnet-4-5", max_tokens=300, messages=[
        {"role": "user", "content": f"What changed on the bridge? {article}"}],
        tools=[{"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 3, "citations": {"enabled": True}}])
    assert [b.type for b in m.content][:2] == ["server_tool_use", "web_fetch_tool_result"]
    use, result = m.content[0], m.content[1]
    assert use.name == "web_fetch" and use.input == {"url": article} and use.id.startswith("srvtoolu_")
    assert result.tool_use_id == use.id and result.content.type == "web_fetch_result"
    assert result.content.url == article and result.content.retrieved_at
    document = result.content.content
    assert document.type == "document" and document.source.media_type == "text/plain"
    assert document.title.startswith(ARTICLE_TITLE) and document.citations.enabled is True
    assert_main_content(document.source.data)
    text = [b for b in m.content[2:] if b.type == "text"]
    assert "".join(b.text for b in text) == "The new deck is two metres wider and has a cycle lane [1]."
    (citation,) = [c for b in text for c in (b.citations or [])]
    assert citation.type == "char_location" and citation.document_index == 0
    assert citation.cited_text == document.source.data[citation.start_char_index:citation.end_char_index]
    assert citation.cited_text == MAIN_SENTENCES[2]  # the sentence that backs the claim
    assert m.usage.server_tool_use.web_fetch_requests == 1 and m.usage.server_tool_use.web_search_requests == 0
    # the backend got only the fetch function (the client offered no search)
    assert [t["function"]["name"] for t in fake_model.requests[0]["tools"]] == ["web_fetch"]


@pytest.mark.parametrize("version", FETCH_VERSIONS)
@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_search_and_fetch_together(gateway, fake_model, search_fakes, site, version, stream) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    search_fakes.script("searxng", hits(site))
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "kestrel bridge"}}]},
                      fetch_first_hit, cite_the_page)
    m = create(gw, stream, model="claude-sonnet-4-5", max_tokens=300,
               messages=[{"role": "user", "content": "How was the Kestrel Bridge rebuilt?"}],
               tools=[WEB_SEARCH, {"type": version, "name": "web_fetch"}])
    assert [b.type for b in m.content][:4] == ["server_tool_use", "web_search_tool_result", "server_tool_use",
                                               "web_fetch_tool_result"]
    assert m.content[3].content.url == site.origin + "/article"
    assert m.content[3].content.content.citations.enabled is False  # citations are off unless asked for
    assert m.usage.server_tool_use.web_search_requests == 1 and m.usage.server_tool_use.web_fetch_requests == 1
    # the page cites as a search hit: the article was hit [1], so its search location backs the claim
    cited = [c for b in m.content if b.type == "text" for c in (b.citations or [])]
    assert cited and all(c.type == "web_search_result_location" for c in cited)
    assert [t["function"]["name"] for t in fake_model.requests[0]["tools"]] == ["web_search", "web_fetch"]


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_fetch_errors_and_max_uses(gateway, fake_model, search_fakes, site, stream) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    shown = site.origin + "/image.png"
    fake_model.script({"tool_calls": [{"name": "web_fetch", "arguments": {"url": shown}}]},
                      {"tool_calls": [{"name": "web_fetch", "arguments": {"url": site.origin + "/made-up"}}]},
                      {"content": "I could not read it."})
    m = create(gw, stream, model="claude-sonnet-4-5", max_tokens=300,
               messages=[{"role": "user", "content": f"Describe {shown}"}],
               tools=[{"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 1}])
    assert [b.type for b in m.content] == ["server_tool_use", "web_fetch_tool_result", "server_tool_use",
                                           "web_fetch_tool_result", "text"]
    assert m.content[1].content.type == "web_fetch_tool_result_error"
    assert m.content[1].content.error_code == "unsupported_content_type"
    assert m.content[3].content.error_code == "max_uses_exceeded"
    assert m.usage.server_tool_use.web_fetch_requests == 1  # the refused call never ran


def test_anthropic_domain_filters_and_bad_tool(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    article = site.origin + "/article"
    fake_model.script({"tool_calls": [{"name": "web_fetch", "arguments": {"url": article}}]}, {"content": "No."})
    m = sdk(gw).messages.create(model="claude-sonnet-4-5", max_tokens=100,
                                messages=[{"role": "user", "content": f"read {article}"}],
                                tools=[{"type": "web_fetch_20250910", "name": "web_fetch",
                                        "allowed_domains": ["example.com"]}])
    assert m.content[1].content.error_code == "url_not_allowed" and site.connections == 0
    with pytest.raises(anthropic.BadRequestError) as e:
        sdk(gw).messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": "x"}],
                                tools=[{"type": "web_fetch_20250910", "name": "web_fetch",
                                        "allowed_domains": ["a.com"], "blocked_domains": ["b.com"]}])
    assert e.value.body["error"]["type"] == "invalid_request_error"


def test_anthropic_replayed_fetch_reaches_the_backend(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    article = site.origin + "/article"
    fake_model.script({"content": "It has a cycle lane."})
    history = [
        {"role": "user", "content": f"read {article}"},
        {"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "srvtoolu_01a", "name": "web_fetch", "input": {"url": article}},
            {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_01a", "content": {
                "type": "web_fetch_result", "url": article, "retrieved_at": "2026-11-23T10:00:00Z",
                "content": {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                                           "data": MAIN_SENTENCES[2]},
                            "title": ARTICLE_TITLE, "citations": {"enabled": True}}}},
            {"type": "text", "text": "Read it."}]},
        {"role": "user", "content": "Does it have a cycle lane?"},
    ]
    sdk(gw).messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=history,
                            tools=[{"type": "web_fetch_20250910", "name": "web_fetch"}])
    sent = fake_model.requests[-1]["messages"]
    call, result = sent[1], sent[2]
    assert call["tool_calls"][0]["function"]["name"] == "web_fetch"
    assert json.loads(call["tool_calls"][0]["function"]["arguments"]) == {"url": article}
    assert result["role"] == "tool" and MAIN_SENTENCES[2] in json.loads(result["content"])["text"]
    assert site.connections == 0  # nothing was fetched again


# --- Responses: fetches as web_search_call open_page / find_in_page ------------------------------


def test_responses_shows_open_page_and_find_in_page(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    search_fakes.script("searxng", hits(site))
    article = site.origin + "/article"
    fake_model.script(
        {"tool_calls": [{"name": "web_search", "arguments": {"query": "kestrel bridge"}}]},
        fetch_first_hit,
        {"tool_calls": [{"name": "web_fetch", "arguments": {"url": article, "find": "kingfishers"}}]},
        cite_the_page)
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    r = client.responses.create(model="d", input="How was the Kestrel Bridge rebuilt?", tools=[{"type": "web_search"}])
    kinds = [(o.type, getattr(o, "action", None) and o.action.type) for o in r.output]
    assert kinds == [("web_search_call", "search"), ("web_search_call", "open_page"),
                     ("web_search_call", "find_in_page"), ("message", None)]
    assert r.output[1].action.url == article
    assert (r.output[2].action.url, r.output[2].action.pattern) == (article, "kingfishers")
    (annotation,) = r.output[3].content[0].annotations
    assert annotation.url == article
    found = tool_payloads(fake_model.requests[-1])[-1]
    assert found["find"] == "kingfishers" and "kingfishers nests" in found["text"]
    assert MAIN_SENTENCES[0] not in found["text"]  # only the passage around the match


def test_codex_style_stream_sees_open_page(gateway, fake_model, search_fakes, site) -> None:
    """Codex's request shape (stream, store false, web_search with external_web_access false)."""
    gw = gateway(config(fake_model.url, search_fakes, site))
    search_fakes.script("searxng", hits(site))
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "kestrel bridge"}}]},
                      fetch_first_hit, cite_the_page)
    body = {"model": "d", "stream": True, "store": False, "tool_choice": "auto", "parallel_tool_calls": True,
            "include": ["reasoning.encrypted_content"], "tools": [{"type": "web_search", "external_web_access": False}],
            "input": [{"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": "How was the Kestrel Bridge rebuilt?"}]}]}
    with gw.client() as c:
        resp = c.post("/v1/responses", json=body)
    assert resp.status_code == 200
    events = parse_sse(resp.content)
    final = check_events(events)
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [(i["type"], i.get("action", {}).get("type")) for i in done] == [
        ("web_search_call", "search"), ("web_search_call", "open_page"), ("message", None)]
    assert done[1]["action"] == {"type": "open_page", "url": site.origin + "/article"}
    opened = [e for e in events if e.get("item_id") == done[1]["id"]]
    assert [e["type"] for e in opened] == ["response.web_search_call.in_progress", "response.web_search_call.searching",
                                           "response.web_search_call.completed"]
    assert final["output"][1]["action"]["type"] == "open_page"
    assert INJECTION not in json.dumps(final)  # the page text never reaches the client


def test_fetches_are_traced_without_query_strings(gateway, fake_model, search_fakes, site) -> None:
    cfg = config(fake_model.url, search_fakes, site)
    cfg["server"].update({"apiKeys": [CLIENT], "adminKeys": [ADMIN]})
    gw = gateway(cfg)
    url = site.origin + "/article?token=hunter2"
    fake_model.script({"tool_calls": [{"name": "web_fetch", "arguments": {"url": url}}]}, {"content": "Read."})
    openai.OpenAI(base_url=gw.url + "/v1", api_key=CLIENT, max_retries=0).chat.completions.create(
        model="d", messages=[{"role": "user", "content": f"search the web and read {url}"}])
    row = wait_trace(gw)[0]
    trace = admin(gw, f"/admin/traces/{row['id']}").json()
    (call,) = trace["calls"]
    assert call["tool"] == "web_fetch" and call["url"] == site.origin + "/article" and call["outcome"] == "ok"
    assert "hunter2" not in json.dumps(trace["calls"])  # (the answer's sources list the cited URL as the client sees it)


def test_a_keys_fetch_budget(gateway, fake_model, search_fakes, site) -> None:
    """fetchesPerDay: the key's second fetch of the day is refused before anything is fetched."""
    cfg = config(fake_model.url, search_fakes, site)
    cfg["server"]["apiKeys"] = [{"key": CLIENT, "name": "bot", "fetchesPerDay": 1}]
    gw = gateway(cfg)
    article = site.origin + "/article"
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key=CLIENT, max_retries=0)
    seen = []
    for _ in range(2):
        fake_model.script({"tool_calls": [{"name": "web_fetch", "arguments": {"url": article}}]}, {"content": "ok"})
        client.chat.completions.create(model="d", messages=[{"role": "user", "content": f"search the web, read {article}"}])
        seen.append(tool_payloads(fake_model.requests[-1])[-1])
    assert seen[0]["url"] == article and MAIN_SENTENCES[0] in seen[0]["text"]
    assert seen[1]["error_code"] == "too_many_requests"
    assert [path for path, _ in site.requests] == ["/article"]  # the second fetch never left the gateway


# --- searchhub_fetches_total: every fetch the fetcher runs, whichever door it came in by ----------


def fetch_deltas(gw, act) -> dict[str, float]:
    """How much each searchhub_fetches_total outcome grew while act() ran (the registry is shared by
    every gateway this process started, so only differences tell)."""
    before = samples(gw.url)
    act()
    after = samples(gw.url)
    outcomes = ("ok", *ERROR_CODES)
    for outcome in outcomes:  # listed at 0 from the start, so a rate() has them before the first fetch
        assert ("searchhub_fetches_total", (("outcome", outcome),)) in before, outcome
    return {o: value(after, "searchhub_fetches_total", outcome=o) - value(before, "searchhub_fetches_total", outcome=o)
            for o in outcomes}


def test_fetches_count_in_searchhub_fetches_total(gateway, fake_model, search_fakes, site) -> None:
    gw = gateway(config(fake_model.url, search_fakes, site))
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)

    def read_the_article() -> None:
        search_fakes.script("searxng", hits(site))
        fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "kestrel bridge"}}]},
                          fetch_first_hit, cite_the_page)
        client.chat.completions.create(model="d", messages=[
            {"role": "user", "content": "search the web for how the Kestrel Bridge was rebuilt"}])
        assert tool_payloads(fake_model.requests[-1])[-1]["url"] == site.origin + "/article"

    deltas = fetch_deltas(gw, read_the_article)
    assert deltas == {o: (1 if o == "ok" else 0) for o in deltas}

    # the conversation shows it and its port is open (allowPorts): the address policy refuses it
    private = f"http://10.20.30.40:{site.port}/admin"

    def read_a_private_address() -> None:
        fake_model.script({"tool_calls": [{"name": "web_fetch", "arguments": {"url": private}}]}, {"content": "No."})
        client.chat.completions.create(model="d", messages=[
            {"role": "user", "content": f"search the web, then read {private}"}])
        (refusal,) = tool_payloads(fake_model.requests[-1])
        assert refusal["error_code"] == "url_not_allowed"

    blocked_before = value(samples(gw.url), "web_fetch_blocked_total", reason="private")
    deltas = fetch_deltas(gw, read_a_private_address)
    assert deltas == {o: (1 if o == "url_not_allowed" else 0) for o in deltas}
    assert value(samples(gw.url), "web_fetch_blocked_total", reason="private") - blocked_before == 1


def test_mcp_fetches_count_in_searchhub_fetches_total(gateway, fake_model, search_fakes, site) -> None:
    """The MCP web_fetch (hub/fetcher/direct.py) goes through the same fetcher, so it counts the same."""
    gw = gateway(fetch_config(fake_model.url, search_fakes, site))

    def fetch_twice() -> None:
        async def go(session):
            return [await session.call_tool("web_fetch", {"url": u})
                    for u in (site.origin + "/article", f"http://10.20.30.40:{site.port}/admin")]

        page, refused = asyncio.run(over_http(gw.url, None, go))
        assert not page.is_error and refused.structured_content["code"] == "url_not_allowed"

    blocked_before = value(samples(gw.url), "web_fetch_blocked_total", reason="private")
    deltas = fetch_deltas(gw, fetch_twice)
    assert deltas == {o: (1 if o in ("ok", "url_not_allowed") else 0) for o in deltas}
    assert value(samples(gw.url), "web_fetch_blocked_total", reason="private") - blocked_before == 1
