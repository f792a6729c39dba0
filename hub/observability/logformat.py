"""Log lines: for people, `HH:MM:SS.mmm LEVEL logger [request chain] message` (when stderr is a
terminal), or one JSON object per line, where the access line's fields are JSON keys of their own."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TextIO

import msgspec

from .logctx import chain_id_var, request_id_var

_encode = msgspec.json.encode
_LEVELS = {"DEBUG": "debug", "INFO": "info ", "WARNING": "WARN ", "ERROR": "ERROR", "CRITICAL": "CRIT "}
# The access line's fields (routes/app.py, one line per request): the JSON format writes them as keys of
# their own beside `msg`; the text format keeps them in the message only. Passed as `extra=` on a
# logging record, or as `fields` to DirectLog.info. Never a secret: `key` is the key's name.
ACCESS_FIELDS = ("method", "path", "status", "duration_ms", "route", "target", "key", "searches", "fetches",
                 "search_cost")


def access_fields(method: str, path: str, status: int, elapsed_s: float, key: str, searches: int, cost: float,
                  trace: object = None, fetch_tool: str = "web_fetch") -> dict:
    """The access line's fields. Route, target and fetches come from the request's trace (hub/observability/trace.py)
    and are left out when there is none (traces and telemetry off, or no model call)."""
    fields = {"method": method, "path": path, "status": status, "duration_ms": int(elapsed_s * 10000 + 0.5) / 10,
              "key": key, "searches": searches, "search_cost": round(cost, 6) if cost else 0}
    if trace is not None:
        route, target, fields["fetches"] = _trace_fields(trace, fetch_tool)
        if route is not None:
            fields["route"] = route
        if target is not None:
            fields["target"] = target
    return fields


def access_message(method: str, path: str, status: int, elapsed_s: float, key: str, searches: int,
                   cost: float) -> str:
    """The access line's text: `POST /v1/chat/completions 200 12.3 ms key=team searches=1 search_cost=0.005`."""
    return (f"{method} {path} {status} {elapsed_s * 1000:.1f} ms key={key} searches={searches} "
            f"search_cost={money(cost) if cost else '0'}")


def money(cost: float) -> str:
    """A cost without float noise: 0.005, 0, 1.25."""
    return f"{cost:.6f}".rstrip("0").rstrip(".") or "0"


