"""webSearch.readPages through the real gateway: the engine answers with teasers only, the facts sit deep in
the result pages (tests/fakes/web.py), and what counts is whether they reach the model's tool result,
on chat, on Responses with the hosted web_search and on Messages with web_search_20250305."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import anthropic
import httpx
import openai
import pytest

from .fakes.search_providers import Reply
from .fakes.web import DEEP_FACT, DEEP_FACT_ZH, FakeWeb
from .helpers import ROOT, base_config, searxng_engine
from .test_mcp import over_http
from .test_metrics import samples, value
from .test_traces import ADMIN, CLIENT, admin, wait_trace

QUESTION = "How many passengers did the Varnholt ferry carry in its first season?"


def config(model_url: str, fakes, web: FakeWeb, read: dict | None = None, **web_search) -> dict:
    cfg = base_config(model_url, webSearch={"engines": [searxng_engine(fakes)], "cacheTtlMs": 0,
                                            "injectPolicy": "always", "readPages": read if read is not None else {},
                                            **web_search},
                      webFetch={"cacheTtlMs": 0, "allowHosts": ["127.0.0.1"], "allowPorts": [web.port]})
    return cfg


def teasers(web: FakeWeb, *paths: str) -> Reply:
    """A SearXNG answer with one hit per path; each snippet is the page's opening, never its fact."""
    results = [{"url": web.origin + p, "title": f"Page {p}", "content": "The harbour museum keeps records.",
                "engine": "duckduckgo", "score": 1.0, "category": "general"} for p in paths]
    return Reply(body={"query": "q", "number_of_results": len(results), "results": results, "answers": [],
                       "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []})


def tool_results(body: dict) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def search_then_answer(fake_model) -> None:
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": QUESTION}}]},
                      {"content": "41,862 passengers [1]."})


@pytest.mark.parametrize("stream", [False, True])
def test_chat_tool_result_carries_the_passage_with_the_fact(gateway, fake_model, search_fakes, site, stream):
    gw = gateway(config(fake_model.url, search_fakes, site))
    search_fakes.script("searxng", teasers(site, "/deep", "/article"))
    search_then_answer(fake_model)
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    out = client.chat.completions.create(model="default", messages=[{"role": "user", "content": QUESTION}],
                                         stream=stream)
    if stream:
        "".join(c.choices[0].delta.content or "" for c in out if c.choices)
    (result,) = tool_results(fake_model.requests[-1])
    payload = json.loads(result)
    first = payload["results"][0]
    assert DEEP_FACT in " ".join(first["excerpts"]) and "snippet" not in first
    assert payload["note"]  # marked untrusted like every result
    assert len(result) <= 9000


def test_reading_off_gives_snippets_only(gateway, fake_model, search_fakes, site):
    gw = gateway(config(fake_model.url, search_fakes, site, read={"enabled": False}))
    search_fakes.script("searxng", teasers(site, "/deep"))
    search_then_answer(fake_model)
    openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
        model="default", messages=[{"role": "user", "content": QUESTION}])
    (result,) = tool_results(fake_model.requests[-1])
    assert DEEP_FACT not in result and json.loads(result)["results"][0]["snippet"]
    assert not any(path == "/deep" for path, _ in site.requests)


def test_chinese_question_finds_the_chinese_passage(gateway, fake_model, search_fakes, site):
    gw = gateway(config(fake_model.url, search_fakes, site))
    search_fakes.script("searxng", teasers(site, "/deep-zh"))
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "青澜湖观测站2019年最低水位是多少"}}]},
                      {"content": "3.72米"})
    openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
        model="default", messages=[{"role": "user", "content": "青澜湖观测站2019年记录的最低水位是多少？"}])
    (result,) = tool_results(fake_model.requests[-1])
    assert DEEP_FACT_ZH in " ".join(json.loads(result)["results"][0]["excerpts"])


def test_responses_hosted_search_context_size(gateway, fake_model, search_fakes, site):
    """medium reads the pages; low is snippets only (the backend model sees the difference)."""
    gw = gateway(config(fake_model.url, search_fakes, site))
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    for size, reads in (("medium", True), ("low", False)):
        search_fakes.script("searxng", teasers(site, "/deep"))
        search_then_answer(fake_model)
        r = client.responses.create(model="default", input=QUESTION,
                                    tools=[{"type": "web_search", "search_context_size": size}])
        assert r.output_text
        (result,) = tool_results(fake_model.requests[-1])
        assert (DEEP_FACT in result) is reads, size


