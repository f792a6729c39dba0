"""The operator's window: `/ui` (one self-contained page) and the read-only `/admin/*` JSON it polls.

Every path here needs one of `server.adminKeys` (Bearer, x-api-key, or the password of a browser's
Basic auth prompt); without any configured they answer 403. The gateway's client keys
(`server.apiKeys`) do not open them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from hub.access.keys import match_key, presented_key
from hub.observability.requests import LEDGER
from hub.routing.status import status_view

_PAGE = (Path(__file__).with_name("ui.html")).read_bytes()
_encode = msgspec.json.Encoder().encode
MAX_LIMIT = 500


def is_admin_path(path: str) -> bool:
    return path == "/ui" or path.startswith("/admin/")


def _denied(request: Request) -> Response | None:
    """None when the request carries an admin key; else the 401/403 to send."""
    gateway = request.app.gateway
    keys = gateway.runtime.config.server.admin_keys
    if not keys:
        return JSONResponse({"error": {"message": "the admin interface is off: set server.adminKeys in engines.json",
                                       "type": "permission_error", "code": "admin_disabled"}}, status_code=403)
    if match_key(presented_key(request.headers, basic=True), keys) is None:
        return JSONResponse(
            {"error": {"message": "an admin key is required (server.adminKeys): send 'Authorization: Bearer <key>'",
                       "type": "authentication_error", "code": "invalid_admin_key"}},
            status_code=401, headers={"www-authenticate": 'Basic realm="searchhub admin", charset="UTF-8"'})
    return None


def _json(data) -> Response:
    return Response(_encode(data), media_type="application/json", headers={"cache-control": "no-store"})


async def page(request: Request) -> Response:
    if (denied := _denied(request)) is not None:
        return denied
    return Response(_PAGE, media_type="text/html; charset=utf-8", headers={
        "cache-control": "no-store",
        # Everything the page needs is inline; it talks only to this origin.
        "content-security-policy": "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                                   "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'",
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
    })


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "").lower() in ("1", "true", "yes", "on")


def _bad(message: str) -> Response:
    return JSONResponse({"error": {"message": message, "type": "invalid_request_error", "code": None}},
                        status_code=400)


async def traces(request: Request) -> Response:
    if (denied := _denied(request)) is not None:
        return denied
    q = request.query_params
    try:
        limit = int(q.get("limit", "50"))
        since = float(q.get("since", "0"))
    except ValueError:
        return _bad("limit must be an integer and since a number (epoch seconds)")
    if not 1 <= limit <= MAX_LIMIT:
        return _bad(f"limit must be between 1 and {MAX_LIMIT}")
    LEDGER.flush()  # the traces of the last moments (hub/observability/requests.py)
    recorder = request.app.gateway.runtime.shared.traces
    rows = await recorder.listing(since=since, limit=limit, chain=q.get("chain") or None, key=q.get("key") or None,
                                  searched=_flag(request, "searched"), errors=_flag(request, "errors"))
    return _json({"object": "list", "enabled": recorder.enabled, "now": time.time(), "data": rows})


async def trace(request: Request) -> Response:
    if (denied := _denied(request)) is not None:
        return denied
    trace_id = request.path_params["trace_id"]
    LEDGER.flush()
    found = await request.app.gateway.runtime.shared.traces.get(trace_id[:128])
    if found is None:
        return JSONResponse({"error": {"message": f"no trace '{trace_id[:128]}' (it may have left the ring)",
                                       "type": "not_found_error", "code": "trace_not_found"}}, status_code=404)
    return _json(found)


async def status(request: Request) -> Response:
    if (denied := _denied(request)) is not None:
        return denied
    gateway = request.app.gateway
    rt = gateway.runtime
    try:
        window = float(request.query_params.get("window", "300"))
    except ValueError:
        return _bad("window must be a number of seconds")
    shared = rt.shared
    LEDGER.flush()  # the activity of the last moments
    view = status_view(rt.config, shared.cooldowns, shared.gate, shared.activity, window_s=max(10.0, min(window, 900.0)))
    view.update({
        "pid": os.getpid(),
        "now": time.time(),
        "config": {"path": rt.config.path, "hash": rt.config.raw_hash, "loadedAt": gateway.loaded_at,
                   "lastReloadAttempt": gateway.last_reload_attempt, "lastReloadError": gateway.last_reload_error},
        "traces": {"enabled": shared.traces.enabled, "ringSize": shared.traces.config.ring_size,
                   "sampleRate": shared.traces.config.sample_rate, "dropped": shared.traces.dropped},
        "state": rt.store.health(),
    })
    return _json(view)


routes = [
    Route("/ui", page, methods=["GET"]),
    Route("/admin/status", status, methods=["GET"]),
    Route("/admin/traces", traces, methods=["GET"]),
    Route("/admin/traces/{trace_id}", trace, methods=["GET"]),
]
