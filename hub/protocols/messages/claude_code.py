"""Claude Code's WebSearch side call, recognised by its shape (docs/claude-code.md).

Claude Code runs its WebSearch tool by sending a separate request: one user message
"Perform a web search for the query: <q>" and a single web_search_* server tool. Detection is by
shape, never by the system prompt, which changed across versions. hub/tools/search_execution.py
answers it.
"""

from __future__ import annotations

from ...core.errors import BadRequest
from .wire import MessagesRequest, Text, WebSearchTool, decode_request

PREFIX = "Perform a web search for the query: "


def search_execution_query(req: MessagesRequest | object) -> str | None:
    """The query, when req (decoded, or a body to decode) is Claude Code's search-execution request; else None.

    Shape: exactly one tool, a web_search_* server tool; exactly one message, from the user, whose
    text starts with PREFIX; tool_choice absent, auto, any, or forcing web_search.
    """
    if not isinstance(req, MessagesRequest):
        try:
            req = decode_request(req)
        except BadRequest:
            return None
    if req.tools is None or len(req.tools) != 1 or type(req.tools[0]) is not WebSearchTool:
        return None
    choice = req.tool_choice
    if choice is not None and choice.type not in ("auto", "any") and not (
            choice.type == "tool" and choice.name == "web_search"):
        return None
    if len(req.messages) != 1 or req.messages[0].role != "user":
        return None
    content = req.messages[0].content
    text = content if isinstance(content, str) else "".join(b.text for b in content if type(b) is Text)
    text = text.lstrip()
    if not text.startswith(PREFIX):
        return None
    return text[len(PREFIX):].strip()
