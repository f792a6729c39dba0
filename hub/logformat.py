"""Log lines for people: `HH:MM:SS.mmm LEVEL logger [request chain] message`, used when stderr is a terminal."""

from __future__ import annotations

import logging
import time
from typing import TextIO

_LEVELS = {"DEBUG": "debug", "INFO": "info ", "WARNING": "WARN ", "ERROR": "ERROR", "CRITICAL": "CRIT "}


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

    _clock: tuple[int, str] = (-1, "")  # the seconds, formatted once per second

    def format(self, record: logging.LogRecord) -> str:
        second = int(record.created)
        clock = self._clock
        if clock[0] != second:
            clock = self._clock = (second, time.strftime("%H:%M:%S", time.localtime(second)))
        stamp = f"{clock[1]}.{int(record.msecs):03d}"
        ids = [i for i in (getattr(record, "request_id", "-"), getattr(record, "chain_id", "-")) if i != "-"]
        where = f" [{' '.join(ids)}]" if ids else ""
        line = f"{stamp} {_LEVELS.get(record.levelname, record.levelname)} {record.name}{where} {record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line
