"""Helpers the tests share: configs, engine entries, a started redis-server (fixtures are in conftest)."""

from __future__ import annotations

import copy
import importlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from hub.config import parse
from hub.routing.dispatch import Dispatcher, Gate
from hub.routing.router import Cooldowns, Router
from hub.runtime import PLUGINS
from hub.search import SearchService
from hub.store.memory import MemoryStore
from hub.upstream.http import make_client

from .fakes.redis_server import RedisServer, RedisServerMissing, free_port  # noqa: F401 - for the tests: a port nothing listens on
from .fakes.search_providers import KEYS

ROOT = Path(__file__).resolve().parent.parent


def base_config(model_url: str, **overrides) -> dict:
    """A minimal engines.json: one self-hosted provider 'local' serving model 'm' on the default route."""
    cfg = {
        "providers": {"local": {"type": "vllm", "baseURL": model_url}},
        "virtualrouter": {"routing": {"default": [{"id": "p", "priority": 100, "targets": ["local.m"]}]},
                          "cooldownMs": 30000, "retries": 0},
        "server": {"reloadIntervalMs": 100},
    }
    for k, v in overrides.items():
        cfg[k] = v
    return cfg


def hermetic(cfg: dict) -> dict:
    """`cfg` as a test serves it: reading result pages (webSearch.readPages, on by default) stays off unless
    the test sets it, because the fakes' hits name real sites and a test never reaches the internet.
    tests/test_read_pages.py and bench/grounding.py turn it on against pages on loopback."""
    cfg = copy.deepcopy(cfg)
    ws = cfg.setdefault("webSearch", {})
    if isinstance(ws, dict):
        ws.setdefault("readPages", {"enabled": False})
    return cfg


@asynccontextmanager
async def search_service(config: dict, env: dict[str, str] | None = None) -> AsyncIterator[SearchService]:
    """A SearchService over `config` (engines.json as a dict), with its own HTTP client for `env`."""
    cfg = parse(json.dumps(config), env={}, plugins=PLUGINS)
    client = make_client(env=env or {})
    router = Router(cfg, Cooldowns())
    try:
        yield SearchService(cfg, client, router, Dispatcher(client, router, Gate()), MemoryStore())
    finally:
        await client.aclose()


def start_redis(password: str | None = None) -> RedisServer:
    """A started redis-server. CI installs it, so a missing one fails the test, never skips it."""
    try:
        server = RedisServer(password=password)
    except RedisServerMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    server.start()
    return server


def searxng_engine(fakes, id: str = "searxng", **extra) -> dict:
    return {"id": id, "type": "searxng", "baseURL": fakes.base_url(fakes.server, "searxng"),
            "description": "SearXNG metasearch", **extra}


def serper_engine(fakes, id: str = "serper", **extra) -> dict:
    return {"id": id, "type": "serper", "apiKey": KEYS["serper"], "baseURL": fakes.base_url(fakes.server, "serper"),
            "description": "Google results via Serper", **extra}


def as_reads(items: list, cuts: list[int]) -> list:
    """Pipeline stream items with runs of chat chunks handed over as lists, as one upstream read's
    chunks are (hub/tools/events.py); a cut index starts a new read."""
    out: list = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and i not in cuts and out and isinstance(out[-1], list):
            out[-1].append(item)
        else:
            out.append([item] if isinstance(item, dict) else item)
    return out


class ServeProcess:
    """`searchhub serve` as a process with the test's config, its stderr read line by line in a thread
    (for what only a real process shows: its log lines, signals)."""

    def __init__(self, tmp_path: Path, cfg: dict, log_format: str = "json") -> None:
        path = tmp_path / "engines.json"
        path.write_text(json.dumps(hermetic(cfg)))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if k not in ("SEARCHHUB_CONFIG", "SEARCHHUB_LOG_FORMAT")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "routes", "serve", "--config", str(path), "--port", str(self.port),
             "--log-format", log_format],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=lambda: self.lines.extend(self.proc.stderr), daemon=True)
        self.reader.start()

    def wait_for(self, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            assert time.monotonic() < deadline and self.proc.poll() is None, "".join(self.lines)
            time.sleep(0.05)

    def stop(self) -> list[str]:
        """SIGTERM (a graceful shutdown), then every line it wrote."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(10)
        self.reader.join(10)
        return self.lines


def throwaway_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, modules: dict[str, str],
                      prefix: str = "plugins"):
    """A throwaway plug-in package on sys.path holding `modules` (name -> source), for the registries'
    one-folder tests (hub/core/plugins.py)."""
    name = f"{prefix}_{uuid.uuid4().hex}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    for module, source in modules.items():
        (tmp_path / name / f"{module}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)
