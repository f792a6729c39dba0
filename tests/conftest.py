"""Shared fixtures: fake backends on loopback and the real gateway started over HTTP."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from routes.app import create_app

from .fakes.model import FakeModel
from .fakes.raw_http import RawUpstream
from .fakes.redis_server import RedisServer
from .fakes.server import ServerThread
from .fakes.web import FakeWeb
from .helpers import hermetic, start_redis


@pytest.fixture(scope="session")
def _fake_model_server() -> Iterator[FakeModel]:
    m = FakeModel("a").start()
    yield m
    m.stop()


@pytest.fixture
def fake_model(_fake_model_server: FakeModel) -> FakeModel:
    _fake_model_server.reset()
    return _fake_model_server


@pytest.fixture(scope="session")
def _fake_model_b_server() -> Iterator[FakeModel]:
    m = FakeModel("b").start()
    yield m
    m.stop()


@pytest.fixture
def fake_model_b(_fake_model_b_server: FakeModel) -> FakeModel:
    _fake_model_b_server.reset()
    return _fake_model_b_server


class GatewayHandle:
    def __init__(self, path: Path, server: ServerThread) -> None:
        self.path = path
        self.server = server

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def gateway(self):
        return self.server.app.gateway

    def write_config(self, cfg: dict | str) -> None:
        text = cfg if isinstance(cfg, str) else json.dumps(hermetic(cfg))
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(self.path)  # atomic, like editors that save by rename

    def client(self, **kw) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30, **kw)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator:
    started: list[ServerThread] = []

    def start(cfg: dict, name: str = "engines.json") -> GatewayHandle:
        path = tmp_path / name
        path.write_text(json.dumps(hermetic(cfg)))
        server = ServerThread(create_app(str(path))).start()
        started.append(server)
        return GatewayHandle(path, server)

    yield start
    for s in started:
        s.stop()


def _serve(fake) -> Iterator:
    """Start a fake's app on loopback, set the running server as `fake.server`, stop it afterwards."""
    fake.server = ServerThread(fake.app).start()
    yield fake
    fake.server.stop()


@pytest.fixture(scope="session")
def _search_fakes_server() -> Iterator:
    from .fakes.search_providers import FakeSearchProviders

    yield from _serve(FakeSearchProviders())


@pytest.fixture
def search_fakes(_search_fakes_server):
    """Fake Serper/Brave/Exa/Tavily/SearXNG on one loopback server; `.base_url(.server, name)`."""
    _search_fakes_server.reset()
    return _search_fakes_server


@pytest.fixture(scope="session")
def _search_apis_server() -> Iterator:
    from .fakes.search_apis import FakeSearchApis

    yield from _serve(FakeSearchApis())


@pytest.fixture
def search_apis(_search_apis_server):
    """Fake Bocha/Zhipu/Baidu/Ollama/Jina/Perplexity/Firecrawl/Linkup on one loopback server."""
    _search_apis_server.reset()
    return _search_apis_server


@pytest.fixture(scope="session")
def _search_model_families_server() -> Iterator:
    from .fakes.search_model_families import FakeSearchModelFamilies

    yield from _serve(FakeSearchModelFamilies())


@pytest.fixture
def search_model_families(_search_model_families_server):
    """Fake Qwen/DashScope, Kimi, Sonar, OpenAI and Claude search models on one loopback server."""
    _search_model_families_server.reset()
    return _search_model_families_server


@pytest.fixture(scope="session")
def _search_models_server() -> Iterator:
    from .fakes.search_models import FakeSearchModels

    yield from _serve(FakeSearchModels())


@pytest.fixture
def search_models(_search_models_server):
    """Fake GLM and Gemini search models on one loopback server; `.glm_base(.server, instance)`."""
    _search_models_server.reset()
    return _search_models_server


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    server = start_redis()
    yield server
    server.close()


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A server this test alone may stop, pause and restart."""
    server = start_redis()
    yield server
    server.close()


@pytest.fixture(scope="session")
def _fake_web_server() -> Iterator[FakeWeb]:
    w = FakeWeb().start()
    yield w
    w.stop()


@pytest.fixture
def site(_fake_web_server: FakeWeb) -> FakeWeb:
    """The fake web site on loopback (tests/fakes/web.py), its request log cleared."""
    _fake_web_server.reset()
    return _fake_web_server


@pytest.fixture
def raw():
    """raw(answer) -> a started RawUpstream (tests/fakes/raw_http.py) speaking exactly those bytes;
    every one started is stopped after the test."""
    started: list[RawUpstream] = []

    def make(answer) -> RawUpstream:
        up = RawUpstream(answer).start()
        started.append(up)
        return up

    yield make
    for up in started:
        up.stop()


@pytest.fixture
def no_errors_logged(caplog):
    """Fails the test if the gateway logged an error or a traceback while it ran (hostile-input tests:
    a 400 that was answered after an exception is still a bug)."""
    caplog.set_level(logging.WARNING)
    yield
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not bad, [r.getMessage() for r in bad]
