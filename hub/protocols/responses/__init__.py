"""OpenAI Responses API <-> the internal chat form: the public surface of the translators.

- `decode_request(body)`: the request checked and decoded as wire types              (wire.py)
- `to_chat(req)` / `translate(request)`: a Responses request -> (chat request, ResponsesContext)
                                                  (request.py, with tools.py for tools and items.py for input items)
- `from_chat(outcome, ctx)`: a finished pipeline run -> a Response object                (output.py)
- `ResponsesStream(ctx)`: pipeline stream items -> Responses SSE events                  (stream.py)
"""

from __future__ import annotations

from .output import from_chat, new_id, response_object, usage_from_chat
from .request import ResponsesContext, ToolRef, custom_input, items_to_messages, to_chat, translate
from .stream import KEEPALIVE, ResponsesStream, sse
from .wire import Request, decode_request

__all__ = [
    "KEEPALIVE",
    "Request",
    "ResponsesContext",
    "ResponsesStream",
    "ToolRef",
    "custom_input",
    "decode_request",
    "from_chat",
    "items_to_messages",
    "new_id",
    "response_object",
    "sse",
    "to_chat",
    "translate",
    "usage_from_chat",
]
