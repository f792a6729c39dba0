"""Pieces of the answer a turn assembles over its rounds, for both drivers (hub/turn/pipeline.py,
hub/turn/stream_driver.py): usage summed and estimated, the rounds' texts joined, tool calls recovered
from text, the finish reason the client sees."""

from __future__ import annotations

import logging

from ..backends import usage as usages
from ..backends.text_calls import TextCall, extract
from ..config.settings import Target
from ..core.ids import new_id
from ..observability import metrics

log = logging.getLogger("searchhub.pipeline")


def add_usage(total: dict, usage: dict | None) -> None:
    """Sum a round's usage into the turn's."""
    if not isinstance(usage, dict):
        return
    for k in ("prompt_tokens", "completion_tokens", "total_tokens"):
        v = usage.get(k)
        if isinstance(v, int):
            total[k] = total.get(k, 0) + v
    for group, key in (("prompt_tokens_details", "cached_tokens"), ("completion_tokens_details", "reasoning_tokens")):
        v = (usage.get(group) or {}).get(key)
        if isinstance(v, int):
            d = total.setdefault(group, {})
            d[key] = d.get(key, 0) + v


def joined(texts: list[str]) -> str:
    """The rounds' texts as one answer, a blank line between rounds that would otherwise run together."""
    out = ""
    for t in texts:
        if out and t and not out[-1].isspace() and not t[0].isspace():
            out += "\n\n"
        out += t
    return out


def fill_usage(resp: dict, body: dict, target: Target) -> None:
    """A completion without usage gets an estimate (hub/backends/usage.py), where the family allows it."""
    if not usages.missing(resp.get("usage")) or not target.provider.quirks.estimate_usage:
        return
    msg = ((resp.get("choices") or [{}])[0] or {}).get("message") or {}
    text = str(msg.get("content") or "") + "".join(
        str((c.get("function") or {}).get("arguments") or "") for c in msg.get("tool_calls") or () if isinstance(c, dict))
    resp["usage"] = usages.estimate(target.provider.id, usages.prompt_tokens(body.get("messages"), body.get("tools")),
                                    usages.text_tokens(text))


def text_call(call: TextCall, index: int | None = None) -> dict:
    """A call recovered from text, as a tool call."""
    out: dict = {"id": new_id("call"), "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
    if index is not None:
        out["index"] = index
    return out


def recover_text_calls(msg: dict, names: frozenset[str], target: Target) -> None:
    """Tool calls the backend wrote in the message text become tool_calls (hub/backends/text_calls.py)."""
    content = msg.get("content")
    if not names or msg.get("tool_calls") or not isinstance(content, str) or not content:
        return
    text, calls = extract(content, names)
    if calls:
        metrics.TEXT_TOOL_CALLS.labels(target.provider.id).inc(len(calls))
        log.info("recovered %d tool call(s) written as text by %s", len(calls), target.key)
        msg["content"] = text or None
        msg["tool_calls"] = [text_call(c) for c in calls]


def final_finish(finish: str | None, client_calls: bool) -> str:
    """The finish reason the client sees: its own calls, else the model's, never our tool calls."""
    if client_calls:
        return "tool_calls"
    return "stop" if finish in (None, "tool_calls") else finish
