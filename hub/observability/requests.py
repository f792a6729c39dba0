"""The record of each finished request -- its metrics, its access line, and for a model call its trace
and client count -- written in batches.

The HTTP middleware (routes/app.py) hands every finished API request to `LEDGER.finished`: one tuple
appended to a list. At most FLUSH_S later, or every MAX_PENDING requests, `flush` counts them on the
request metrics, writes their access lines (through the installed LineHandler, which writes them
with the other lines of the moment) and hands each model call to its `CallSink` (hub/runtime.py's
`Shared.finished`: the trace ring, the telemetry export, the per-client counts, the status page's
activity). Done per request, the same work cost several times as much under load as alone: it ran
between the request's own steps and kept evicting them from the CPU's caches (bench/README.md,
"Where the c=16 gap to the floor is").

What is pending is written before anything else is: a scrape of /metrics, a read of the traces or
the status page (routes/admin.py), any other log line (the handler asks first, so lines keep their
order), the app's shutdown and the process's exit. A line written on the logging module's path
instead of the direct one (a filter or another handler attached, e.g. pytest's caplog) is recorded
at once, as before.

With `serve --workers N` the metrics are counted at once: a scrape is answered by whichever worker
the kernel picks, which can flush its own pending requests but not another worker's, so a batch
there would be missing from the sum (hub/observability/metrics.py's multiprocess mode). Only the
access lines wait."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from . import logformat, metrics
from .logctx import chain_id_var, request_id_var
from .logformat import DirectLog, access_fields, access_message


class CallSink(Protocol):
    """Where a finished model call's own record goes (hub/runtime.py's `Shared`)."""

    def finished(self, trace: object, family: str) -> None: ...


class RequestLedger:
    FLUSH_S = 0.1
    MAX_PENDING = 256

    def __init__(self, log: DirectLog) -> None:
        self.log = log
        self.pending: list[tuple] = []
        self._flushing = False
        # several workers share the metrics (decided before this process imports anything, as
        # prometheus-client's own multiprocess mode is): count at once, see the module's docstring
        self.count_now = metrics.multiprocess()

    def finished(self, endpoint: str, status: int, elapsed_s: float, method: str, path: str, key: str,
                 searches: int, cost: float, trace: object = None, sink: CallSink | None = None,
                 family: str = "") -> None:
        """One finished request: counted on /metrics, and its access line (hub/observability/logformat.py).
        A model call also has a `sink` that takes its trace (None when traces and telemetry are
        off) and its client family."""
        if not self.log.direct():  # the logging module's path: now, in the request's context
            _count(endpoint, str(status), elapsed_s)
            self.log.info(access_message(method, path, status, elapsed_s, key, searches, cost),
                          access_fields(method, path, status, elapsed_s, key, searches, cost, trace))
            if sink is not None:
                sink.finished(trace, family)
            return
        if self.count_now:
            _count(endpoint, str(status), elapsed_s)
            endpoint = None  # counted: the flush writes its line only
            if sink is not None:  # its per-client count too
                sink.finished(trace, family)
                sink = None
        pending = self.pending
        pending.append((time.time(), request_id_var.get(), chain_id_var.get(), endpoint, status, elapsed_s,
                        method, path, key, searches, cost, trace, sink, family))
        n = len(pending)
        if n >= self.MAX_PENDING:
            self.flush()
        elif n == 1:
            try:
                asyncio.get_running_loop().call_later(self.FLUSH_S, self.flush)
            except RuntimeError:  # no event loop to come back: now
                self.flush()

    def flush(self) -> None:
        if not self.pending or self._flushing:
            return
        self._flushing = True  # writing a line may make the handler ask for what is pending again
        try:
            batch, self.pending = self.pending, []
            counts: dict[tuple[str, str], int] = {}
            for _, _, _, endpoint, status, elapsed_s, _, _, _, _, _, trace, sink, family in batch:
                if sink is not None:
                    sink.finished(trace, family)
                if endpoint is None:
                    continue
                label = (endpoint, str(status))
                counts[label] = counts.get(label, 0) + 1
                metrics.child(metrics.REQUEST_LATENCY, endpoint).observe(elapsed_s)
            for (endpoint, status), n in counts.items():
                metrics.child(metrics.REQUESTS, endpoint, status).inc(n)
            if self.log.logger.isEnabledFor(20):  # logging.INFO
                self.log.access_lines(batch)
        finally:
            self._flushing = False


def _count(endpoint: str, status: str, elapsed_s: float) -> None:
    metrics.child(metrics.REQUESTS, endpoint, status).inc()
    metrics.child(metrics.REQUEST_LATENCY, endpoint).observe(elapsed_s)


LEDGER = RequestLedger(DirectLog("searchhub.http"))
logformat.before_write(LEDGER.flush)
