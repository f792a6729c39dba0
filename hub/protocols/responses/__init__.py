"""OpenAI Responses API <-> the internal chat form: the public surface of the translators.

- `to_chat(req)`: a Responses request -> (chat request, ResponsesContext)     (responses_request.py,
  with responses_tools.py for tools and responses_items.py for input items)
- `from_chat(outcome, ctx)`: a finished pipeline run -> a Response object     (responses_output.py)
- `ResponsesStream(ctx)`: pipeline stream items -> Responses SSE events       (responses_stream.py)
"""

from __future__ import annotations

from .items import reference_id
from .output import from_chat, new_id, response_object, usage_from_chat
from .request import ResponsesContext, ToolRef, custom_input, items_to_messages, to_chat
from .stream import KEEPALIVE, ResponsesStream, sse

__all__ = [
    "KEEPALIVE",
    "ResponsesContext",
    "ResponsesStream",
    "ToolRef",
    "custom_input",
    "from_chat",
    "items_to_messages",
    "new_id",
    "reference_id",
    "response_object",
    "sse",
    "to_chat",
    "usage_from_chat",
]
