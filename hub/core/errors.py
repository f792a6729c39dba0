"""Errors the gateway answers with. Each protocol shapes them its own way (hub/protocols/errors.py)."""

from __future__ import annotations


class GatewayError(Exception):
    """An error with an HTTP status. `message` is safe to show to the client (no secrets)."""

    status = 500
    type = "server_error"

    def __init__(
        self, message: str, *, status: int | None = None, param: str | None = None, code: str | None = None,
        type: str | None = None, headers: dict[str, str] | None = None, detail: dict | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        if type is not None:
            self.type = type
        self.param = param
        self.code = code
        self.headers = headers or {}
        self.detail = detail  # extra JSON-safe fields (e.g. the failover attempts)

    def __init_subclass__(cls, *, status: int | None = None, type: str | None = None, **kw) -> None:
        """`class X(GatewayError, status=400, type="invalid_request_error")` sets X's defaults."""
        super().__init_subclass__(**kw)
        if status is not None:
            cls.status = status
        if type is not None:
            cls.type = type


class BadRequest(GatewayError, status=400, type="invalid_request_error"):
    pass


class NotFound(GatewayError, status=404, type="not_found_error"):
    pass


class PayloadTooLarge(GatewayError, status=413, type="invalid_request_error"):
    pass


class Unavailable(GatewayError, status=503, type="server_error"):
    pass


class ClientGone(GatewayError):
    """The client hung up while its request was being answered (nginx's 499)."""

    def __init__(self) -> None:
        super().__init__("the client closed the connection", status=499, type="client_closed", code="client_closed")