@pytest.mark.parametrize("stream", [False, True])
def test_messages_hosted_search_model_sees_passages_blocks_keep_their_shape(gateway, fake_model, search_fakes,
                                                                             site, stream):
    gw = gateway(config(fake_model.url, search_fakes, site))
    search_fakes.script("searxng", teasers(site, "/deep"))
    search_then_answer(fake_model)
    client = anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0)
    kw = dict(model="claude-sonnet-4-5", max_tokens=200, messages=[{"role": "user", "content": QUESTION}],
              tools=[{"type": "web_search_20250305", "name": "web_search"}])
    if stream:
        with client.messages.stream(**kw) as s:
            message = s.get_final_message()
    else:
        message = client.messages.create(**kw)
    (result,) = tool_results(fake_model.requests[-1])
    assert DEEP_FACT in result
    (block,) = [b for b in message.content if b.type == "web_search_tool_result"]
    hit = block.content[0]
    assert hit.type == "web_search_result" and hit.url == site.origin + "/deep"
    assert set(hit.model_dump(exclude_none=True)) <= {"type", "url", "title", "encrypted_content", "page_age"}


def test_a_hanging_page_costs_at_most_the_timeout_and_the_others_arrive(gateway, fake_model, search_fakes, site):
    gw = gateway(config(fake_model.url, search_fakes, site, read={"timeoutMs": 800}))
    search_fakes.script("searxng", teasers(site, "/hang", "/deep"))
    search_then_answer(fake_model)
    started = time.monotonic()
    openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
        model="default", messages=[{"role": "user", "content": QUESTION}])
    elapsed = time.monotonic() - started
    (result,) = tool_results(fake_model.requests[-1])
    hang, deep = json.loads(result)["results"]
    assert "snippet" in hang and "excerpts" not in hang  # the late page keeps its snippet
    assert DEEP_FACT in " ".join(deep["excerpts"])
    assert elapsed < 0.8 + 2.5, elapsed  # the page's timeout, plus the rest of a loopback turn


def test_pages_read_are_traced_counted_and_budgeted(gateway, fake_model, search_fakes, site):
    cfg = config(fake_model.url, search_fakes, site)
    cfg["server"] = {**cfg["server"], "apiKeys": [{"key": CLIENT, "name": "team", "fetchesPerDay": 1}],
                     "adminKeys": [ADMIN]}
    cfg["trace"] = {"enabled": True}
    gw = gateway(cfg)
    search_fakes.script("searxng", teasers(site, "/deep", "/report.pdf", "/image.png"))
    search_then_answer(fake_model)
    before = samples(gw.url)
    openai.OpenAI(base_url=gw.url + "/v1", api_key=CLIENT, max_retries=0).chat.completions.create(
        model="default", messages=[{"role": "user", "content": QUESTION}])
    (row,) = wait_trace(gw)
    trace = admin(gw, f"/admin/traces/{row['id']}").json()
    (call,) = [c for c in trace["calls"] if c.get("pages")]
    outcomes = {p["url"].rsplit("/", 1)[-1]: p["outcome"] for p in call["pages"]}
    # one fetch left in the day's budget: the first page is read, the PDF is refused, the image is skipped
    assert outcomes == {"deep": "ok", "report.pdf": "budget", "image.png": "skipped"}
    ok = [p for p in call["pages"] if p["outcome"] == "ok"][0]
    assert ok["chars"] > 0 and ok["ms"] >= 0
    after = samples(gw.url)
    for outcome in ("ok", "budget", "skipped"):
        added = (value(after, "searchhub_pages_read_total", outcome=outcome)
                 - value(before, "searchhub_pages_read_total", outcome=outcome))
        assert added == 1, outcome


def test_blocked_pages_keep_their_snippets(gateway, fake_model, search_fakes, site):
    """The SSRF policy holds for pages read after a search: without the allow-list, loopback is refused."""
    cfg = config(fake_model.url, search_fakes, site)
    cfg["webFetch"] = {"cacheTtlMs": 0}
    gw = gateway(cfg)
    search_fakes.script("searxng", teasers(site, "/deep"))
    search_then_answer(fake_model)
    openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
        model="default", messages=[{"role": "user", "content": QUESTION}])
    (result,) = tool_results(fake_model.requests[-1])
    assert DEEP_FACT not in result and site.connections == 0


