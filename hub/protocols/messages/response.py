"""The pipeline's non-streaming Outcome -> an Anthropic Message (docs/claude-code.md)."""

from __future__ import annotations

from ...core.text import text_of
from ...tools.arguments import ArgumentError, parse_arguments
from ...tools.events import Outcome
from .blocks import (
    THINKING_SIGNATURE,
    HitIndex,
    message_id,
    server_tool_use_block,
    stop_reason,
    text_blocks,
    tool_result_block,
    tool_use_id,
    usage,
    usage_counts,
)
from .request import MessagesContext


def tool_input(arguments: object, *, name: str = "", call_id: str = "") -> dict:
    """Chat tool-call arguments as the JSON object Anthropic requires; unrepairable -> {}."""
    try:
        return parse_arguments(arguments, tool_name=name, call_id=call_id)
    except ArgumentError:
        return {}


def from_chat(outcome: Outcome, ctx: MessagesContext) -> dict:
    """An Anthropic Message: thinking, then (hosted tools) each server tool call as a server_tool_use +
    result block pair, then the text (cited spans as their own blocks), then tool_use."""
    response = outcome.response if isinstance(outcome.response, dict) else {}
    choices = response.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}

    content: list[dict] = []
    reasoning = message.get("reasoning_content")
    if ctx.show_thinking and isinstance(reasoning, str) and reasoning:
        content.append({"type": "thinking", "thinking": reasoning, "signature": THINKING_SIGNATURE})
    if ctx.server_tools:
        for call in outcome.calls:
            content.append(server_tool_use_block(call))
            content.append(tool_result_block(call))
        content.extend(text_blocks(text_of(message.get("content"), ""), message.get("annotations"),
                                   HitIndex(outcome.calls)))
    else:
        text = text_of(message.get("content"), "")
        if text:
            content.append({"type": "text", "text": text})
    calls = message.get("tool_calls") if isinstance(message.get("tool_calls"), list) else []
    for call in calls:
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            continue
        name = call["function"].get("name")
        if not isinstance(name, str) or not name:
            continue
        content.append({
            "type": "tool_use",
            "id": tool_use_id(call.get("id")),
            "name": name,
            "input": tool_input(call["function"].get("arguments"), name=name, call_id=str(call.get("id", ""))),
        })
    has_tool_use = any(block["type"] == "tool_use" for block in content)
    return {
        "id": message_id(),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": stop_reason(choice.get("finish_reason"), has_tool_use=has_tool_use),
        "stop_sequence": None,
        "usage": usage(response.get("usage"), server_tools=usage_counts(outcome.calls) if ctx.server_tools else None),
    }
