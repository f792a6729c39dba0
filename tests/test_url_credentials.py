"""Credentials written in a provider's or engine's baseURL (`http://user:pass@host/v1`): taken out of
the URL at load and sent as a Basic `authorization` header; beside an apiKey (or an authorization
header) they are a config error naming the field. The password never shows: not in `searchhub
check`, /health, errors or the reload error."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from hub import config as cfgmod
from hub.runtime import PLUGINS

from .fakes.server import ServerThread
from .helpers import base_config, hermetic, searxng_engine

ROOT = Path(__file__).resolve().parent.parent
USER, PASSWORD = "alice", "p@ss-7d3e9b41"
ENCODED = "p%40ss-7d3e9b41"  # the password as a URL carries it
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
# what must never be shown: the password in any spelling, and the header made of it
LEAKS = (PASSWORD, ENCODED, "ss-7d3e9b41", BASIC.split()[1])


class BasicAuthModel:
    """An OpenAI-compatible chat server behind Basic auth (like a model server behind a reverse proxy):
    401 unless `authorization` is exactly the Basic of USER and PASSWORD."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []
        self.server = ServerThread(Starlette(routes=[
            Route("/v1/chat/completions", self.chat, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
        ]))

    def url(self, userinfo: str = f"{USER}:{ENCODED}@") -> str:
        return f"http://{userinfo}127.0.0.1:{self.server.port}/v1"

    def _refused(self, request: Request) -> Response | None:
        self.seen.append({k.lower(): v for k, v in request.headers.items()})
        if request.headers.get("authorization") != BASIC:
            return JSONResponse({"error": {"message": "basic auth required", "type": "auth"}}, status_code=401,
                                headers={"www-authenticate": 'Basic realm="models"'})
        return None

    async def models(self, request: Request) -> Response:
        return self._refused(request) or JSONResponse({"object": "list", "data": [{"id": "m", "object": "model"}]})

    async def chat(self, request: Request) -> Response:
        if (refused := self._refused(request)) is not None:
            return refused
        body = await request.json()
        return JSONResponse({
            "id": "chatcmpl-basic", "object": "chat.completion", "created": int(time.time()), "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "behind basic auth"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6},
        })


@pytest.fixture
def basic_model() -> Iterator[BasicAuthModel]:
    m = BasicAuthModel()
    m.server.start()
    yield m
    m.server.stop()


def no_leak(text: str) -> None:
    for secret in LEAKS:
        assert secret not in text


def chat(gw) -> httpx.Response:
    return httpx.post(gw.url + "/v1/chat/completions", timeout=30,
                      json={"model": "default", "messages": [{"role": "user", "content": "hi"}]})


def check(cfg: dict, tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "check.json"
    path.write_text(json.dumps(hermetic(cfg)))
    return subprocess.run([sys.executable, "-m", "hub", "check", "--config", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if k != "SEARCHHUB_CONFIG"})


# ---------------------------------------------------------------- providers


def test_provider_url_credentials_become_basic_auth(gateway, basic_model, tmp_path) -> None:
    cfg = base_config(basic_model.url())
    gw = gateway(cfg)
    r = chat(gw)
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == "behind basic auth"
    assert basic_model.seen[-1]["authorization"] == BASIC
    health = httpx.get(gw.url + "/health", timeout=10).text
    no_leak(health)
    assert json.loads(health)["providers"]["local"]["url"] == f"http://****@127.0.0.1:{basic_model.server.port}/v1"
    out = check(cfg, tmp_path)
    assert out.returncode == 0, out.stderr
    no_leak(out.stdout + out.stderr)
    table = json.loads(out.stdout[out.stdout.index("{"):])
    local = table["providers"]["local"]
    assert local["baseURL"] == f"http://****@127.0.0.1:{basic_model.server.port}/v1"  # as written, masked
    assert local["headers"] == {"authorization": "****"}


def test_provider_url_credentials_and_an_api_key_fail_check(basic_model, tmp_path) -> None:
    cfg = base_config(basic_model.url())
    cfg["providers"]["local"]["apiKey"] = "sk-local-0123456789"
    out = check(cfg, tmp_path)
    assert out.returncode == 1
    assert "providers.local.baseURL: credentials in the URL and an apiKey: keep one" in out.stdout + out.stderr
    no_leak(out.stdout + out.stderr)


def test_hot_reload_refuses_url_credentials_beside_an_api_key(gateway, basic_model) -> None:
    cfg = base_config(basic_model.url())
    gw = gateway(cfg)
    assert chat(gw).status_code == 200
    bad = json.loads(json.dumps(cfg))
    bad["providers"]["local"]["apiKey"] = "sk-local-0123456789"
    gw.write_config(bad)
    deadline = time.monotonic() + 10
    while (httpx.get(gw.url + "/health", timeout=10).json()["config"]["lastReloadError"] or "") == "":
        assert time.monotonic() < deadline, "the invalid reload was not reported"
        time.sleep(0.1)
    health = httpx.get(gw.url + "/health", timeout=10).text
    assert "providers.local.baseURL: credentials in the URL and an apiKey: keep one" in \
        json.loads(health)["config"]["lastReloadError"]
    no_leak(health)
    r = chat(gw)  # the previous config keeps serving
    assert r.status_code == 200, r.text
    assert basic_model.seen[-1]["authorization"] == BASIC


@pytest.mark.parametrize("header", ["authorization", "Authorization"])
def test_url_credentials_beside_an_authorization_header_are_an_error(header) -> None:
    cfg = base_config(f"http://{USER}:{ENCODED}@127.0.0.1:9/v1")
    cfg["providers"]["local"]["headers"] = {header: "Bearer sk-other"}
    with pytest.raises(cfgmod.ConfigError) as e:
        cfgmod.build(cfg, env={}, plugins=PLUGINS)
    assert e.value.errors == ["providers.local.baseURL: credentials in the URL and an authorization header: keep one"]
    no_leak(str(e.value))


@pytest.mark.parametrize(("url", "bare", "credentials"), [
    ("http://u:p%3Aw%2F@h:1/v1/", "http://h:1/v1", "u:p:w/"),
    ("https://user@h/v1", "https://h/v1", "user:"),
    ("http://u:p@ss@h/v1", "http://h/v1", "u:p@ss"),  # a raw '@' belongs to the password
    ("http://%C3%A9:%C3%BC@h/v1", "http://h/v1", "é:ü"),
    ("http://h/v1?x=a@b", "http://h/v1?x=a@b", None),  # an '@' after the authority is no credential
])
def test_url_credentials_are_decoded_and_removed(url, bare, credentials) -> None:
    cfg = cfgmod.build(base_config(url), env={}, plugins=PLUGINS)
    p = cfg.providers["local"]
    assert p.base_url == bare and p.base_url + "/chat/completions" == bare + "/chat/completions"
    if credentials is None:
        assert p.headers == {}
    else:
        assert p.headers == {"authorization": "Basic " + base64.b64encode(credentials.encode()).decode()}
        assert p.masked()["baseURL"] == bare.replace("//", "//****@", 1)  # shown as written, masked
        assert cfgmod.mask_url(p.base_url) == p.masked()["baseURL"]
        password = credentials.partition(":")[2]
        assert not password or password not in repr(p) + repr(p.base_url) + str(p.base_url.__reduce__())


def test_env_expanded_url_credentials_are_taken_out_too() -> None:
    cfg = cfgmod.build(base_config("${MODEL_URL}"), env={"MODEL_URL": f"http://{USER}:{ENCODED}@10.0.0.5:8000/v1"},
                       plugins=PLUGINS)
    p = cfg.providers["local"]
    assert p.base_url == "http://10.0.0.5:8000/v1" and p.headers == {"authorization": BASIC}
    assert p.base_url_env == ("MODEL_URL",)
    no_leak(json.dumps(cfg.routing_table()))


# ---------------------------------------------------------------- search engines


def test_engine_url_credentials_become_basic_auth(gateway, fake_model, search_fakes, tmp_path) -> None:
    engine = searxng_engine(search_fakes, default=True)
    engine["baseURL"] = engine["baseURL"].replace("http://", f"http://{USER}:{ENCODED}@")
    cfg = base_config(fake_model.url)
    cfg["webSearch"] = {"engines": [engine]}
    gw = gateway(cfg)
    r = httpx.post(gw.url + "/v1/search", json={"query": "latest stable rust release", "count": 3}, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["engine"] == "searxng" and r.json()["hits"]
    [call] = search_fakes.calls("searxng")
    assert call.headers["authorization"] == BASIC
    no_leak(httpx.get(gw.url + "/health", timeout=10).text)
    out = check(cfg, tmp_path)
    assert out.returncode == 0, out.stderr
    no_leak(out.stdout + out.stderr)
    [shown] = json.loads(out.stdout[out.stdout.index("{"):])["webSearch"]["engines"]
    assert shown["headers"] == {"authorization": "****"}


def test_engine_url_credentials_and_an_api_key_fail_check(search_fakes, tmp_path) -> None:
    engine = searxng_engine(search_fakes, apiKey="searx-token-123456")
    engine["baseURL"] = engine["baseURL"].replace("http://", f"http://{USER}:{ENCODED}@")
    cfg = base_config("http://127.0.0.1:9/v1")
    cfg["webSearch"] = {"engines": [engine]}
    out = check(cfg, tmp_path)
    assert out.returncode == 1
    assert "webSearch.engines[0].baseURL: credentials in the URL and an apiKey: keep one" in out.stdout + out.stderr
    no_leak(out.stdout + out.stderr)
