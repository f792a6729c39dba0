"""One malformed hit no longer sinks a search (issue 27): a search service answering raw bytes that are
not UTF-8, or an escaped lone surrogate, in one hit. Over HTTP through the gateway, against the fake
services on the real wire: the other hits come back, the broken one is dropped and counted."""

from __future__ import annotations

import json

import httpx

from .fakes.search_providers import Reply
from .helpers import base_config, searxng_engine, serper_engine

# A SearXNG answer, byte for byte: hit 1 has a byte that is not UTF-8 in its title (kept, the byte
# replaced), hit 2 one in its URL, hit 3 an escaped lone surrogate in its URL (both dropped), hit 4 a
# lone surrogate in its snippet (kept, cleaned), hit 5 is plain.
SEARXNG_ANSWER = (
    b'{"query": "rust", "number_of_results": 0, "answers": [], "unresponsive_engines": [], "results": ['
    b'{"url": "https://blog.rust-lang.org/1.91", "title": "Announcing Rust \xff1.91", "content": "The release."},'
    b'{"url": "https://broken.example/a\xfeb", "title": "Broken URL", "content": "x"},'
    b'{"url": "https://broken.example/\\ud800", "title": "Surrogate URL", "content": "x"},'
    b'{"url": "https://doc.rust-lang.org/releases.html", "title": "Releases", "content": "Version \\udc00 notes"},'
    b'{"url": "https://news.example.com/rust", "title": "Rust news", "content": "Weekly."}'
    b']}'
)


def metric(gw, name: str, **labels: str) -> float | None:
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in httpx.get(gw.url + "/metrics", timeout=5).text.splitlines():
        if line.startswith(f"{name}{{{want}}} "):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_v1_search_keeps_the_good_hits_of_a_broken_answer(gateway, fake_model, search_fakes) -> None:
    cfg = base_config(fake_model.url)
    cfg["webSearch"] = {"engines": [searxng_engine(search_fakes, default=True), serper_engine(search_fakes)]}
    gw = gateway(cfg)
    # every configured engine's series exists from the start
    assert metric(gw, "searchhub_search_hits_dropped_total", engine="serper", reason="encoding") is not None
    before = metric(gw, "searchhub_search_hits_dropped_total", engine="searxng", reason="encoding")
    assert before is not None
    search_fakes.script("searxng", Reply(raw=SEARXNG_ANSWER))
    r = httpx.post(gw.url + "/v1/search", json={"query": "latest stable rust release", "count": 10}, timeout=30)
    assert r.status_code == 200, r.text
    r.content.decode("utf-8")  # strict: the answer is UTF-8
    doc = r.json()
    assert doc["engine"] == "searxng"
    assert [h["url"] for h in doc["hits"]] == ["https://blog.rust-lang.org/1.91",
                                               "https://doc.rust-lang.org/releases.html",
                                               "https://news.example.com/rust"]
    assert doc["hits"][0]["title"] == "Announcing Rust \ufffd1.91"
    assert doc["hits"][1]["snippet"] == "Version notes"
    assert metric(gw, "searchhub_search_hits_dropped_total", engine="searxng", reason="encoding") == before + 2


def test_a_model_search_reads_the_good_hits_of_a_broken_answer(gateway, fake_model, search_fakes) -> None:
    """The same answer behind the web_search tool: the model reads the three good hits."""
    cfg = base_config(fake_model.url)
    cfg["webSearch"] = {"engines": [searxng_engine(search_fakes, default=True)], "injectPolicy": "always"}
    gw = gateway(cfg)
    search_fakes.script("searxng", Reply(raw=SEARXNG_ANSWER))
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "rust release"}}]},
                      {"content": "Rust 1.91 is out [1]."})
    r = httpx.post(gw.url + "/v1/chat/completions", timeout=30, json={
        "model": "default", "messages": [{"role": "user", "content": "search the web for the latest rust release"}]})
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == "Rust 1.91 is out [1]."
    [tool] = [m for m in fake_model.requests[1]["messages"] if m["role"] == "tool"]
    content = tool["content"] if isinstance(tool["content"], str) else json.dumps(tool["content"])
    for url in ("https://blog.rust-lang.org/1.91", "https://doc.rust-lang.org/releases.html",
                "https://news.example.com/rust"):
        assert url in content
    assert "broken.example" not in content


def test_an_error_body_with_bad_bytes_is_still_the_services_error(gateway, fake_model, search_fakes) -> None:
    """A 500 whose body is not UTF-8 used to crash the engine ('internal error'); it is the service's
    failure, with its message."""
    cfg = base_config(fake_model.url)
    cfg["webSearch"] = {"engines": [serper_engine(search_fakes, default=True)]}
    gw = gateway(cfg)
    search_fakes.script("serper", Reply(status=500, raw=b'{"message": "backend \xff down"}'))
    r = httpx.post(gw.url + "/v1/search", json={"query": "latest stable rust release"}, timeout=30)
    assert r.status_code == 502, r.text
    assert "the search service failed (HTTP 500: backend \ufffd down)" in r.text
