"""What every protocol does with a failure before shaping it: which failures are expected (answered
on purpose, logged without a traceback), the client-safe GatewayError anything raised becomes, a
stream that broke after its 200, and the graceful shutdown's 503. Each protocol writes the result in
its own shape (its folder's `errors` or `endpoints` module)."""

from __future__ import annotations

import logging

from hub.core.errors import GatewayError
from hub.observability.trace import current_trace
from hub.routing.dispatch import AllTargetsFailed
from hub.routing.router import UnknownTarget
from hub.upstream.http import UpstreamError

SHUTTING_DOWN = "the gateway is shutting down; retry the request"


def expected_error(e: Exception) -> bool:
    """A failure the gateway answers on purpose (logged as a warning, not with a traceback)."""
    return isinstance(e, GatewayError | AllTargetsFailed | UpstreamError | UnknownTarget)


def stream_broke(exc: BaseException, logger: logging.Logger, what: str = "stream") -> GatewayError:
    """A stream that broke after its 200 went out: logged (a traceback only for the unexpected), and
    the request's trace marked failed with the message its error event carries, so traces and /ui
    list it as the failure it is (the access log and metrics keep the 200 the client got)."""
    if isinstance(exc, Exception) and expected_error(exc):
        logger.warning("%s broke: %s", what, exc)
    else:
        logger.error("%s failed", what, exc_info=exc)
    err = as_gateway_error(exc if isinstance(exc, Exception) else RuntimeError())
    traced_failure(err.message)
    return err


def traced_failure(message: str) -> None:
    """The request's trace is a failure with this message (its first one wins): a stream whose
    error event went out after the 200 (stream_broke, and the pass-through streams' `broken`)."""
    trace = current_trace.get()
    if trace is not None and trace.error is None:
        trace.error = message


def as_gateway_error(exc: Exception) -> GatewayError:
    """Map anything the pipeline raises to a client-safe GatewayError."""
    if isinstance(exc, GatewayError):
        return exc
    if isinstance(exc, UnknownTarget):
        return GatewayError(f"unknown pinned model '{exc}'", status=404, type="invalid_request_error",
                            code="model_not_found", param="model")
    if isinstance(exc, AllTargetsFailed):
        status = exc.status
        return GatewayError(
            exc.message(),  # each target with the URL it tried, and what to do when nothing listened there
            status=status,
            type="server_error",
            code="upstream_unavailable",
            headers={"retry-after": "5"} if status == 503 else {},
            detail={"attempts": [a.as_dict() for a in exc.attempts]},
        )
    if isinstance(exc, UpstreamError):
        if exc.kind is not None:  # about the request, whatever status the backend chose
            what = "the prompt does not fit the model's context" if exc.kind == "context_overflow" \
                else "the backend rejected the request"
            return GatewayError(f"{what} (HTTP {exc.status}): {exc.message}" if exc.message else what,
                                status=400, type="invalid_request_error",
                                code="context_length_exceeded" if exc.kind == "context_overflow" else "upstream_rejected")
        return GatewayError(exc.reason, status=exc.status or 502, type="server_error", code="upstream_error")
    return GatewayError("internal error", status=500, type="server_error")


def shutting_down(message: str = SHUTTING_DOWN) -> GatewayError:
    """What the graceful shutdown (routes/app.py, `Drain`) answers a request it turns away or cuts
    short with: a 503 the SDKs retry (Anthropic's shape makes it 529 overloaded_error)."""
    return GatewayError(message, status=503, type="server_error", code="shutting_down",
                        headers={"retry-after": "1"})


def client_error(exc: Exception) -> UpstreamError | None:
    """A 4xx the backend gave for the client's request, with a body: the client's, returned as it is."""
    if isinstance(exc, UpstreamError) and exc.status and 400 <= exc.status < 500 and not exc.retryable and exc.body:
        return exc
    return None
