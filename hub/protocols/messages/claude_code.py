"""Claude Code's WebSearch side call, recognised by its shape (docs/claude-code.md).

Claude Code runs its WebSearch tool by sending a separate request: one user message
"Perform a web search for the query: <q>" and a single web_search_* server tool. Detection is by
shape, never by the system prompt, which changed across versions. hub/tools/search_execution.py
answers it.
"""

from __future__ import annotations

PREFIX = "Perform a web search for the query: "
_CHOICES = ({"type": "auto"}, {"type": "any"}, {"type": "tool", "name": "web_search"})


def search_execution_query(req: object) -> str | None:
    """The query, when req is Claude Code's search-execution request; else None.

    Shape: exactly one tool, a web_search_* server tool; exactly one message, from the user, whose
    text starts with PREFIX; tool_choice absent, auto, any, or forcing web_search.
    """
    if not isinstance(req, dict):
        return None
    tools = req.get("tools")
    if not isinstance(tools, list) or len(tools) != 1 or not isinstance(tools[0], dict):
        return None
    kind = tools[0].get("type")
    if not isinstance(kind, str) or not kind.startswith("web_search_"):
        return None
    choice = req.get("tool_choice")
    if choice is not None and not (isinstance(choice, dict) and any(
            all(choice.get(k) == v for k, v in c.items()) for c in _CHOICES)):
        return None
    messages = req.get("messages")
    if not isinstance(messages, list) or len(messages) != 1 or not isinstance(messages[0], dict):
        return None
    message = messages[0]
    if message.get("role") != "user":
        return None
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "".join(b["text"] for b in content
                       if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    else:
        return None
    text = text.lstrip()
    if not text.startswith(PREFIX):
        return None
    return text[len(PREFIX):].strip()
