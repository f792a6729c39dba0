"""Request and chain ids carried into every log line (set by the HTTP layer and the pipeline)."""

from __future__ import annotations

import contextvars
import logging

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
chain_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("chain_id", default="-")


class RequestContextFilter(logging.Filter):
    """Puts the request id and chain id on every log record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        record.chain_id = chain_id_var.get()
        return True
