"""Search-capable models beyond GLM and Gemini, as engines through the web_search route: Qwen on
DashScope, Kimi's $web_search round trip, Perplexity Sonar, OpenAI (chat search models and the
Responses web_search tool) and Claude's web_search_20250305. Each answers a secondary call with hits;
failover between families sends each target its own request."""

from __future__ import annotations

import asyncio
import json

import pytest

from hub.config import ConfigError, parse
from hub.routing.router import Cooldowns
from hub.runtime import PLUGINS
from hub.search.base import SearchRequest
from hub.search.render import tool_text

from .fakes.search_model_families import BLOG, KEYS, KIMI_ARGUMENTS, RELEASES, WIKI, error_block
from .fakes.search_providers import Reply, config_with, search_service

MODELS = {"dashscope": "qwen-plus", "moonshot": "kimi-k2-turbo-preview", "perplexity": "sonar",
          "openai": "gpt-5-mini", "anthropic": "claude-haiku-4-5"}


@pytest.fixture
def fake(search_model_families):
    return search_model_families


def providers(fake, instance: str = "a") -> dict:
    return {family: {"type": family, "baseURL": fake.base(fake.server, family, instance), "apiKey": KEYS[family]}
            for family in KEYS}


def config(fake, engine: dict, targets: list[str], **kw) -> dict:
    return config_with([engine], providers=kw.pop("providers", None) or providers(fake), search_targets=[targets], **kw)


def one(cfg: dict, query: str = "latest stable rust release", cooldowns: Cooldowns | None = None, **kw):
    async def go():
        async with search_service(cfg, cooldowns=cooldowns) as svc:
            return await svc.search(SearchRequest(query, **kw))

    return asyncio.run(go())


def engine_for(family: str, model: str | None = None, **extra) -> tuple[dict, str]:
    key = f"{family}.{model or MODELS[family]}"
    return {"id": family, "providerKey": key, **extra}, key


def calls(fake, instance: str = "a"):
    return fake.calls(instance)


# ---------------------------------------------------------------- Qwen on DashScope


def test_dashscope_native_request_and_sources(fake):
    e, key = engine_for("dashscope")
    r = one(config(fake, e, [key]), count=5, recency="oneMonth", allowed_domains=["rust-lang.org"])
    assert r.ok, r.error
    (req,) = calls(fake)
    assert req.path == "/a/api/v1/services/aigc/text-generation/generation"
    assert req.headers["authorization"] == f"Bearer {KEYS['dashscope']}"
    assert req.json == {"model": "qwen-plus", "input": {"messages": [{"role": "user",
                                                                      "content": "latest stable rust release"}]},
                        "parameters": {"result_format": "message", "enable_search": True, "search_options": {
                            "forced_search": True, "freshness": 30, "assigned_site_list": ["rust-lang.org"],
                            "enable_source": True, "enable_citation": True, "citation_format": "[ref_<number>]"}}}
    assert [h.url for h in r.hits] == [BLOG, RELEASES]
    assert r.hits[0].source == "Rust Blog"
    # [ref_n] markers become our [n]; the dropped javascript: source loses its marker
    assert r.summary == "Rust 1.91.0 is the latest stable release[1]; see the notes[2] and."


def test_dashscope_compatible_mode_links_become_hits(fake):
    e, key = engine_for("dashscope", options={"protocol": "compatible"})
    r = one(config(fake, e, [key]))
    assert r.ok, r.error
    (req,) = calls(fake)
    assert req.path == "/a/compatible-mode/v1/chat/completions"
    assert req.json["enable_search"] is True and req.json["search_options"] == {"forced_search": True}
    assert [(h.title, h.url) for h in r.hits] == [("Rust Blog", BLOG), ("doc.rust-lang.org", RELEASES)]


# ---------------------------------------------------------------- Kimi


def test_kimi_echoes_the_builtin_call_and_answers(fake):
    e, key = engine_for("moonshot")
    r = one(config(fake, e, [key]))
    assert r.ok, r.error
    first, second = calls(fake)
    assert first.json["tools"] == [{"type": "builtin_function", "function": {"name": "$web_search"}}]
    assert first.json["messages"][-1] == {"role": "user", "content": "latest stable rust release"}
    assistant, echo = second.json["messages"][-2:]
    assert assistant["tool_calls"][0]["function"]["arguments"] == KIMI_ARGUMENTS  # unchanged
    assert echo == {"role": "tool", "tool_call_id": "web_search:0", "name": "$web_search", "content": KIMI_ARGUMENTS}
    assert [h.url for h in r.hits] == [BLOG, RELEASES, WIKI]
    assert r.hits[0].title == "Announcing Rust 1.91.0"
    assert r.summary.startswith("Rust 1.91.0 is the latest stable release.")


