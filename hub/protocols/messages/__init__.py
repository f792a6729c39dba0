"""Anthropic Messages <-> the internal chat form: the protocol's public surface.

`to_chat` translates a request, `from_chat` an Outcome, and `MessagesStream` encodes the
pipeline's stream items as Anthropic SSE. The pieces live in messages_request / _response /
_stream / _blocks.
"""

from .blocks import usage
from .request import MessagesContext, estimate_input_tokens, to_chat
from .response import from_chat
from .stream import MessagesStream, error_event, sse

__all__ = [
    "MessagesContext", "MessagesStream", "error_event", "estimate_input_tokens", "from_chat", "sse", "to_chat", "usage",
]
