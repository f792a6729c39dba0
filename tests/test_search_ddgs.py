"""The keyless ddgs engine, through the ddgs library's own HTTP client (primp): its proxy setting
points at a local CONNECT proxy that intercepts TLS with a test CA (verification stays on) and
answers DuckDuckGo's HTML endpoint with a result page (tests/fixtures/ddgs). Nothing of ours or of
the library is patched; nothing leaves loopback."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs

import pytest
import trustme

from hub.config import parse
from hub.runtime import PLUGINS
from hub.search.base import SearchRequest
from hub.search.engines.ddgs import DdgsEngine
from hub.search.registry import ENGINE_KINDS

from .fakes.forward_proxy import ForwardProxy
from .fakes.search_providers import config_with
from .helpers import search_service

PAGE = (Path(__file__).parent / "fixtures" / "ddgs" / "duckduckgo-html.html").read_bytes()
DDG = "html.duckduckgo.com"


class Answers:
    """What the intercepted DuckDuckGo answers: the result page, or a scripted status / delay."""

    def __init__(self) -> None:
        self.status = 200
        self.delay = 0.0

    def __call__(self, method: str, path: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
        if self.delay:
            time.sleep(self.delay)
        if (method, path) != ("POST", "/html/") or self.status != 200:
            return (self.status if self.status != 200 else 404), {"content-type": "text/html"}, b"<html></html>"
        return 200, {"content-type": "text/html; charset=UTF-8"}, PAGE


@pytest.fixture(scope="module")
def ca_file(tmp_path_factory) -> tuple[trustme.CA, str]:
    ca = trustme.CA()
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return ca, str(path)


def tls_for(ca: trustme.CA, host: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(host).configure_cert(ctx)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


@pytest.fixture
def answers() -> Answers:
    return Answers()


@pytest.fixture
def proxy(ca_file, answers) -> Iterator[ForwardProxy]:
    ca, _ = ca_file
    p = ForwardProxy(tls={DDG: tls_for(ca, DDG)}, handler=answers).start()
    yield p
    p.stop()


def ddgs_engine(ca_path: str, **extra) -> dict:
    options = {"backend": "duckduckgo", "verify": ca_path, **extra.pop("options", {})}
    return {"id": "ddgs", "type": "ddgs", "description": "DuckDuckGo, keyless", "options": options, **extra}


def run(config: dict, env: dict[str, str] | None = None, **kw):
    async def go():
        async with search_service(config, env) as svc:
            return await svc.search(SearchRequest(kw.pop("query", "latest stable rust release"), **kw))

    return asyncio.run(go())


def form(p: ForwardProxy) -> dict[str, list[str]]:
    inner = [x for x in p.passed if x.kind == "tls"]
    assert len(inner) == 1, p.passed
    assert (inner[0].method, inner[0].path) == ("POST", "/html/")
    assert inner[0].headers["host"] == DDG
    return parse_qs(inner[0].body.decode())


def test_search_goes_through_the_library_to_duckduckgo(proxy, ca_file):
    _, ca_path = ca_file
    cfg = config_with([ddgs_engine(ca_path, proxy=proxy.url())])
    r = run(cfg, count=3, recency="oneMonth", user_location={"country": "de"})
    assert r.ok, r.error
    assert r.engine == "ddgs"
    # ddgs re-ranks what its backends return by query terms; the ad (a duckduckgo.com/y.js link) is
    # dropped by the library, and the count cuts the rest
    assert len(r.hits) == 3
    assert {h.url for h in r.hits} <= {
        "https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/",
        "https://doc.rust-lang.org/stable/releases.html",
        "https://en.wikipedia.org/wiki/Rust_(programming_language)",
        "https://github.com/rust-lang/rust/releases",
    }
    blog = next(h for h in r.hits if h.url == "https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/")
    assert blog.title == "Announcing Rust 1.91.0 | Rust Blog"
    assert blog.snippet.startswith("The Rust team is happy to announce a new version of Rust, 1.91.0.")
    assert [x.kind for x in proxy.passed] == ["connect", "tls"]
    assert proxy.passed[0].target == f"{DDG}:443"
    assert form(proxy) == {"q": ["latest stable rust release"], "l": ["de-de"], "df": ["m"]}


def test_domains_go_into_the_query(proxy, ca_file):
    _, ca_path = ca_file
    r = run(config_with([ddgs_engine(ca_path, proxy=proxy.url())]), allowed_domains=["rust-lang.org"],
            blocked_domains=["github.com"])
    assert r.ok, r.error
    assert form(proxy)["q"] == ["latest stable rust release site:rust-lang.org -site:github.com"]
    assert all("rust-lang.org" in h.url for h in r.hits)


def test_environment_proxy_is_used_and_no_proxy_bypasses_it(proxy, ca_file):
    _, ca_path = ca_file
    cfg = config_with([ddgs_engine(ca_path)])
    r = run(cfg, env={"HTTPS_PROXY": proxy.url()})
    assert r.ok, r.error
    assert len(proxy.passed) == 2
    proxy.passed.clear()
    r = run(cfg, env={"HTTPS_PROXY": proxy.url(), "NO_PROXY": "localhost,.duckduckgo.com"})
    assert not r.ok  # straight to the internet, which this machine has not got
    assert proxy.passed == []


def test_engine_proxy_false_means_direct(proxy, ca_file):
    _, ca_path = ca_file
    r = run(config_with([ddgs_engine(ca_path, proxy=False)]), env={"HTTPS_PROXY": proxy.url()})
    assert not r.ok
    assert proxy.passed == []


def test_tls_verification_stays_on(proxy, tmp_path):
    other = trustme.CA()  # not the CA that signed the proxy's certificate
    path = tmp_path / "other.pem"
    other.cert_pem.write_to_path(str(path))
    r = run(config_with([ddgs_engine(str(path), proxy=proxy.url())]))
    assert not r.ok and r.error_code == "unavailable"
    assert not any(x.kind == "tls" for x in proxy.passed)


def test_rate_limited_duckduckgo_is_a_failure_that_falls_back(proxy, ca_file, answers, search_fakes):
    from .helpers import searxng_engine

    _, ca_path = ca_file
    answers.status = 202  # DuckDuckGo's rate-limit page; ddgs cannot tell it from "nothing found"
    cfg = config_with([ddgs_engine(ca_path, proxy=proxy.url(), default=True)])
    r = run(cfg)
    assert not r.ok and r.error_code == "unavailable" and r.error.startswith("no results")
    cfg = config_with([ddgs_engine(ca_path, proxy=proxy.url(), default=True), searxng_engine(search_fakes)],
                      fallback=True)
    r = run(cfg)
    assert r.ok and r.engine == "searxng"


def test_proxy_credentials_never_show(ca_file):
    _, ca_path = ca_file
    secret = "pr0xy-Secret-9b1f2c"
    p = ForwardProxy(credentials=("alice", "right-password")).start()
    try:
        r = run(config_with([ddgs_engine(ca_path, proxy=p.url(user="alice", password=secret))]))
    finally:
        p.stop()
    assert not r.ok and r.error_code == "unavailable"
    assert secret not in r.error and "alice:" not in r.error
    assert p.passed and not p.passed[0].authorized


def test_timeout_is_an_error_and_the_event_loop_keeps_running(proxy, ca_file, answers):
    _, ca_path = ca_file
    answers.delay = 2.5
    cfg = config_with([ddgs_engine(ca_path, proxy=proxy.url(), timeoutMs=1000)])

    async def go():
        ticks = 0

        async def tick():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        ticker = asyncio.create_task(tick())
        async with search_service(cfg) as svc:
            started = time.monotonic()
            result = await svc.search(SearchRequest("latest stable rust release"))
            elapsed = time.monotonic() - started
        ticker.cancel()
        return result, elapsed, ticks

    r, elapsed, ticks = asyncio.run(go())
    assert not r.ok and "timed out" in r.error
    assert elapsed < 2.0
    assert ticks >= 10  # the blocking library call ran in a thread, not on the loop


def test_arguments_from_recency_location_and_options(ca_file):
    from hub.search.base import SearchRequest
    from hub.search.engine import EngineContext

    cfg = parse(json.dumps(config_with([ddgs_engine(ca_file[1], options={"region": "wt-wt", "safesearch": "off"})])),
                env={}, plugins=PLUGINS)
    engine = DdgsEngine(cfg.web_search.engines[0], EngineContext(None, cfg.web_search))  # type: ignore[arg-type]
    args = engine.arguments(SearchRequest("q", 4, "oneDay", user_location={"country": "CN"}))
    assert args == {"region": "cn-zh", "safesearch": "off", "timelimit": "d", "max_results": 4,
                    "backend": "duckduckgo"}
    args = engine.arguments(SearchRequest("q", 4, None, user_location={"country": "ZZ"}))
    assert args["region"] == "wt-wt" and args["timelimit"] is None


@pytest.mark.parametrize(("backend", "google"), [("duckduckgo", False), ("auto", False), ("google", True),
                                                 ("google,duckduckgo", False)])
def test_google_backed_only_when_its_backend_is_google(backend, google):
    cfg = parse(json.dumps(config_with([{"id": "web", "type": "ddgs", "options": {"backend": backend}}])), env={},
                plugins=PLUGINS)
    assert cfg.web_search.engines[0].google is google


def test_repository_engines_json_defaults_to_keyless_ddgs():
    """What the README's run command serves with: a default engine that needs no key and no service."""
    from hub.config import load

    cfg = load(Path(__file__).resolve().parent.parent / "engines.json", env={}, plugins=PLUGINS)
    default = cfg.web_search.default_engine
    assert default is not None and default.type == "ddgs" and default.api_key is None
    assert ENGINE_KINDS.api["ddgs"].keyless
    assert [e.id for e in cfg.web_search.engines] == [default.id]