def test_the_default_config_reads_pages():
    from hub import config as cfgmod
    from hub.runtime import PLUGINS

    cfg = base_config("http://127.0.0.1:9/v1")
    read = cfgmod.parse(json.dumps(cfg), env={}, plugins=PLUGINS).web_search.limits.read_pages
    assert (read.enabled, read.top, read.timeout_s, read.max_chars) == (True, 3, 4.0, 2000)


def test_per_backend_override(gateway, fake_model, search_fakes, site):
    gw = gateway(config(fake_model.url, search_fakes, site, perBackend={"local": {"readPages": {"enabled": False}}}))
    search_fakes.script("searxng", teasers(site, "/deep"))
    search_then_answer(fake_model)
    openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
        model="default", messages=[{"role": "user", "content": QUESTION}])
    assert DEEP_FACT not in tool_results(fake_model.requests[-1])[0]


def test_bad_read_pages_config_is_refused():
    from hub import config as cfgmod
    from hub.runtime import PLUGINS

    with pytest.raises(cfgmod.ConfigError) as e:
        cfgmod.parse(json.dumps(base_config("http://127.0.0.1:9/v1", webSearch={"readPages": {"top": 0, "x": 1}})),
                     env={}, plugins=PLUGINS)
    assert "readPages" in str(e.value)


def test_search_api_reads_pages_when_asked(gateway, fake_model, search_fakes, site):
    gw = gateway(config(fake_model.url, search_fakes, site))
    for read_pages, reads in ((True, True), (None, False)):
        search_fakes.script("searxng", teasers(site, "/deep"))
        body = {"query": QUESTION} | ({"read_pages": read_pages} if read_pages is not None else {})
        r = httpx.post(gw.url + "/v1/search", json=body, timeout=30)
        assert r.status_code == 200, r.text
        (hit,) = r.json()["hits"]
        assert (DEEP_FACT in " ".join(hit.get("passages") or [])) is reads


def test_mcp_web_search_reads_pages_unless_told_not_to(gateway, fake_model, search_fakes, site):
    gw = gateway(config(fake_model.url, search_fakes, site))

    async def work(session):
        out = []
        for arguments in ({"query": QUESTION}, {"query": QUESTION, "read_pages": False}):
            search_fakes.script("searxng", teasers(site, "/deep"))
            out.append(await session.call_tool("web_search", arguments))
        return out

    read, unread = asyncio.run(over_http(gw.url, None, work))
    assert not read.is_error and DEEP_FACT in read.content[0].text
    assert read.structured_content["hits"][0]["passages"]
    assert DEEP_FACT not in unread.content[0].text and "passages" not in unread.structured_content["hits"][0]


def test_codex_standalone_search_reads_pages(gateway, fake_model, search_fakes, site):
    """POST /v1/alpha/search: each hit under its ref id carries the page's passages; "low" keeps snippets."""
    gw = gateway(config(fake_model.url, search_fakes, site))
    for size, reads in (("medium", True), ("low", False)):
        search_fakes.script("searxng", teasers(site, "/deep"))
        r = httpx.post(gw.url + "/v1/alpha/search", timeout=30, json={
            "id": f"thread-{size}", "commands": {"search_query": [{"q": QUESTION}]},
            "settings": {"search_context_size": size}})
        assert r.status_code == 200
        output = r.json()["output"]
        assert "turn0search0" in output and (DEEP_FACT in output) is reads, output


def test_extracting_a_page_never_loads_dateparser():
    """trafilatura's extensive date search runs dateparser over ~400 locales (about 2 s for the first
    page in a language); the fetcher asks for no such search, as the result carries no date."""
    page = ROOT / "bench" / "grounding" / "corpus" / "pages" / "zh01-answer.html"  # dates in its text
    code = ("import sys; from hub.fetcher.extract import extract; "
            f"d = extract('html', open({str(page)!r}, 'rb').read(), 'text/html; charset=utf-8', 'http://x/', 50000); "
            "assert len(d.text) > 1000; print('dateparser' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
