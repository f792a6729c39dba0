"""hub/injection/decide.py directly: the decision as a function of (config, target, request, chain state)."""

from __future__ import annotations

import json

from hub.config import parse
from hub.injection.chain import ChainState
from hub.injection.decide import Request, decide
from hub.runtime import PLUGINS
from hub.tools.base import HostedSearch


def config(**ws):
    cfg = {"providers": {"local": {"type": "vllm", "baseURL": "http://127.0.0.1:9/v1"},
                         "oa": {"type": "openai", "baseURL": "http://127.0.0.1:9/v1", "apiKey": "sk-test-000000"}},
           "virtualrouter": {"routing": {"default": [{"targets": ["local.m"]}]}},
           "webSearch": {"engines": [{"id": "s", "type": "searxng", "baseURL": "http://127.0.0.1:9"}], **ws}}
    c = parse(json.dumps(cfg), env={}, plugins=PLUGINS)
    return c.web_search, c.providers["local"], c.providers["oa"]


def ask(text: str, **kw) -> Request:
    return Request([{"role": "user", "content": text}], kw.pop("tools", []), **kw)


def test_selective_follows_intent_and_the_sticky_chain() -> None:
    ws, local, _ = config()
    d = decide(ws, local, ask("search the web for the latest Rust release"))
    assert d.inject and d.by_intent and d.intent.search
    assert not decide(ws, local, ask("write a haiku about autumn")).inject
    assert decide(ws, local, ask("and then?"), ChainState(sticky=True)).inject
    assert decide(ws, local, ask("google the latest news")).google


def test_commercial_backends_only_with_hosted_search() -> None:
    ws, _, commercial = config(injectPolicy="always")
    assert not decide(ws, commercial, ask("hi")).inject
    assert decide(ws, commercial, ask("hi", hosted={"web_search": HostedSearch()})).inject


def test_overrides_policies_and_client_tools() -> None:
    ws, local, _ = config()
    assert not decide(ws, local, ask("search the web for rust", force=False)).inject
    assert decide(ws, local, ask("hi", force=True)).inject
    own = {"type": "function", "function": {"name": "web_search"}}
    assert decide(ws, local, ask("hi", tools=[own])).client_has_tool
    theirs = {"type": "function", "function": {"name": "WebSearch"}}
    assert not decide(ws, local, ask("search the web for rust", tools=[theirs])).inject
    for policy, expected in (("always", True), ("never", False), ("auto", False)):
        ws, local, _ = config(injectPolicy=policy)
        assert decide(ws, local, ask("search the web for rust")).inject is expected
    ws, local, _ = config(injectPolicy="auto")
    assert decide(ws, local, ask("hi", opted_in=True)).inject