class AccessEntry(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The access line in the JSON format: the keys JsonFormatter.line writes for it, in its order
    (a key whose value is None is left out), encoded many at once (`JsonFormatter.access_lines`)."""

    ts: str
    level: str
    logger: str
    msg: str
    request_id: str
    chain_id: str | None = None
    method: str
    path: str
    status: int
    duration_ms: float
    route: str | None = None
    target: str | None = None
    key: str
    searches: int
    fetches: int | None = None
    search_cost: float


_encode_lines = msgspec.json.Encoder().encode_lines


def _trace_fields(trace: object, fetch_tool: str = "web_fetch") -> tuple[str | None, str | None, int | None]:
    """route, target and fetches of an access line, from the request's trace (None without one)."""
    if trace is None:
        return None, None, None
    return (getattr(trace, "route", None), getattr(trace, "target", None),
            sum(1 for call in getattr(trace, "calls", ()) if call.tool == fetch_tool))


def wants_text(log_format: str, stream: TextIO) -> bool:
    """text | json | auto (text when the stream is a terminal)."""
    if log_format in ("text", "json"):
        return log_format == "text"
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


class TextFormatter(logging.Formatter):
    """One readable line per record, with the request and chain ids when there are any."""

    _clock: tuple[int, str] = (-1, "")  # the seconds, formatted once per second (one tuple: threads)

    def line(self, created: float, level: str, logger: str, msg: str, request_id: str, chain_id: str,
             fields: dict | None = None) -> str:
        """`fields` (the access line's) are already in `msg`: the line for people stays as it is."""
        second = int(created)
        clock = self._clock
        if clock[0] != second:
            clock = self._clock = (second, time.strftime("%H:%M:%S", time.localtime(second)))
        ids = [i for i in (request_id, chain_id) if i != "-"]
        where = f" [{' '.join(ids)}]" if ids else ""
        return f"{clock[1]}.{int((created - second) * 1000):03d} {_LEVELS.get(level, level)} {logger}{where} {msg}"

    def access_lines(self, logger: str, batch: list[tuple]) -> str:
        """Access lines for people (`hub/observability/requests.py`'s records): the fields are in the text."""
        return "".join(self.line(created, "INFO", logger, access_message(method, path, status, elapsed_s, key,
                                                                          searches, cost), rid, cid) + "\n"
                       for created, rid, cid, _, status, elapsed_s, method, path, key, searches, cost, *_ in batch)

    def format(self, record: logging.LogRecord) -> str:
        line = self.line(record.created, record.levelname, record.name, record.getMessage(),
                         getattr(record, "request_id", "-"), getattr(record, "chain_id", "-"))
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line, with the request and chain ids, and the access line's fields
    (ACCESS_FIELDS) as keys of their own. Bodies and keys are never logged."""

    _stamp: tuple[int, str] = (-1, "")

    def ts(self, created: float) -> str:
        second = int(created)
        stamp = self._stamp
        if stamp[0] != second:
            stamp = self._stamp = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
        return f"{stamp[1]}.{int((created - second) * 1000):03d}Z"

    def access_lines(self, logger: str, batch: list[tuple]) -> str:
        """The access lines of `hub/observability/requests.py`'s records: what `line(..., fields=
        access_fields(...))` writes for each, built as Structs and encoded in one call."""
        entries = [AccessEntry(ts=self.ts(created), level="info", logger=logger, request_id=rid,
                               msg=access_message(method, path, status, elapsed_s, key, searches, cost),
                               chain_id=None if cid == "-" else cid,
                               **access_fields(method, path, status, elapsed_s, key, searches, cost, trace))
                   for created, rid, cid, _, status, elapsed_s, method, path, key, searches, cost, trace, *_ in batch]
        return _encode_lines(entries).decode()

    def line(self, created: float, level: str, logger: str, msg: str, request_id: str, chain_id: str,
             fields: dict | None = None, exc: str | None = None) -> str:
        entry = {"ts": self.ts(created), "level": level.lower(),
                 "logger": logger, "msg": msg, "request_id": request_id}
        if chain_id != "-":
            entry["chain_id"] = chain_id
        if fields:
            for name in ACCESS_FIELDS:
                value = fields.get(name)
                if value is not None:
                    entry[name] = value
        if exc:
            entry["exc"] = exc
        return _encode(entry).decode()

    def format(self, record: logging.LogRecord) -> str:
        attrs = record.__dict__
        fields = {name: attrs[name] for name in ACCESS_FIELDS if name in attrs} if "status" in attrs else None
        return self.line(record.created, record.levelname, record.name, record.getMessage(),
                         getattr(record, "request_id", "-"), getattr(record, "chain_id", "-"), fields,
                         self.formatException(record.exc_info) if record.exc_info else None)


class LineHandler(logging.StreamHandler):
    """The handler `searchhub serve` installs (routes/serve.py): logging's StreamHandler, plus the
    per-request lines of DirectLog, which it collects and writes together at most FLUSH_S later
    (one write for many requests instead of a system call each, like nginx's buffered access log;
    a busy gateway's stderr is often a pipe whose reader each write wakes). Any other record first
    writes what is waiting, so lines keep their order; exit (logging.shutdown) writes the rest."""

    FLUSH_S = 0.1
    MAX_PENDING = 256

    def __init__(self, stream=None) -> None:
        super().__init__(stream)
        self.pending: list[str] = []

    def add(self, line: str) -> None:
        with self.lock:  # another thread's record may be writing the list out
            pending = self.pending
            pending.append(line + self.terminator)
            n = len(pending)
        if n >= self.MAX_PENDING:
            self.write_pending()
        elif n == 1:
            try:
                asyncio.get_running_loop().call_later(self.FLUSH_S, self.write_pending)
            except RuntimeError:  # no event loop to come back: write now
                self.write_pending()

    def add_text(self, text: str) -> None:
        """Many lines at once, each ending with a newline (hub/observability/requests.py's batch):
        written now, after what was waiting, in one write."""
        with self.lock:
            self.pending.append(text)
        self.write_pending()

    def write_pending(self) -> None:
        for source in _before_write:  # lines still being gathered elsewhere (hub/observability/requests.py) go first
            source()
        if not self.pending:
            return
        with self.lock:
            text, self.pending = "".join(self.pending), []
            try:
                self.stream.write(text)
                self.stream.flush()
            except Exception:  # a closed or broken stream: what logging itself would do
                self.handleError(logging.makeLogRecord({"msg": text[:200], "name": "searchhub"}))

    def emit(self, record: logging.LogRecord) -> None:
        self.write_pending()
        super().emit(record)

    def flush(self) -> None:
        self.write_pending()
        super().flush()


_direct: LineHandler | None = None  # the handler `searchhub serve` installed (routes/serve.py)
_before_write: list = []  # callables that hand the handler their pending lines before it writes


def before_write(source) -> None:
    """`source()` is called before the handler writes anything: lines gathered elsewhere keep their order."""
    _before_write.append(source)


def install(handler: LineHandler | None) -> None:
    global _direct
    _direct = handler


class DirectLog:
    """An INFO line of one logger, formatted by the installed handler's formatter and handed to it
    directly: the same text as `logger.info(msg)`, without the record, filter and handler calls,
    and written with the other lines of the same moment (LineHandler). The gateway writes one per
    request; through logging a line cost ~10 µs plus a system call, a tenth of its own work on a
    relayed request (bench/README.md, "History"). Anything else attached on the way (another
    handler, a filter, e.g. pytest's caplog) takes the logging module's path."""

    def __init__(self, name: str) -> None:
        self.logger = logging.getLogger(name)

    def info(self, msg: str, fields: dict | None = None) -> None:
        """`fields`: the access line's (ACCESS_FIELDS), keys of their own in the JSON format; on the
        logging path they are the record's `extra`."""
        lg = self.logger
        if not lg.isEnabledFor(logging.INFO):
            return
        h = _direct
        if h is None or not self._plain(lg, h):
            lg.info("%s", msg, extra=fields)
            return
        h.add(h.formatter.line(time.time(), "INFO", lg.name, msg, request_id_var.get(), chain_id_var.get(), fields))

    def direct(self) -> bool:
        """Whether this logger's INFO lines take the direct path (or none are written at all)."""
        lg = self.logger
        if not lg.isEnabledFor(logging.INFO):
            return True
        h = _direct
        return h is not None and self._plain(lg, h)

    def access_lines(self, batch: list[tuple]) -> None:
        """Access lines made earlier (hub/observability/requests.py's records, with their time and ids), on
        the direct path when there still is one, else one logging record each."""
        lg = self.logger
        h = _direct
        if h is not None and self._plain(lg, h) and hasattr(h.formatter, "access_lines"):
            h.add_text(h.formatter.access_lines(lg.name, batch))
            return
        for _, _, _, _, status, elapsed_s, method, path, key, searches, cost, trace, *_ in batch:
            lg.info("%s", access_message(method, path, status, elapsed_s, key, searches, cost),
                    extra=access_fields(method, path, status, elapsed_s, key, searches, cost, trace))

    @staticmethod
    def _plain(lg: logging.Logger, h: logging.Handler) -> bool:
        node: logging.Logger | None = lg
        while node is not None:
            if node.filters:
                return False
            if node.parent is None:  # the root: exactly our handler
                return len(node.handlers) == 1 and node.handlers[0] is h
            if node.handlers or not node.propagate:
                return False
            node = node.parent
        return False
