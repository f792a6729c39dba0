"""Codex CLI's standalone web search, `POST /v1/alpha/search` (and `/alpha/search`, for a base URL
without /v1).

The answer is always `200 {"output": "<text>"}`, also for a body that cannot be read, a failed
engine or a spent budget: Codex hands the model `output` verbatim and shows the user's web_search
item as completed whatever the status, so a failure is only ever seen if the text says it. The one
exception is authentication: a missing or wrong key is the gateway's usual 401 (routes/app.py),
which Codex hands to the model as "http 401 ..." text, so the user learns the key is wrong instead
of getting silently empty searches. (Codex's WebSocket attempt on /v1/responses is answered by
routes/websocket.py.)
"""

from __future__ import annotations

import logging

from hub.core.errors import ClientGone, GatewayError
from hub.observability.logctx import request_id_var

from ..chat.errors import openai_error
from ..errors import expected_error
from ..serving import Answer, Call, Endpoint, ProtocolKind, Runtime
from . import Parts, answer

log = logging.getLogger("searchhub.codex")


async def search(rt: Runtime, call: Call) -> Answer:
    key, bill = call.caller()
    parts = Parts(rt.metered(key, bill), rt.direct_fetch, rt.store, rt.config.responses_ttl_s, rt.reader,
                  rt.config.web_search.limits.read_pages)
    return Answer({"output": await answer(call.json, parts)})


def output_error(exc: Exception, call: Call | None) -> Answer:
    """A failure said in the output, as every failure is; a client that left gets its 499."""
    if isinstance(exc, ClientGone):
        return openai_error(exc)
    if call is None and isinstance(exc, GatewayError):  # not JSON, not an object, too large
        return Answer({"output": f"searchhub could not read this web.run call: {exc.message}."})
    if expected_error(exc):  # routes/protocols.py logs only the unexpected with their traceback
        log.warning("codex web search call failed: %s", exc)
    return Answer({"output": f"searchhub failed on this web.run call (an internal error, logged with request id "
                             f"{request_id_var.get()}); the search may work if tried again."})


PROTOCOL = ProtocolKind(
    name="codex",
    endpoints=(Endpoint("POST", ("/v1/alpha/search", "/alpha/search"), search, "codex web search call"),),
    error=output_error,
)
