"""`searchhub classify --request FILE`: what the gateway would decide for a whole request body.

Reads a request in any of the three protocols (or a recorded fixture `{"request": {"path", "body"}}`),
translates it to the internal chat form, and reports the side-request decision and the intent decision
for the latest user text, with their reasons.
"""

from __future__ import annotations

import json
from typing import Any

from ..config.side_requests import SideRule
from .client_search import client_web_search
from .intent import classify, describe, latest_user_text
from .side_requests import classify_side

PROTOCOLS = ("auto", "chat", "messages", "responses")


def unwrap(data: Any) -> tuple[dict, str | None]:
    """(request body, endpoint path if known) from a body or a recorded fixture."""
    if isinstance(data, dict) and isinstance(data.get("request"), dict) and "body" in data["request"]:
        return data["request"]["body"], data["request"].get("path")
    if not isinstance(data, dict):
        raise ValueError("the request must be a JSON object")
    return data, None


def protocol_of(body: dict, path: str | None, protocol: str) -> str:
    if protocol != "auto":
        return protocol
    if path:
        if "chat/completions" in path:
            return "chat"
        if "/responses" in path:
            return "responses"
        if "/messages" in path:
            return "messages"
    if "input" in body or "instructions" in body:
        return "responses"
    if "system" in body or "anthropic_version" in body:
        return "messages"
    return "chat"


def to_internal(body: dict, protocol: str) -> dict:
    if protocol == "messages":
        from ..protocols.messages import to_chat

        return to_chat(body)[0]
    if protocol == "responses":
        from ..protocols.responses import to_chat

        return to_chat(body)[0]
    return body


def report(raw: str, *, protocol: str = "auto", rules: tuple[SideRule, ...] = (), tool_name: str = "web_search") -> str:
    """The multi-line report; raises ValueError (or BadRequest) for an unreadable request."""
    body, path = unwrap(json.loads(raw))
    kind = protocol_of(body, path, protocol)
    chat = to_internal(body, kind)
    side = classify_side(chat, rules=rules)
    messages = chat.get("messages") if isinstance(chat.get("messages"), list) else []
    text = latest_user_text(messages)
    own = client_web_search(chat.get("tools"), messages, tool_name)
    lines = [
        f"protocol:         {kind}",
        f"side request:     {'yes' if side.side else 'no'}" + (f" ({side.rule})" if side.rule else ""),
        f"side reason:      {side.reason}",
        f"client search:    {own or '-'}",
    ]
    if side.side:
        lines.append("injection:        no (a side request is not a search turn)")
    elif own:
        lines.append(f"injection:        no (the client searches the web itself: {own})")
    lines.append("intent of the latest user text:")
    intent = describe(classify(text)) if text else "decision:         no web search (no user text)"
    lines += ["  " + line for line in intent.splitlines()]
    return "\n".join(lines)
