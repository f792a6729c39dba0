"""OpenAI's error shape, `{"error": {message, type, param, code}}`, for chat completions and every
other OpenAI-style endpoint (Responses, /v1/search, Codex's search, the gateway's own 404s)."""

from __future__ import annotations

import msgspec

from ..errors import as_gateway_error, client_error
from ..serving import Answer, Call

_encode = msgspec.json.encode


def openai_error(exc: Exception, call: Call | None = None) -> Answer:
    """Any failure as OpenAI's error answer; a backend's 4xx for the client's request as it is."""
    upstream = client_error(exc)
    if upstream is not None:
        return Answer(upstream.body, upstream.status)
    err = as_gateway_error(exc)
    payload: dict = {"error": {"message": err.message, "type": err.type if err.type != "not_found_error"
                               else "invalid_request_error", "param": err.param, "code": err.code}}
    if err.detail:
        payload["error"].update(err.detail)
    headers = dict(err.headers)
    if err.status < 500 and err.status not in (408, 409, 429):
        headers["x-should-retry"] = "false"
    return Answer(payload, err.status, headers)


def openai_stream_error(exc: Exception) -> bytes:
    """The error chunk a chat stream that breaks after its 200 ends with."""
    err = as_gateway_error(exc)
    kind = err.type if err.status < 500 else "server_error"
    return b"data: " + _encode({"error": {"message": err.message, "type": kind, "param": None,
                                          "code": err.code}}) + b"\n\n"
