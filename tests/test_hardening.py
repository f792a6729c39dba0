"""Production behaviour: graceful shutdown and --workers (the real `searchhub serve` as a subprocess),
connect retries before failover, bounded concurrency per provider, and keys that never leak."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
import uvicorn

from .fakes.model import FakeModel
from .fakes.redis_server import RedisServer, free_port
from .helpers import base_config, hermetic, serper_engine, start_redis

ROOT = Path(__file__).resolve().parent.parent


class Serve:
    """`searchhub serve` in its own process, its stderr (the JSON log) in a file."""

    def __init__(self, tmp_path: Path, cfg: dict, *args: str, env: dict[str, str] | None = None) -> None:
        self.config_path = tmp_path / "serve.json"
        self.config_path.write_text(json.dumps(hermetic(cfg)))
        self.port = free_port()
        self.log_path = tmp_path / "serve.log"
        self.env = {**{k: v for k, v in os.environ.items() if k != "SEARCHHUB_CONFIG"}, **(env or {})}
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "routes", "serve", "--config", str(self.config_path), "--port", str(self.port), *args],
            cwd=ROOT, env=self.env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"searchhub serve did not come up:\n{self.log()}")
            time.sleep(0.05)

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        with contextlib.suppress(ProcessLookupError):  # workers too (its own session: nothing else)
            os.killpg(self.proc.pid, signal.SIGKILL)
        self._log.close()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator:
    started: list[Serve] = []

    def start(cfg: dict, *args: str, env: dict[str, str] | None = None) -> Serve:
        s = Serve(tmp_path, cfg, *args, env=env)
        started.append(s)
        s.wait_ready()
        return s

    yield start
    for s in started:
        s.close()


def sdk(url: str, key: str = "client-key") -> openai.OpenAI:
    return openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0)


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except ConnectionRefusedError:
        return True
    return False


# ---------------------------------------------------------------- graceful shutdown, workers


def _stream_in_thread(url: str, out: dict, first_chunk: threading.Event) -> threading.Thread:
    def run() -> None:
        text = []
        try:
            with httpx.stream("POST", url + "/v1/chat/completions", timeout=30, json={
                    "model": "d", "stream": True, "messages": [{"role": "user", "content": "count slowly"}]}) as r:
                out["status"] = r.status_code
                for line in r.iter_lines():
                    if line == "data: [DONE]":
                        out["done"] = True
                    elif line.startswith("data: "):
                        chunk = json.loads(line[6:])
                        if "error" in chunk:  # the gateway's error event at the end of the grace
                            out["error_event"] = chunk["error"].get("code")
                        elif chunk["choices"]:
                            text.append(chunk["choices"][0]["delta"].get("content") or "")
                            first_chunk.set()
        except httpx.HTTPError as e:
            out["error"] = type(e).__name__
        out["text"] = "".join(text)
        first_chunk.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_sigterm_stops_accepting_and_finishes_the_stream(serve, fake_model) -> None:
    cfg = base_config(fake_model.url, server={"shutdownGraceMs": 10_000})
    gw = serve(cfg)
    words = " ".join(f"w{i}" for i in range(12))
    fake_model.script({"content": words, "chunk_delay": 0.1})  # about 1.3 s of stream
    out: dict = {}
    first = threading.Event()
    t = _stream_in_thread(gw.url, out, first)
    assert first.wait(10)
    gw.proc.send_signal(signal.SIGTERM)
    started = time.monotonic()
    deadline = started + 2
    while not refused(gw.port):  # the listener closes at once
        assert time.monotonic() < deadline, "still accepting connections after SIGTERM"
        time.sleep(0.02)
    assert gw.proc.poll() is None, "exited with a stream in flight"
    t.join(10)
    assert out.get("status") == 200 and out.get("done") is True and "error" not in out
    assert "error_event" not in out
    assert out["text"] == words
    assert gw.proc.wait(10) in (0, -signal.SIGTERM)
    assert time.monotonic() - started < 5
    assert "Traceback" not in gw.log()


def test_shutdown_grace_bounds_a_stream_that_does_not_end(serve, fake_model) -> None:
    gw = serve(base_config(fake_model.url, server={"shutdownGraceMs": 300}))
    fake_model.script({"content": " ".join(f"w{i}" for i in range(100)), "chunk_delay": 0.1})  # 10 s
    out: dict = {}
    first = threading.Event()
    t = _stream_in_thread(gw.url, out, first)
    assert first.wait(10)
    started = time.monotonic()
    gw.proc.send_signal(signal.SIGTERM)
    gw.proc.wait(10)
    assert time.monotonic() - started < 3
    t.join(10)
    assert not out.get("done")  # cut at the grace deadline, not waited for
    assert out.get("error_event") == "shutting_down"  # with chat's error event, not a dropped connection


def test_workers_share_the_port(serve, fake_model) -> None:
    gw = serve(base_config(fake_model.url), "--workers", "2")
    pids: set[int] = set()
    deadline = time.monotonic() + 15
    while len(pids) < 2:
        assert time.monotonic() < deadline, f"only {pids} answered"
        with httpx.Client(timeout=5) as c:  # a new connection each time: the kernel picks a worker
            pids.add(c.get(gw.url + "/health").json()["pid"])
    assert gw.proc.pid not in pids  # the supervisor only supervises
    for _ in range(6):
        r = sdk(gw.url).chat.completions.create(model="d", messages=[{"role": "user", "content": "hi"}])
        assert r.choices[0].message.content == "ok"
    gw.proc.send_signal(signal.SIGTERM)
    assert gw.proc.wait(15) in (0, -signal.SIGTERM)
    for pid in pids:  # the workers are gone too
        deadline = time.monotonic() + 5
        while _alive(pid):
            assert time.monotonic() < deadline, f"worker {pid} outlived the supervisor"
            time.sleep(0.05)


def test_workers_stop_when_the_supervisor_is_killed(serve, fake_model) -> None:
    """SIGKILL (the OOM killer) gives the supervisor no chance to stop its workers: they notice
    and stop by themselves, so no orphan keeps the port."""
    gw = serve(base_config(fake_model.url), "--workers", "2")
    pids: set[int] = set()
    deadline = time.monotonic() + 15
    while len(pids) < 2:
        assert time.monotonic() < deadline, f"only {pids} answered"
        with httpx.Client(timeout=5) as c:
            pids.add(c.get(gw.url + "/health").json()["pid"])
    gw.proc.kill()
    gw.proc.wait(10)
    for pid in pids:
        deadline = time.monotonic() + 10
        while _alive(pid):
            assert time.monotonic() < deadline, f"worker {pid} outlived its killed supervisor"
            time.sleep(0.05)
    deadline = time.monotonic() + 5
    while not refused(gw.port):  # the port is free again
        assert time.monotonic() < deadline, "the port is still served"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


# ---------------------------------------------------------------- retries and failover


class LateServer:
    """A port that refuses connections (bound, not listening) until start() serves an app on it."""

    def __init__(self, app) -> None:
        self.app = app
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        self.sock.listen(128)
        self._server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", lifespan="off"))
        self._server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self._thread = threading.Thread(target=lambda: asyncio.run(self._server.serve(sockets=[self.sock])),
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._thread.join(5)
        self.sock.close()


@pytest.fixture
def late_model() -> Iterator[tuple[FakeModel, LateServer]]:
    model = FakeModel("late")  # its own thread server is never started; LateServer serves its app
    late = LateServer(model.server.app)
    yield model, late
    late.close()


def _single_target(url: str, retries: int) -> dict:
    cfg = base_config(url)
    cfg["virtualrouter"]["retries"] = retries
    return cfg


def test_connect_errors_are_retried_with_backoff(gateway, late_model) -> None:
    model, late = late_model
    gw = gateway(_single_target(late.url, retries=5))
    timer = threading.Timer(0.3, late.start)
    started = time.monotonic()
    timer.start()
    r = sdk(gw.url).chat.completions.create(model="d", messages=[{"role": "user", "content": "hi"}])
    elapsed = time.monotonic() - started
    assert r.choices[0].message.content == "ok" and len(model.requests) == 1
    # Nothing listened before 0.3 s, so the answer came from a retry; backoff doubles from 50 ms with
    # ±50% jitter, so the fifth attempt starts after 0.375 s at the earliest and the last by 2.5 s.
    assert 0.3 <= elapsed < 2.5


def test_without_retries_a_refused_connect_fails_at_once(gateway, late_model) -> None:
    _, late = late_model
    gw = gateway(_single_target(late.url, retries=0))
    started = time.monotonic()
    with gw.client() as c:
        r = c.post("/v1/chat/completions", json={"model": "d", "messages": [{"role": "user", "content": "hi"}]})
    assert time.monotonic() - started < 0.5
    assert r.status_code == 502
    assert r.json()["error"]["attempts"] == [
        {"target": "local.m", "provider": "local", "reason": "cannot connect to upstream", "status": None,
         "url": late.url}]


def test_retries_then_failover_to_the_next_target(gateway, late_model, fake_model_b) -> None:
    _, late = late_model  # never started: refuses every connection
    cfg = base_config(late.url)
    cfg["providers"]["b"] = {"type": "vllm", "baseURL": fake_model_b.url}
    cfg["virtualrouter"]["routing"]["default"].append({"id": "backup", "priority": 50, "targets": ["b.m"]})
    cfg["virtualrouter"]["retries"] = 2
    gw = gateway(cfg)
    fake_model_b.script({"content": "from b"})
    started = time.monotonic()
    r = sdk(gw.url).chat.completions.create(model="d", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "from b"
    assert time.monotonic() - started >= 0.075  # two backoffs (25-75 ms, then 50-150 ms) before failing over
    assert "local.m" in httpx.get(gw.url + "/health").json()["cooldowns"]


# ---------------------------------------------------------------- bounded concurrency


def _slow_request_in_thread(url: str, body: dict) -> threading.Thread:
    t = threading.Thread(target=lambda: httpx.post(url + "/v1/chat/completions", json=body, timeout=30), daemon=True)
    t.start()
    return t


def _wait_requests(model: FakeModel, n: int) -> None:
    deadline = time.monotonic() + 5
    while len(model.requests) < n:
        assert time.monotonic() < deadline
        time.sleep(0.01)


@pytest.mark.parametrize("stream", [False, True])
def test_saturated_provider_answers_503_with_retry_after(gateway, fake_model, stream) -> None:
    cfg = base_config(fake_model.url)
    cfg["providers"]["local"]["maxConcurrency"] = 1
    gw = gateway(cfg)
    if stream:  # a stream holds its slot until its last chunk
        fake_model.script({"content": "a b c d e f g h", "chunk_delay": 0.1}, {"content": "next"})
    else:
        fake_model.script({"content": "slow", "delay": 0.8}, {"content": "next"})
    slow = _slow_request_in_thread(gw.url, {"model": "d", "stream": stream,
                                            "messages": [{"role": "user", "content": "slow"}]})
    _wait_requests(fake_model, 1)
    with gw.client() as c:
        r = c.post("/v1/chat/completions", json={"model": "d", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 503
        assert r.headers["retry-after"] == "5"
        err = r.json()["error"]
        assert err["type"] == "server_error" and err["code"] == "upstream_unavailable" and "param" in err
        assert err["attempts"] == [{"target": "local.m", "provider": "local", "status": 503,
                                    "reason": "provider saturated (maxConcurrency reached)", "url": fake_model.url}]
        r = c.post("/v1/messages", headers={"anthropic-version": "2023-06-01"}, json={
            "model": "d", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 529 and r.json()["error"]["type"] == "overloaded_error"
        assert r.headers["retry-after"] == "5"
    assert len(fake_model.requests) == 1  # nothing reached the saturated upstream
    assert "local" in httpx.get(gw.url + "/health").json()["inFlight"]
    slow.join(10)
    assert httpx.get(gw.url + "/health").json()["inFlight"] == {}  # the slot came back
    r = sdk(gw.url).chat.completions.create(model="d", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "next"
    assert httpx.get(gw.url + "/health").json()["cooldowns"] == {}  # saturation is not a failure


def test_saturated_provider_fails_over(gateway, fake_model, fake_model_b) -> None:
    cfg = base_config(fake_model.url)
    cfg["providers"]["local"]["maxConcurrency"] = 1
    cfg["providers"]["b"] = {"type": "vllm", "baseURL": fake_model_b.url}
    cfg["virtualrouter"]["routing"]["default"].append({"id": "backup", "priority": 50, "targets": ["b.m"]})
    gw = gateway(cfg)
    fake_model.script({"content": "slow", "delay": 0.6})
    fake_model_b.script({"content": "from b"})
    slow = _slow_request_in_thread(gw.url, {"model": "d", "messages": [{"role": "user", "content": "slow"}]})
    _wait_requests(fake_model, 1)
    r = sdk(gw.url).chat.completions.create(model="d", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "from b"
    slow.join(10)


# ---------------------------------------------------------------- keys never leak

CANARIES = {
    "provider": "sk-canary-provider-7a1f3c9e2b",
    "header": "hdr-canary-5d2e8f01c4",
    "bad_provider": "sk-canary-badkey-0badc0de99",
    "dead_provider": "sk-canary-deadkey-61c0ffee77",
    "engine": "serper-canary-engine-90b1c2d3",
    "dead_engine": "brave-canary-engine-33aa44bb",
    "gateway": "gw-canary-client-4c4d0e1f55",
    "redis": "redispw-canary-8e7f6a5b4c",
}


def _leaks(text: str) -> list[str]:
    """Canaries found whole or by a 12-character middle slice (a masked key keeps only its ends)."""
    return [name for name, c in CANARIES.items() if c in text or c[4:16] in text]


@pytest.fixture
def redis_with_password() -> Iterator[RedisServer]:
    server = start_redis(password=CANARIES["redis"])
    yield server
    server.close()


def test_keys_never_appear_in_any_output(serve, fake_model, fake_model_b, search_fakes, redis_with_password,
                                         tmp_path) -> None:
    dead_port = free_port()
    cfg = {
        "server": {"apiKeys": ["${CANARY_GATEWAY_KEY}"], "logLevel": "debug", "shutdownGraceMs": 1000},
        "providers": {
            "local": {"type": "vllm", "baseURL": fake_model.url, "apiKey": "${CANARY_PROVIDER_KEY}",
                      "headers": {"X-Org-Token": CANARIES["header"]}},
            "bad": {"type": "vllm", "baseURL": fake_model_b.url, "apiKey": CANARIES["bad_provider"]},
            "dead": {"type": "vllm", "baseURL": f"http://127.0.0.1:{dead_port}/v1",
                     "apiKey": CANARIES["dead_provider"]},
        },
        "virtualrouter": {"routing": {"default": [{"id": "p", "targets": ["local.m"]}]}, "retries": 0},
        "webSearch": {"engines": [
            serper_engine(search_fakes, apiKey="${CANARY_ENGINE_KEY}", default=True),  # the fake rejects it: 403
            {"id": "brave", "type": "brave", "apiKey": CANARIES["dead_engine"],
             "baseURL": f"http://127.0.0.1:{dead_port}", "description": "Brave"},
        ], "fallback": True, "cacheTtlMs": 60_000},
        "state": {"backend": "redis", "url": redis_with_password.url, "timeoutMs": 250},
    }
    env = {"CANARY_GATEWAY_KEY": CANARIES["gateway"], "CANARY_PROVIDER_KEY": CANARIES["provider"],
           "CANARY_ENGINE_KEY": CANARIES["engine"]}
    gw = serve(cfg, env=env)
    outputs: list[tuple[str, str]] = []

    def record(what: str, r: httpx.Response) -> None:
        outputs.append((what, f"{r.status_code} {dict(r.headers)} {r.text}"))

    def echo(body: dict) -> dict:  # a model that repeats everything it was sent, tool results included
        if body["messages"][-1]["role"] == "tool" or "tools" not in body:
            return {"content": json.dumps(body)}
        return {"tool_calls": [{"name": "web_search", "arguments": {"query": "rust release"}}]}

    def bad_key(body: dict) -> dict:  # like services that quote the rejected key back
        sent = fake_model_b.headers[-1].get("authorization", "")
        return {"status": 401, "body": {"error": {"message": f"Incorrect API key provided: {sent}",
                                                  "type": "invalid_request_error", "code": "invalid_api_key"}}}

    fake_model.default = echo
    fake_model_b.default = bad_key
    auth = {"authorization": f"Bearer {CANARIES['gateway']}"}
    chat = [{"role": "user", "content": "search the web for the latest rust release"}]
    with httpx.Client(base_url=gw.url, timeout=20) as c:
        for stream in (False, True):
            r = c.post("/v1/chat/completions", headers=auth, json={"model": "d", "messages": chat, "stream": stream})
            assert r.status_code == 200
            record(f"search chat stream={stream}", r)
        for model in ("bad.m", "dead.m"):
            for stream in (False, True):
                record(f"chat {model} stream={stream}", c.post("/v1/chat/completions", headers=auth, json={
                    "model": model, "messages": [{"role": "user", "content": "hi"}], "stream": stream}))
            record(f"messages {model}", c.post("/v1/messages", headers={**auth, "anthropic-version": "2023-06-01"},
                                               json={"model": model, "max_tokens": 5,
                                                     "messages": [{"role": "user", "content": "hi"}]}))
            record(f"responses {model}", c.post("/v1/responses", headers=auth, json={"model": model, "input": "hi"}))
        r = c.post("/v1/responses", headers=auth, json={"model": "d", "input": "hi", "store": True})
        assert r.status_code == 200
        record("responses stored", r)
        record("get stored", c.get(f"/v1/responses/{r.json()['id']}", headers=auth))
        for bad in ({}, {"authorization": "Bearer wrong"}, {"x-api-key": CANARIES["gateway"][:-1]}):
            r = c.post("/v1/chat/completions", headers=bad, json={"model": "d", "messages": chat})
            assert r.status_code == 401
            record(f"unauthorized {list(bad)}", r)
        record("models", c.get("/v1/models", headers=auth))
        redis_with_password.stop()  # the store's errors carry its URL: the password must be masked
        r = c.post("/v1/chat/completions", headers=auth, json={"model": "d", "messages": [
            {"role": "user", "content": "search the web for rust news after the outage"}]})
        assert r.status_code == 200
        record("chat while redis is down", r)
        health = c.get("/health")
        assert health.json()["state"]["degraded"] is True and health.json()["state"]["last_error"]
        record("health", health)
        record("metrics", c.get("/metrics"))
    gw.proc.send_signal(signal.SIGTERM)
    gw.proc.wait(10)

    for args in (["check"], ["search", "rust release", "--engine", "serper"],
                 ["search", "rust release", "--engine", "brave"]):
        p = subprocess.run([sys.executable, "-m", "hub", *args, "--config", str(gw.config_path)], cwd=ROOT,
                           env=gw.env, capture_output=True, text=True, timeout=30)
        outputs.append((f"searchhub {' '.join(args)}", p.stdout + p.stderr))
    log = gw.log()
    outputs.append(("gateway log (debug)", log))

    # The checks are meaningful: the keys were used, the failures happened and were logged.
    assert fake_model.headers[0]["authorization"] == f"Bearer {CANARIES['provider']}"
    assert fake_model.headers[0]["x-org-token"] == CANARIES["header"]
    assert search_fakes.calls("serper")[0].headers["x-api-key"] == CANARIES["engine"]
    levels = {json.loads(line)["level"] for line in log.splitlines() if line.startswith("{")}
    assert "debug" in levels and "search engine serper failed" in log
    assert "state store unreachable" in log and "redis://:***@127.0.0.1" in log
    texts = dict(outputs)
    # A provider rejecting our key is the gateway's failure (502 naming the 401), not the client's.
    assert texts["chat bad.m stream=False"].startswith("502") and "HTTP 401" in texts["chat bad.m stream=False"]
    assert "cannot connect to upstream" in texts["chat dead.m stream=False"]
    assert "****" in texts["searchhub check"]

    leaks = {what: _leaks(text) for what, text in outputs if _leaks(text)}
    assert leaks == {}, leaks
    # Nor is any key sent where it does not belong: the gateway key goes nowhere upstream, and the
    # model never sees a search engine's key.
    upstream = json.dumps([fake_model.headers, fake_model.requests, fake_model_b.headers,
                           [vars(r) | {"body": ""} for r in search_fakes.calls("serper")]], default=str)
    assert CANARIES["gateway"] not in upstream
    assert CANARIES["engine"] not in json.dumps(fake_model.requests)
