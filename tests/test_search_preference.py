"""Google-preferred intent narrows the offered engines to every engine that declares Google's index
(serper, Gemini, ddgs with a Google backend, Jina with Google as its engine); 百度一下 does the same
by default and narrows to Baidu-backed engines with webSearch.baiduPreference = "baidu"."""

from __future__ import annotations

import pytest

from hub.injection.intent import classify

from .fakes.search_apis import KEYS as API_KEYS
from .helpers import searxng_engine, serper_engine
from .test_pipeline import answer_after_search, ask, search_config


def engines(search_fakes, search_apis) -> list[dict]:
    return [
        searxng_engine(search_fakes),
        serper_engine(search_fakes),
        {"id": "gemini", "providerKey": "gem.gemini-2.5-flash"},
        {"id": "ddg", "type": "ddgs"},
        {"id": "ddg-google", "type": "ddgs", "options": {"backend": "google"}},
        {"id": "jina-google", "type": "jina", "apiKey": "jina_k", "options": {"provider": "google"}},
        {"id": "baidu", "type": "baidu", "apiKey": API_KEYS["baidu"],
         "baseURL": search_apis.base_url(search_apis.server, "baidu")},
    ]


def config(fake_model, search_fakes, search_apis, **ws) -> dict:
    cfg = search_config(fake_model.url, engines(search_fakes, search_apis), **ws)
    cfg["providers"]["gem"] = {"type": "gemini", "baseURL": "http://127.0.0.1:9", "apiKey": "g"}
    cfg["virtualrouter"]["routing"]["web_search"] = [{"targets": ["gem.gemini-2.5-flash"]}]
    return cfg


def offered(gw, fake_model, text: str) -> list[str]:
    n = len(fake_model.requests)
    ask(gw, text)
    tool = next(t for t in fake_model.requests[n]["tools"] if t["function"]["name"] == "web_search")
    return tool["function"]["parameters"]["properties"]["engine"]["enum"]


GOOGLE = ["serper", "gemini", "ddg-google", "jina-google"]
ALL = ["searxng", "serper", "gemini", "ddg", "ddg-google", "jina-google", "baidu"]


def test_google_preference_narrows_to_every_google_backed_engine(gateway, fake_model, search_fakes, search_apis):
    gw = gateway(config(fake_model, search_fakes, search_apis))
    assert offered(gw, fake_model, "谷歌一下 rust 1.91") == GOOGLE
    assert offered(gw, fake_model, "google the news about rust") == GOOGLE
    assert offered(gw, fake_model, "百度一下 今天的新闻") == GOOGLE  # the design's default
    assert offered(gw, fake_model, "search the web for rust news") == ALL


def test_baidu_preference(gateway, fake_model, search_fakes, search_apis):
    fake_model.default = answer_after_search("今天的新闻 [1]")
    gw = gateway(config(fake_model, search_fakes, search_apis, baiduPreference="baidu"))
    assert offered(gw, fake_model, "百度一下 今天的新闻") == ["baidu"]
    # the model named no engine: the search ran on the Baidu engine
    assert len(search_apis.calls("baidu")) == 1
    assert offered(gw, fake_model, "谷歌一下 rust 1.91") == GOOGLE


def test_explicit_google_flag_wins_over_the_declaration():
    import json

    from hub.config import parse
    from hub.runtime import PLUGINS

    from .fakes.search_providers import config_with

    cfg = parse(json.dumps(config_with([{"id": "a", "type": "ddgs", "options": {"backend": "google"}, "google": False},
                                        {"id": "b", "type": "searxng", "baseURL": "http://127.0.0.1:1",
                                         "google": True}])), env={}, plugins=PLUGINS)
    assert [e.google for e in cfg.web_search.engines] == [False, True]


@pytest.mark.parametrize(("text", "baidu"), [("百度一下 今天的新闻", True), ("谷歌一下 新闻", False),
                                             ("google this", False), ("百度 一下", False)])
def test_intent_marks_the_baidu_phrase(text, baidu):
    assert classify(text).baidu is baidu
