"""Anthropic Messages <-> the internal chat form: the protocol's public surface.

`decode_request` checks a request against its wire types, `to_chat` translates it, `from_chat` an
Outcome, and `MessagesStream` encodes the pipeline's stream items as Anthropic SSE. The pieces live in
wire.py (the request's Structs), request.py and content.py (to chat), response.py, stream.py and blocks.py.
"""

from .blocks import usage
from .request import MessagesContext, estimate_input_tokens, to_chat
from .response import from_chat
from .stream import MessagesStream, error_event, sse
from .wire import MessagesRequest, decode_request

__all__ = [
    "MessagesContext", "MessagesRequest", "MessagesStream", "decode_request", "error_event", "estimate_input_tokens",
    "from_chat", "sse", "to_chat", "usage",
]