def test_kimi_answering_without_searching_fails_over(fake):
    fake.script("a", Reply(body={"choices": [{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant", "content": f"From memory: {BLOG}"}}]}))
    e, key = engine_for("moonshot")
    r = one(config(fake, e, [key, "perplexity.sonar"]))
    assert r.ok and r.hits[0].url == BLOG
    assert [c.path for c in calls(fake)] == ["/a/kimi/v1/chat/completions", "/a/sonar/chat/completions"]


# ---------------------------------------------------------------- Perplexity Sonar


def test_sonar_request_and_search_results(fake):
    e, key = engine_for("perplexity")
    r = one(config(fake, e, [key]), recency="oneWeek", blocked_domains=["wikipedia.org"],
            user_location={"country": "gb"})
    assert r.ok, r.error
    (req,) = calls(fake)
    assert req.path == "/a/sonar/chat/completions"
    assert req.json == {"model": "sonar", "messages": [{"role": "user", "content": "latest stable rust release"}],
                        "stream": False, "search_recency_filter": "week", "search_domain_filter": ["-wikipedia.org"],
                        "web_search_options": {"search_context_size": "low", "user_location": {"country": "GB"}}}
    assert [h.url for h in r.hits] == [BLOG, RELEASES]
    assert r.hits[0].snippet == "The Rust team is happy to announce 1.91.0." and r.hits[0].published == "2025-10-30"
    assert r.summary == "Rust 1.91.0 is the latest stable release [1][2], not ."


# ---------------------------------------------------------------- OpenAI


def test_openai_responses_web_search(fake):
    e, key = engine_for("openai")
    r = one(config(fake, e, [key]), allowed_domains=["rust-lang.org", "wikipedia.org"], user_location={"country": "us"})
    assert r.ok, r.error
    (req,) = calls(fake)
    assert req.path == "/a/openai/v1/responses"
    assert req.json["tools"] == [{"type": "web_search", "search_context_size": "low",
                                  "filters": {"allowed_domains": ["rust-lang.org", "wikipedia.org"]},
                                  "user_location": {"type": "approximate", "country": "US"}}]
    assert req.json["tool_choice"] == "required" and req.json["store"] is False
    assert req.json["include"] == ["web_search_call.action.sources"]
    # the cited URL (tracking parameter stripped, with its title), then the other sources; no "api" source
    assert [(h.title, h.url) for h in r.hits] == [("Announcing Rust 1.91.0", BLOG), ("en.wikipedia.org", WIKI)]
    assert r.summary == "Rust 1.91.0 is the latest stable release (Rust Blog)."


def test_openai_chat_search_model(fake):
    e, key = engine_for("openai", "gpt-5-search-api")
    r = one(config(fake, e, [key]), user_location={"country": "GB"})
    assert r.ok, r.error
    (req,) = calls(fake)
    assert req.path == "/a/openai/v1/chat/completions"
    assert req.json == {"model": "gpt-5-search-api", "messages": [{"role": "user", "content": "latest stable rust release"}],
                        "web_search_options": {"search_context_size": "low", "user_location": {
                            "type": "approximate", "approximate": {"country": "GB"}}}}
    assert [(h.url, h.snippet) for h in r.hits] == [(BLOG, "announced on the Rust blog")]


# ---------------------------------------------------------------- Anthropic


def test_anthropic_web_search_tool(fake):
    e, key = engine_for("anthropic")
    r = one(config(fake, e, [key]), blocked_domains=["wikipedia.org"])
    assert r.ok, r.error
    (req,) = calls(fake)
    assert req.path == "/a/v1/messages"
    assert req.headers["x-api-key"] == KEYS["anthropic"] and req.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in req.headers
    assert req.json["tools"] == [{"type": "web_search_20250305", "name": "web_search", "max_uses": 1,
                                  "blocked_domains": ["wikipedia.org"]}]
    assert req.json["tool_choice"] == {"type": "tool", "name": "web_search"}
    assert [h.url for h in r.hits] == [BLOG, RELEASES]
    assert r.hits[0].snippet == "The Rust team is happy to announce a new version of Rust, 1.91.0."
    assert r.hits[0].published == "October 30, 2025"
    assert r.summary == "Rust 1.91.0 is the latest stable release."


def test_anthropic_search_error_block_fails_over_as_rate_limit(fake):
    fake.script("a", Reply(body=error_block("too_many_requests")))
    e, key = engine_for("anthropic")
    cooldowns = Cooldowns()
    r = one(config(fake, e, [key, "perplexity.sonar"]), cooldowns=cooldowns)
    assert r.ok and r.engine == "anthropic"  # the engine asked for; Sonar answered it
    assert [c.path for c in calls(fake)] == ["/a/v1/messages", "/a/sonar/chat/completions"]
    fake.reset()
    fake.script("a", Reply(body=error_block("too_many_requests")))
    r = one(config(fake, e, [key]))
    assert r.error_code == "too_many_requests" and "too_many_requests" in r.error


# ---------------------------------------------------------------- every family, the same way


@pytest.mark.parametrize("family", list(KEYS))
def test_each_family_answers_with_hits(fake, family):
    e, key = engine_for(family)
    r = one(config(fake, e, [key]))
    assert r.ok, r.error
    assert r.engine == family and r.hits and r.hits[0].url == BLOG
    payload = json.loads(tool_text(r)[0])
    assert payload["results"][0]["n"] == 1


@pytest.mark.parametrize("family", list(KEYS))
def test_each_family_bad_key_is_an_error_without_the_key(fake, family):
    wrong = f"wrong-{family}-key-93ac1e0b7d"
    provs = providers(fake)
    provs[family]["apiKey"] = wrong
    e, key = engine_for(family)
    r = one(config(fake, e, [key], providers=provs))
    assert not r.ok and "HTTP 401" in r.error
    assert wrong not in r.error and wrong[:10] not in r.error


def test_failover_sends_each_target_its_own_request(fake):
    fake.script("a", Reply(status=503, body={"error": {"message": "overloaded"}}))
    e, key = engine_for("dashscope")
    r = one(config(fake, e, [key, "anthropic.claude-haiku-4-5"]))
    assert r.ok and r.hits[0].url == BLOG
    assert [c.path for c in calls(fake)] == ["/a/api/v1/services/aigc/text-generation/generation", "/a/v1/messages"]


def test_a_provider_that_cannot_search_is_refused():
    cfg = config_with([{"id": "x", "providerKey": "local.m"}],
                      providers={"local": {"type": "vllm", "baseURL": "http://127.0.0.1:9/v1"}},
                      search_targets=[["local.m"]])
    with pytest.raises(ConfigError, match="search-capable type .*anthropic.*dashscope.*moonshot.*got 'vllm'"):
        parse(json.dumps(cfg), env={}, plugins=PLUGINS)


def test_gateway_search_answered_by_kimi(gateway, fake_model, fake):
    """End to end: a self-hosted model asks for a search; the gateway's secondary call goes to Kimi
    (with its echo round trip) and the model reads Kimi's hits."""
    from .helpers import base_config
    from .test_pipeline import answer_after_search, ask

    cfg = base_config(fake_model.url)
    cfg["providers"]["kimi"] = {"type": "moonshot", "baseURL": fake.base(fake.server, "moonshot", "a"),
                                "apiKey": KEYS["moonshot"]}
    cfg["virtualrouter"]["routing"]["web_search"] = [{"targets": ["kimi.kimi-k2-turbo-preview"]}]
    cfg["webSearch"] = {"engines": [{"id": "kimi", "providerKey": "kimi.kimi-k2-turbo-preview", "default": True}],
                        "cacheTtlMs": 0}
    fake_model.default = answer_after_search()
    gw = gateway(cfg)
    r = ask(gw, "search the web for the latest rust release")
    assert r.choices[0].message.content.startswith("Rust 1.91.0")
    assert len(calls(fake)) == 2  # the $web_search call and its echo
    tool_result = json.loads(fake_model.requests[-1]["messages"][-1]["content"])
    assert tool_result["engine"] == "kimi"
    assert [h["url"] for h in tool_result["results"]] == [BLOG, RELEASES, WIKI]
