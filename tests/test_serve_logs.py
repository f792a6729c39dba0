"""`searchhub serve` on a pipe logs JSON lines. Uvicorn says its start-up and shutdown under the
logger `uvicorn.error`; in the gateway's log those lines are `uvicorn`'s, so nothing reads as an
error that is none, and uvicorn's real warnings and errors keep their name and level."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from .fakes.redis_server import free_port
from .helpers import base_config

ROOT = Path(__file__).resolve().parent.parent


class Serve:
    """The gateway as a process, its stderr read line by line in a thread."""

    def __init__(self, tmp_path: Path, model_url: str) -> None:
        config = tmp_path / "engines.json"
        config.write_text(json.dumps(base_config(model_url)))
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if k not in ("SEARCHHUB_CONFIG", "SEARCHHUB_LOG_FORMAT")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "routes", "serve", "--config", str(config), "--port", str(self.port),
             "--log-format", "json"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=lambda: self.lines.extend(self.proc.stderr), daemon=True)
        self.reader.start()

    def wait_for(self, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            assert time.monotonic() < deadline and self.proc.poll() is None, "".join(self.lines)
            time.sleep(0.05)

    def stop(self) -> list[dict]:
        """SIGTERM (a graceful shutdown), then every line it wrote, as JSON."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(10)
        self.reader.join(10)
        return [json.loads(line) for line in self.lines]


def test_start_up_and_shutdown_lines_are_not_errors(tmp_path: Path, fake_model) -> None:
    serve = Serve(tmp_path, fake_model.url)
    try:
        serve.wait_for("Uvicorn running on")
        with socket.create_connection(("127.0.0.1", serve.port), timeout=5) as s:  # uvicorn's own warning
            s.sendall(b"NOT HTTP\x00\r\n\r\n")
            s.recv(1024)
        serve.wait_for("Invalid HTTP request")
    finally:
        log = serve.stop()
    said = {line["msg"].split(" [")[0].split(" on http")[0]: line for line in log}
    for msg in ("Started server process", "Waiting for application startup.", "Application startup complete.",
                "Uvicorn running", "Shutting down", "Application shutdown complete.", "Finished server process"):
        assert (said[msg]["logger"], said[msg]["level"]) == ("uvicorn", "info"), said[msg]
    assert not [line for line in log if line["logger"] == "uvicorn.error" and line["level"] == "info"], log
    invalid = said["Invalid HTTP request received."]
    assert (invalid["logger"], invalid["level"]) == ("uvicorn.error", "warning")
    assert said["searchhub listening"]["logger"] == "searchhub"
