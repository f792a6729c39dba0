"""`searchhub serve`: logging, config check, uvicorn; and the `searchhub` program itself, which adds
`serve` to the commands of hub/cli.py (the HTTP layer lives here, so hub/ never imports it)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
import time

from hub import cli
from hub import config as cfgmod
from hub.logctx import RequestContextFilter

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"  # read by prometheus-client when hub.metrics is imported

_CONFIG_ENV = "SEARCHHUB_CONFIG"


class JsonFormatter(logging.Formatter):
    """One JSON object per line, with the request and chain ids. Bodies and keys are never logged."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "request_id": getattr(record, "request_id", "-"),
        }
        chain = getattr(record, "chain_id", "-")
        if chain != "-":
            entry["chain_id"] = chain
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def setup_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestContextFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        lg = logging.getLogger(name)
        lg.handlers[:] = []
        lg.propagate = True
    logging.getLogger("uvicorn.access").disabled = True  # our middleware logs with request ids instead
    logging.getLogger("httpx").setLevel(logging.WARNING)


def app_factory():
    """Uvicorn worker entry point (`--workers N` needs an importable factory)."""
    from .app import create_app

    path = os.environ.get(_CONFIG_ENV, "engines.json")
    cfg = cfgmod.load(path)
    setup_logging(cfg.server.log_level)
    return create_app(path, cfg)


def serve(path: str, *, host: str | None = None, port: int | None = None, workers: int = 1) -> int:
    import uvicorn

    cfg = cfgmod.load_or_report(path)
    if cfg is None:
        return 1
    setup_logging(cfg.server.log_level)
    os.environ[_CONFIG_ENV] = os.path.abspath(path)
    host = host or cfg.server.host
    port = cfg.server.port if port is None else port
    if workers > 1 and cfg.state.get("backend") != "redis":
        logging.getLogger("searchhub").warning(
            "--workers %d with the memory state store: chains, stored responses and the search cache are "
            "per worker; configure state.backend=redis to share them", workers)
    metrics_dir = _multiprocess_metrics(workers)
    logging.getLogger("searchhub").info("searchhub listening on http://%s:%d (config %s)", host, port, path)
    try:
        uvicorn.run(
            "routes.serve:app_factory",
            factory=True,
            host=host,
            port=port,
            workers=workers if workers > 1 else None,
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=cfg.server.shutdown_grace_s,
            timeout_keep_alive=30,
            server_header=False,
        )
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    return 0


def _multiprocess_metrics(workers: int) -> str | None:
    """With several workers, each writes its metric values to files in one directory and /metrics sums
    them (hub/metrics.py). Set before the workers start, so they inherit it. Returns the directory this
    call created (removed at exit), or None."""
    if workers <= 1:
        return None
    given = os.environ.get(MULTIPROC_ENV)
    if given:  # the operator's directory: stale files from an earlier run would add old counts
        os.makedirs(given, exist_ok=True)
        for name in os.listdir(given):
            if name.endswith(".db"):
                os.remove(os.path.join(given, name))
        return None
    created = tempfile.mkdtemp(prefix="searchhub-metrics-")
    os.environ[MULTIPROC_ENV] = created
    return created


def main(argv: list[str] | None = None) -> int:
    """The `searchhub` program: hub/cli.py's commands, with `serve` run here."""
    return cli.main(argv, serve=serve)
