"""Outbound proxies: a request through a configured proxy reaches its upstream only via the proxy.

Upstreams are named `*.test` (which resolves nowhere); only the local forward proxy
(tests/fakes/forward_proxy.py) maps those names to the loopback fakes, so an answer proves the
request went through it. Proxy credentials never show in results, errors, /health or `check`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.config import ConfigError, parse
from hub.config.proxy import DIRECT, mask_proxy, parse_proxy
from hub.runtime import PLUGINS
from hub.search.base import SearchRequest
from hub.upstream.proxy import ProxyPolicy, choose

from .fakes.forward_proxy import ForwardProxy
from .fakes.search_models import GLM_KEY
from .fakes.search_providers import KEYS, config_with
from .helpers import base_config, hermetic, search_service

ROOT = Path(__file__).resolve().parent.parent
USER, PASSWORD = "alice", "pr0xy-pass-7c41e9d2"


def loopback(server) -> tuple[str, int]:
    return ("127.0.0.1", server.port)


@pytest.fixture
def proxy(search_fakes, search_models) -> Iterator[ForwardProxy]:
    p = ForwardProxy(credentials=(USER, PASSWORD),
                     hosts={"search.test": loopback(search_fakes.server),
                            "glm.test": loopback(search_models.server)}).start()
    yield p
    p.stop()


def with_auth(p: ForwardProxy, scheme: str = "http", password: str = PASSWORD) -> str:
    return p.url(scheme, user=USER, password=password)


def serper(proxy_url: str | bool | None, host: str = "search.test") -> dict:
    e = {"id": "serper", "type": "serper", "apiKey": KEYS["serper"], "baseURL": f"http://{host}/serper"}
    if proxy_url is not None:
        e["proxy"] = proxy_url
    return e


def run(config: dict, env: dict[str, str] | None = None, times: int = 1):
    async def go():
        async with search_service(config, env) as svc:
            return [await svc.search(SearchRequest(f"latest stable rust release {i}")) for i in range(times)]

    results = asyncio.run(go())
    return results[0] if times == 1 else results


# ---------------------------------------------------------------- search engines


def test_engine_proxy_carries_every_request(proxy, search_fakes):
    results = run(config_with([serper(with_auth(proxy))]), times=3)
    assert all(r.ok for r in results), [r.error for r in results]
    assert [(x.kind, x.target, x.method, x.path, x.authorized) for x in proxy.passed] == [
        ("http", "search.test", "POST", "/serper/search", True)] * 3
    assert len(search_fakes.calls("serper")) == 3
    assert search_fakes.calls("serper")[0].headers["x-api-key"] == KEYS["serper"]
    assert "proxy-authorization" not in search_fakes.calls("serper")[0].headers  # not passed upstream


def test_wrong_proxy_credentials_fail_without_showing_them(proxy, search_fakes):
    wrong = "wrong-pass-0d9e8f7a6b"
    r = run(config_with([serper(with_auth(proxy, password=wrong))]))
    assert not r.ok and r.error_code == "unavailable" and "407" in r.error
    assert wrong not in r.error and USER + ":" not in r.error
    assert search_fakes.calls("serper") == []


def test_unreachable_proxy_is_a_connection_error(search_fakes):
    r = run(config_with([serper(f"http://{USER}:{PASSWORD}@127.0.0.1:9")]))
    assert not r.ok and "connection failed" in r.error and PASSWORD not in r.error


@pytest.mark.parametrize("scheme", ["socks5", "socks5h"])
def test_socks5_proxy(proxy, search_fakes, scheme):
    # socks5 resolves the name locally (so the upstream must be an address); socks5h lets the proxy
    # resolve it (so a *.test name works only through it).
    host = "search.test" if scheme == "socks5h" else f"127.0.0.1:{search_fakes.server.port}"
    r = run(config_with([serper(with_auth(proxy, scheme), host=host)]))
    assert r.ok, r.error
    assert [(x.kind, x.authorized) for x in proxy.passed] == [("socks5", True)]
    assert proxy.passed[0].target.startswith("search.test:" if scheme == "socks5h" else "127.0.0.1:")
    assert len(search_fakes.calls("serper")) == 1


def test_environment_proxy_and_no_proxy(search_fakes):
    p = ForwardProxy(hosts={"search.test": loopback(search_fakes.server)}).start()
    try:
        assert run(config_with([serper(None)]), env={"HTTP_PROXY": p.url()}).ok
        assert len(p.passed) == 1
        # NO_PROXY: straight to the upstream (an address this time, so it is reachable without the proxy)
        direct = serper(None, host=f"127.0.0.1:{search_fakes.server.port}")
        assert run(config_with([direct]), env={"HTTP_PROXY": p.url(), "NO_PROXY": "localhost,127.0.0.0/8"}).ok
        assert len(p.passed) == 1
        # an engine's own "proxy": false wins over the environment
        assert run(config_with([{**direct, "proxy": False}]), env={"HTTP_PROXY": p.url()}).ok
        assert len(p.passed) == 1
        # loopback never goes through the environment's proxy, NO_PROXY or not
        assert run(config_with([direct]), env={"http_proxy": p.url()}).ok
        assert len(p.passed) == 1
        # but an engine's own proxy carries loopback too
        assert run(config_with([{**direct, "proxy": p.url()}]), env={}).ok
        assert len(p.passed) == 2
    finally:
        p.stop()
    assert len(search_fakes.calls("serper")) == 5


# ---------------------------------------------------------------- model calls


def test_search_model_call_goes_through_the_provider_proxy(proxy, search_models):
    cfg = config_with(
        [{"id": "glm", "providerKey": "glm.glm-4.6"}],
        providers={"glm": {"type": "glm", "baseURL": "http://glm.test/a/api/paas/v4", "apiKey": GLM_KEY,
                           "proxy": with_auth(proxy)}},
        search_targets=[["glm.glm-4.6"]],
    )
    r = run(cfg)
    assert r.ok, r.error
    assert [(x.target, x.path) for x in proxy.passed] == [("glm.test", "/a/api/paas/v4/chat/completions")]
    assert len(search_models.calls("a")) == 1


def test_chat_through_a_proxied_provider_and_masked_everywhere(gateway, fake_model, tmp_path):
    p = ForwardProxy(credentials=(USER, PASSWORD), hosts={"model.test": loopback(fake_model.server)}).start()
    try:
        cfg = base_config("http://model.test/v1")
        cfg["providers"]["local"]["proxy"] = with_auth(p)
        gw = gateway(cfg)
        with gw.client() as c:
            r = c.post("/v1/chat/completions", json={"model": "default", "messages": [{"role": "user", "content": "hi"}]})
            assert r.status_code == 200, r.text
            health = c.get("/health").text
        assert [(x.kind, x.target, x.path, x.authorized) for x in p.passed] == [
            ("http", "model.test", "/v1/chat/completions", True)]
        assert len(fake_model.requests) == 1
        assert PASSWORD not in health
        assert json.loads(health)["providers"]["local"]["proxy"] == f"http://****@127.0.0.1:{p.port}"
        path = tmp_path / "check.json"
        path.write_text(json.dumps(hermetic(cfg)))
        out = subprocess.run([sys.executable, "-m", "hub", "check", "--config", str(path)], cwd=ROOT,
                             capture_output=True, text=True, timeout=30,
                             env={k: v for k, v in os.environ.items() if k != "SEARCHHUB_CONFIG"})
        assert out.returncode == 0, out.stderr
        assert PASSWORD not in out.stdout + out.stderr
        assert f'"proxy": "http://****@127.0.0.1:{p.port}"' in out.stdout
    finally:
        p.stop()


# ---------------------------------------------------------------- configuration


@pytest.mark.parametrize("value", ["ftp://proxy:21", "http://", "not a url", f"http://{USER}:{PASSWORD}@h:99999", True])
def test_bad_proxy_is_a_config_error_that_hides_the_value(value):
    cfg = config_with([serper(value)])
    with pytest.raises(ConfigError) as exc:
        parse(json.dumps(cfg), env={}, plugins=PLUGINS)
    text = str(exc.value)
    assert "webSearch.engines[0].proxy" in text
    assert PASSWORD not in text


def test_provider_proxy_false_is_direct():
    cfg = parse(json.dumps(base_config("http://127.0.0.1:1/v1", providers={
        "local": {"type": "vllm", "baseURL": "http://127.0.0.1:1/v1", "proxy": False}})), env={},
        plugins=PLUGINS)
    assert cfg.providers["local"].proxy == DIRECT


# ---------------------------------------------------------------- the policy


def test_environment_policy():
    policy = ProxyPolicy.from_env({"HTTPS_PROXY": "proxy.corp:3128", "http_proxy": "http://h:1", "HTTP_PROXY": "http://H:2",
                                   "NO_PROXY": "localhost, .internal.example,10.0.0.0/8,api.example.com:8443,[::1]"})
    assert policy.https == "http://proxy.corp:3128"  # a bare host:port is an http proxy, as curl reads it
    assert policy.http == "http://h:1"  # lower case wins
    assert policy.for_url("https", "search.example.org", 443) == "http://proxy.corp:3128"
    for host, port in [("localhost", 80), ("a.internal.example", 443), ("internal.example", 443), ("10.1.2.3", 80),
                       ("api.example.com", 8443), ("::1", 80), ("127.0.0.2", 80), ("[::1]", 80), ("app.localhost", 80)]:
        assert policy.for_url("https", host, port) is None, host
    assert policy.for_url("https", "api.example.com", 443) == "http://proxy.corp:3128"
    assert policy.for_url("https", "notinternal.example", 443) == "http://proxy.corp:3128"
    assert ProxyPolicy.from_env({"ALL_PROXY": "socks5h://s:1080"}).for_url("http", "x", 80) == "socks5h://s:1080"
    assert ProxyPolicy.from_env({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "*"}).for_url("https", "x", 443) is None
    assert choose(DIRECT, policy, "https", "x", 443) is None
    assert choose("socks5://s:1", policy, "https", "x", 443) == "socks5://s:1"


def test_parse_and_mask():
    route = parse_proxy("http://user%40corp:p%3Ass@proxy.corp:3128")
    assert (route.url, route.username, route.password) == ("http://proxy.corp:3128", "user@corp", "p:ss")
    assert route.authorization == "Basic dXNlckBjb3JwOnA6c3M="
    assert parse_proxy("socks5h://[::1]:1080").url == "socks5h://[::1]:1080"
    assert mask_proxy("http://user:secret@proxy:1") == "http://****@proxy:1"
    assert mask_proxy("socks5://proxy:1") == "socks5://proxy:1"


@given(st.text(max_size=200))
def test_parse_proxy_rejects_or_accepts_cleanly(text):
    try:
        route = parse_proxy(text)
    except ValueError as e:
        assert "@" not in str(e)  # never quotes the URL back
    else:
        assert route.scheme in ("http", "https", "socks5", "socks5h") and route.host
        assert "@" not in route.url


@given(st.dictionaries(st.sampled_from(["HTTP_PROXY", "https_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY"]),
                       st.text(max_size=80)),
       st.text(max_size=60), st.integers(min_value=0, max_value=65535))
def test_policy_never_raises(env, host, port):
    policy = ProxyPolicy.from_env(env)
    chosen = policy.for_url("https", host, port)
    assert chosen is None or parse_proxy(chosen)


def test_https_through_the_environment_proxy_opens_an_authenticated_tunnel(tmp_path):
    """`searchhub search` with HTTPS_PROXY set: CONNECT with the proxy's credentials, TLS to the
    upstream verified against a test CA (SSL_CERT_FILE), the Serper request inside the tunnel."""
    import ssl

    import trustme

    ca = trustme.CA()
    ca_path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("search.test").configure_cert(ctx)
    organic = [{"title": "Announcing Rust 1.91.0", "link": "https://blog.rust-lang.org/", "snippet": "s", "position": 1}]

    def answer(method, path, headers, body):
        if (method, path, headers.get("x-api-key")) != ("POST", "/search", KEYS["serper"]):
            return 403, {"content-type": "application/json"}, b'{"message": "Unauthorized.", "statusCode": 403}'
        return 200, {"content-type": "application/json"}, json.dumps({"organic": organic}).encode()

    p = ForwardProxy(credentials=(USER, PASSWORD), tls={"search.test": ctx}, handler=answer).start()
    try:
        path = tmp_path / "engines.json"
        path.write_text(json.dumps(hermetic(config_with([{"id": "serper", "type": "serper", "apiKey": KEYS["serper"],
                                                  "baseURL": "https://search.test"}]))))
        env = {k: v for k, v in os.environ.items() if k != "SEARCHHUB_CONFIG" and "proxy" not in k.lower()}
        env.update({"HTTPS_PROXY": with_auth(p), "SSL_CERT_FILE": str(ca_path)})
        out = subprocess.run([sys.executable, "-m", "hub", "search", "rust", "--config", str(path), "--json"],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    finally:
        p.stop()
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["hits"][0]["url"] == "https://blog.rust-lang.org/"
    assert [(x.kind, x.target, x.authorized) for x in p.passed] == [("connect", "search.test:443", True),
                                                                      ("tls", "search.test:443", True)]
    assert PASSWORD not in out.stdout + out.stderr


def test_environment_proxy_carries_model_calls(gateway, fake_model, monkeypatch):
    """The gateway reads HTTP_PROXY / NO_PROXY when it starts; a model call follows them."""
    p = ForwardProxy(hosts={"model.test": loopback(fake_model.server)}).start()
    monkeypatch.setenv("HTTP_PROXY", p.url())
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # for the test's own httpx client to the gateway
    try:
        gw = gateway(base_config("http://model.test/v1"))
        with gw.client() as c:
            r = c.post("/v1/chat/completions", json={"model": "default", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200, r.text
    finally:
        p.stop()
    assert [(x.kind, x.target, x.path) for x in p.passed] == [("http", "model.test", "/v1/chat/completions")]
    assert len(fake_model.requests) == 1
