"""`searchhub serve`: logging, config check, uvicorn; and the `searchhub` program itself, which adds
`serve` to the commands of hub/cli/main.py (the HTTP layer lives here, so hub/ never imports it)."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

from hub import config as cfgmod
from hub.cli import main as cli
from hub.observability.logctx import RequestContextFilter
from hub.observability.logformat import JsonFormatter, LineHandler, TextFormatter, install, wants_text

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"  # read by prometheus-client when hub.observability.metrics is imported

_CONFIG_ENV = cfgmod.CONFIG_ENV
_LOG_FORMAT_ENV = "SEARCHHUB_LOG_FORMAT"
_SUPERVISOR_ENV = "SEARCHHUB_SUPERVISOR_PID"  # set by `serve --workers N` for its workers


def setup_logging(level: str, log_format: str | None = None) -> None:
    """Logs on stderr: text lines on a terminal, JSON otherwise; `log_format` (or
    $SEARCHHUB_LOG_FORMAT, which --workers children inherit) says text, json or auto."""
    log_format = log_format or os.environ.get(_LOG_FORMAT_ENV, "auto")
    # No formatter here prints the caller's file/line, thread or process: skip computing them for
    # every record (the logging module's own documented optimizations).
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    handler = LineHandler(sys.stderr)
    handler.setFormatter(TextFormatter() if wants_text(log_format, sys.stderr) else JsonFormatter())
    handler.addFilter(RequestContextFilter())

    def uvicorn_named(record: logging.LogRecord) -> bool:
        # Uvicorn says "Started server process", "Uvicorn running on ..." and the like under the
        # logger `uvicorn.error`, which reads as an error (in JSON logs above all): below WARNING
        # its lines are `uvicorn`'s; its warnings and errors keep the name.
        if record.name == "uvicorn.error" and record.levelno < logging.WARNING:
            record.name = "uvicorn"
        return True

    handler.addFilter(uvicorn_named)
    install(handler)
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
    from hub.runtime import load_config

    from .app import create_app

    path = cfgmod.locate(None).path  # serve() put the absolute path in $SEARCHHUB_CONFIG
    cfg = load_config(path)
    setup_logging(cfg.server.log_level)
    supervisor = os.environ.get(_SUPERVISOR_ENV)
    if supervisor and supervisor.isdigit() and int(supervisor) == os.getppid():
        _exit_with_supervisor(int(supervisor))
    return create_app(path, cfg)


PARENT_CHECK_S = 1.0


def _exit_with_supervisor(supervisor: int) -> None:
    """A `--workers` worker whose supervisor died (SIGKILL, the OOM killer) shuts down within
    PARENT_CHECK_S instead of serving on as an orphan that holds the port: uvicorn restarts and stops
    its workers only while it is alive. SIGTERM gives the worker uvicorn's graceful shutdown."""

    def watch() -> None:
        while os.getppid() == supervisor:
            time.sleep(PARENT_CHECK_S)
        logging.getLogger("searchhub").warning("the supervisor (pid %d) is gone: this worker stops", supervisor)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="searchhub-supervisor-watch", daemon=True).start()


def serve(where: cfgmod.ConfigLocation, *, host: str | None = None, port: int | None = None, workers: int = 1,
          log_format: str = "auto") -> int:
    import uvicorn

    path = where.path
    cfg = cli.load_config(path)
    if cfg is None:
        return 1
    if log_format == "auto":  # decided once here, where stderr is the operator's, for every worker
        log_format = "text" if wants_text("auto", sys.stderr) else "json"
    os.environ[_LOG_FORMAT_ENV] = log_format
    setup_logging(cfg.server.log_level, log_format)
    logging.getLogger("searchhub").info("using %s", where.describe())
    os.environ[_CONFIG_ENV] = os.path.abspath(path)
    host = host or cfg.server.host
    port = cfg.server.port if port is None else port
    if workers > 1 and cfg.state.get("backend") != "redis":
        logging.getLogger("searchhub").warning(
            "--workers %d with the memory state store: chains, stored responses and the search cache are "
            "per worker; configure state.backend=redis to share them", workers)
    metrics_dir = _multiprocess_metrics(workers)
    if workers > 1:  # the workers watch for this process (app_factory)
        os.environ[_SUPERVISOR_ENV] = str(os.getpid())
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
            proxy_headers=False,  # nothing reads the client's address (docs/deployment.md, "Security")
        )
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    return 0


def _multiprocess_metrics(workers: int) -> str | None:
    """With several workers, each writes its metric values to files in one directory and /metrics sums
    them (hub/observability/metrics.py). Set before the workers start, so they inherit it. Returns the directory this
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
    """The `searchhub` program: hub/cli/main.py's commands, with `serve` run here."""
    return cli.main(argv, serve=serve)
