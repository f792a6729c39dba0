"""Injection is decided for each target as it is tried, not for the route's first candidate.

A route [self-hosted (down), commercial] sends the commercial fallback the client's request untouched
(unless `webSearch.perBackend` opts it in), on this request and the next (the self-hosted target
cooling); a route [commercial (down), self-hosted] gives the self-hosted fallback the tool and runs
the search; a fallback's own per-backend policy is the one that applies. Streaming and not.
"""

from __future__ import annotations

import openai
import pytest

from .fakes.redis_server import free_port
from .fakes.search_providers import Reply
from .helpers import searxng_engine

PROMPT = "search the web for the latest rust release"
DOWN = "http://127.0.0.1:{}/v1"


def config(search_fakes, first: dict, second: dict, per_backend: dict | None = None) -> dict:
    """Two providers, `first` tried before `second` (separate pools, so no rotation)."""
    return {
        "providers": {"first": first, "second": second},
        "virtualrouter": {"routing": {"default": [{"id": "a", "priority": 100, "targets": ["first.m"]},
                                                  {"id": "b", "priority": 50, "targets": ["second.m"]}]},
                          "cooldownMs": 30000, "retries": 0},
        "webSearch": {"engines": [searxng_engine(search_fakes)], "cacheTtlMs": 0, "perBackend": per_backend or {}},
    }


def self_hosted(url: str) -> dict:
    return {"type": "vllm", "baseURL": url}


def commercial(url: str) -> dict:
    return {"type": "openai", "baseURL": url, "apiKey": "sk-commercial-test-key"}


def answer_after_search(body: dict) -> dict:
    if body["messages"][-1]["role"] == "tool":
        return {"content": "Rust 1.91.0 [1]."}
    if any(t["function"]["name"] == "web_search" for t in body.get("tools", [])):
        return {"tool_calls": [{"name": "web_search", "arguments": {"query": "latest rust release"}}]}
    return {"content": "no tools here"}


def ask(gw, stream: bool, **extra) -> str:
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    messages = [{"role": "user", "content": PROMPT}]
    if stream:
        chunks = client.chat.completions.create(model="d", messages=messages, stream=True, **extra)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return client.chat.completions.create(model="d", messages=messages, **extra).choices[0].message.content


@pytest.mark.parametrize("stream", [False, True])
def test_commercial_fallback_gets_the_request_untouched(gateway, fake_model, search_fakes, stream) -> None:
    gw = gateway(config(search_fakes, self_hosted(DOWN.format(free_port())), commercial(fake_model.url)))
    fake_model.default = answer_after_search
    for _ in range(2):  # the second time the self-hosted target is cooling: still untouched
        assert ask(gw, stream) == "no tools here"
    assert len(fake_model.requests) == 2
    for sent in fake_model.requests:
        assert "tools" not in sent
        assert sent["messages"] == [{"role": "user", "content": PROMPT}]
        assert "stream_options" not in sent
    assert search_fakes.calls("searxng") == []


@pytest.mark.parametrize("stream", [False, True])
def test_commercial_fallback_opted_in_gets_the_tool(gateway, fake_model, search_fakes, stream) -> None:
    cfg = config(search_fakes, self_hosted(DOWN.format(free_port())), commercial(fake_model.url),
                 per_backend={"second": {"injectPolicy": "selective"}})
    gw = gateway(cfg)
    search_fakes.script("searxng", Reply())
    fake_model.default = answer_after_search
    assert ask(gw, stream) == "Rust 1.91.0 [1]."
    assert [t["function"]["name"] for t in fake_model.requests[0]["tools"]] == ["web_search", "web_fetch"]
    assert len(search_fakes.calls("searxng")) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_self_hosted_fallback_gets_the_tool_after_a_commercial_first(gateway, fake_model, search_fakes,
                                                                     stream) -> None:
    gw = gateway(config(search_fakes, commercial(DOWN.format(free_port())), self_hosted(fake_model.url)))
    search_fakes.script("searxng", Reply(), Reply())
    fake_model.default = answer_after_search
    for _ in range(2):  # and again while the commercial target cools
        assert ask(gw, stream) == "Rust 1.91.0 [1]."
    first_rounds = [r for r in fake_model.requests if r["messages"][-1]["role"] == "user"]
    assert len(first_rounds) == 2
    for sent in first_rounds:
        assert [t["function"]["name"] for t in sent["tools"]] == ["web_search", "web_fetch"]
    assert len(search_fakes.calls("searxng")) == 2


@pytest.mark.parametrize("stream", [False, True])
def test_the_fallbacks_own_policy_applies(gateway, fake_model, search_fakes, stream) -> None:
    """[self-hosted A (down, policy always), self-hosted B (policy never)]: B gets no tool; and the
    other way round, B (selective) gets it although A's policy was never."""
    gw = gateway(config(search_fakes, self_hosted(DOWN.format(free_port())), self_hosted(fake_model.url),
                        per_backend={"first": {"injectPolicy": "always"}, "second": {"injectPolicy": "never"}}))
    fake_model.default = answer_after_search
    assert ask(gw, stream) == "no tools here"
    assert "tools" not in fake_model.requests[-1]

    fake_model.script()
    search_fakes.script("searxng", Reply())
    gw2 = gateway(config(search_fakes, self_hosted(DOWN.format(free_port())), self_hosted(fake_model.url),
                         per_backend={"first": {"injectPolicy": "never"}}), name="second.json")
    assert ask(gw2, stream) == "Rust 1.91.0 [1]."
    assert [t["function"]["name"] for t in fake_model.requests[0]["tools"]] == ["web_search", "web_fetch"]


def test_later_rounds_fail_over_only_to_targets_that_get_the_tool(gateway, fake_model, fake_model_b,
                                                                 search_fakes) -> None:
    """The search loop's second round, its target down, does not go to a commercial fallback (the
    conversation holds our calls): with no such target left the client gets an error event."""
    cfg = config(search_fakes, self_hosted(fake_model.url), commercial(fake_model_b.url))
    gw = gateway(cfg)
    search_fakes.script("searxng", Reply())
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "rust"}}]}, {"status": 503})
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.APIError):
        list(client.chat.completions.create(model="d", messages=[{"role": "user", "content": PROMPT}], stream=True))
    assert fake_model_b.requests == []


def test_the_trace_shows_the_decision_for_the_target_that_answered(gateway, fake_model, search_fakes) -> None:
    import time

    import httpx

    admin_key = "admin-key-for-tests-0001"
    cfg = config(search_fakes, self_hosted(DOWN.format(free_port())), commercial(fake_model.url))
    cfg["server"] = {"adminKeys": [admin_key]}
    gw = gateway(cfg)
    fake_model.default = answer_after_search
    assert ask(gw, True) == "no tools here"
    headers = {"authorization": f"Bearer {admin_key}"}
    deadline = time.monotonic() + 5
    while not (rows := httpx.get(gw.url + "/admin/traces", headers=headers).json()["data"]):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    t = httpx.get(gw.url + f"/admin/traces/{rows[0]['id']}", headers=headers).json()
    assert [(a["target"], a["outcome"]) for a in t["targets"]] == [("first.m", "failed"), ("second.m", "ok")]
    assert t["injection"]["decision"] is False
    assert t["injection"]["reason"] == "provider 'second' is not self-hosted and has no webSearch.perBackend entry"
