"""The CLI for people: no traceback when the reader of its output goes away, and log lines that a
person can read on a terminal (JSON everywhere else, or as --log-format says)."""

from __future__ import annotations

import io
import json
import logging
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hub.observability.logformat import JsonFormatter, TextFormatter, wants_text

from .fakes.redis_server import free_port
from .helpers import base_config, hermetic

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "opencode" / "web-search-001-POST-chat-side-title-sse.json"


@pytest.mark.parametrize("args", [
    ["classify", "search the web for the latest news"],
    ["classify", "--request", str(FIXTURE)],
    ["check", "--config", str(ROOT / "engines.json")],
])
def test_a_closed_pipe_is_no_traceback(args: list[str]) -> None:
    """`searchhub classify ... | head -0`: the reader is gone before the first write."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {**os.environ, "OLLAMA_BASE_URL": "http://127.0.0.1:9/v1", "SEARXNG_URL": "http://127.0.0.1:9",
           "LLAMACPP_BASE_URL": "http://127.0.0.1:9/v1"}
    proc = subprocess.run([sys.executable, "-m", "hub", *args], cwd=ROOT, stdout=write_end, stderr=subprocess.PIPE,
                          text=True, timeout=60, env=env)
    os.close(write_end)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.returncode in (141, 1), proc.stderr  # 1: `check` may reject the sample config's env


def test_head_reads_the_first_line_only() -> None:
    out = subprocess.run(f"{sys.executable} -m hub classify --request {FIXTURE} | head -1", shell=True, cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.stdout == "protocol:         chat\n"
    assert "Traceback" not in out.stderr, out.stderr


def record(msg: str = "hello %s", *args, exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError("boom")
        except ValueError:
            exc_info = sys.exc_info()
    rec = logging.LogRecord("searchhub.pipeline", logging.WARNING, __file__, 1, msg, args or ("world",), exc_info)
    rec.request_id = "req_abc"
    rec.chain_id = "-"
    return rec


def test_text_lines_for_people() -> None:
    line = TextFormatter().format(record())
    assert re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3} WARN  searchhub\.pipeline \[req_abc\] hello world", line), line
    with_exc = TextFormatter().format(record(exc=True))
    assert with_exc.splitlines()[0].endswith("hello world") and "ValueError: boom" in with_exc
    assert json.loads(JsonFormatter().format(record()))["msg"] == "hello world"


class Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def test_format_choice() -> None:
    assert wants_text("auto", Stream(True)) and not wants_text("auto", Stream(False))
    assert wants_text("text", Stream(False)) and not wants_text("json", Stream(True))
    closed = io.StringIO()
    closed.close()  # isatty() raises ValueError
    assert not wants_text("auto", closed)


def _serve_log(tmp_path: Path, fake_model, *args: str, tty: bool = False) -> str:
    cfg_path = tmp_path / "e.json"
    cfg_path.write_text(json.dumps(hermetic(base_config(fake_model.url))))
    cmd = [sys.executable, "-m", "routes", "serve", "--config", str(cfg_path), "--port", str(free_port()), *args]
    env = {k: v for k, v in os.environ.items() if k not in ("SEARCHHUB_CONFIG", "SEARCHHUB_LOG_FORMAT")}
    if tty:
        controller, terminal = pty.openpty()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=terminal)
        os.close(terminal)
        out = b""
        deadline = time.monotonic() + 30
        while b"listening" not in out and time.monotonic() < deadline:
            try:
                out += os.read(controller, 4096)
            except OSError:
                break
        proc.kill()
        proc.wait(10)
        os.close(controller)
        return out.decode(errors="replace")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    out = b""
    deadline = time.monotonic() + 30
    while b"listening" not in out and time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        out += line
    proc.kill()
    proc.wait(10)
    return out.decode(errors="replace")


def test_serve_logs_text_on_a_terminal(tmp_path: Path, fake_model) -> None:
    log = _serve_log(tmp_path, fake_model, tty=True)
    line = next(ln for ln in log.splitlines() if "listening" in ln)
    assert re.match(r"\d\d:\d\d:\d\d\.\d{3} info  searchhub searchhub listening on http://", line.strip()), log


def test_serve_logs_json_to_a_pipe_and_as_told(tmp_path: Path, fake_model) -> None:
    line = next(ln for ln in _serve_log(tmp_path, fake_model).splitlines() if "listening" in ln)
    assert json.loads(line)["msg"].startswith("searchhub listening")
    line = next(ln for ln in _serve_log(tmp_path, fake_model, "--log-format", "text").splitlines()
                if "listening" in ln)
    assert not line.startswith("{") and "info  searchhub searchhub listening" in line
    log = _serve_log(tmp_path, fake_model, "--log-format", "json", tty=True)
    assert json.loads(next(ln for ln in log.splitlines() if "listening" in ln).strip())["level"] == "info"
