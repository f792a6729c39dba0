"""`searchhub serve` on a pipe logs JSON lines. Uvicorn says its start-up and shutdown under the
logger `uvicorn.error`; in the gateway's log those lines are `uvicorn`'s, so nothing reads as an
error that is none, and uvicorn's real warnings and errors keep their name and level."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from .helpers import ServeProcess, base_config

ROOT = Path(__file__).resolve().parent.parent


def test_start_up_and_shutdown_lines_are_not_errors(tmp_path: Path, fake_model) -> None:
    serve = ServeProcess(tmp_path, base_config(fake_model.url))
    try:
        serve.wait_for("Uvicorn running on")
        with socket.create_connection(("127.0.0.1", serve.port), timeout=5) as s:  # uvicorn's own warning
            s.sendall(b"NOT HTTP\x00\r\n\r\n")
            s.recv(1024)
        serve.wait_for("Invalid HTTP request")
    finally:
        log = [json.loads(line) for line in serve.stop()]
    said = {line["msg"].split(" [")[0].split(" on http")[0]: line for line in log}
    for msg in ("Started server process", "Waiting for application startup.", "Application startup complete.",
                "Uvicorn running", "Shutting down", "Application shutdown complete.", "Finished server process"):
        assert (said[msg]["logger"], said[msg]["level"]) == ("uvicorn", "info"), said[msg]
    assert not [line for line in log if line["logger"] == "uvicorn.error" and line["level"] == "info"], log
    invalid = said["Invalid HTTP request received."]
    assert (invalid["logger"], invalid["level"]) == ("uvicorn.error", "warning")
    assert said["searchhub listening"]["logger"] == "searchhub"
