"""What each self-hosted backend family really accepts and sends, and the one place that adapts to it.

A family is a provider type (engines.json `providers.*.type`) whose module in hub/backends/families/
declares its quirks; each provider can override any quirk with `providers.*.quirks` (docs/backends.md
lists them). `outbound()` shapes every chat
request a backend receives (the client's, the Responses and Messages translations', and the
search loop's own rounds), so no translator needs to know which family it talks to.
"""

from __future__ import annotations

import json

from ..config.quirks import Quirks

FORCE_INSTRUCTION = (
    "Before answering, call the `{name}` tool with a search query taken from the user's request. "
    "Do not answer from memory."
)
USER_RESULT_PREFIX = "Result of the tool call {id} ({name}):\n"


# --- outbound -----------------------------------------------------------------------------------


def _name(tool_choice: object) -> str | None:
    if isinstance(tool_choice, dict):
        fn = tool_choice.get("function")
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            return fn["name"]
        if isinstance(tool_choice.get("name"), str):
            return tool_choice["name"]
    return None


def streams(body: dict, quirks: Quirks) -> bool:
    """Can this (already adapted) request be streamed by the backend, or must it be asked whole?"""
    if quirks.stream_tools or not body.get("tools"):
        return True
    choice = body.get("tool_choice")
    return choice == "none" or _name(choice) is not None


def as_chunks(resp: dict) -> list[dict]:
    """A whole chat completion as the stream chunks a backend would have sent for it."""
    base = {"id": resp.get("id") or "chatcmpl-replayed", "object": "chat.completion.chunk",
            "created": resp.get("created") or 0, "model": resp.get("model") or ""}
    out: list[dict] = []
    for choice in resp.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        index = choice.get("index", 0)
        msg = choice.get("message") or {}
        delta: dict = {"role": "assistant"}
        for key in ("content", "reasoning_content", "function_call"):
            if msg.get(key) is not None:
                delta[key] = msg[key]
        if msg.get("tool_calls"):
            delta["tool_calls"] = [{**c, "index": i} for i, c in enumerate(msg["tool_calls"]) if isinstance(c, dict)]
        out.append({**base, "choices": [{"index": index, "delta": delta, "finish_reason": None}]})
        out.append({**base, "choices": [{"index": index, "delta": {}, "finish_reason": choice.get("finish_reason")}]})
    if isinstance(resp.get("usage"), dict):
        out.append({**base, "choices": [], "usage": resp["usage"]})
    return out


def force_choice(quirks: Quirks, name: str) -> object | None:
    """The tool_choice that forces the server tool `name` on this family (None: instruction only)."""
    if quirks.forcing == "named":
        return {"type": "function", "function": {"name": name}}
    if quirks.forcing == "required":
        return "required"
    return None


def outbound(body: dict, quirks: Quirks, *, server_tools: frozenset[str] = frozenset()) -> dict:
    """The chat request adapted to the family (a new dict; `body` is not changed).

    `server_tools` are the tools searchhub offers and runs itself in this request: a `tool_choice`
    naming one of them is expressed in the family's forcing form.
    """
    out = dict(body)
    for key in quirks.drop_fields:
        out.pop(key, None)
    messages = out.get("messages")
    if isinstance(messages, list):
        out["messages"] = _messages(messages, quirks)
    tools = out.get("tools")
    if tools:
        choice = out.get("tool_choice")
        forced_name = _name(choice)
        if forced_name is not None and forced_name in server_tools:
            forced = force_choice(quirks, forced_name)
            if forced is None:
                out.pop("tool_choice", None)
                out["messages"] = [*out["messages"], {"role": "system",
                                                      "content": FORCE_INSTRUCTION.format(name=forced_name)}]
                if quirks.tool_choice_auto:
                    out["tool_choice"] = "auto"
            else:
                out["tool_choice"] = forced
        elif choice is None and quirks.tool_choice_auto:
            out["tool_choice"] = "auto"
    if not quirks.parallel_tool_calls:
        out.pop("parallel_tool_calls", None)
    return out


def _messages(messages: list, quirks: Quirks) -> list:
    if quirks.null_content and quirks.tool_results == "tool":
        return messages
    names: dict[str, str] = {}
    out: list = []
    for m in messages:
        if not isinstance(m, dict):
            out.append(m)
            continue
        role = m.get("role")
        if role == "assistant":
            for call in m.get("tool_calls") or ():
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    names[call["id"]] = str((call.get("function") or {}).get("name") or "")
            if not quirks.null_content and m.get("content") is None:
                m = {**m, "content": ""}
        elif role == "tool" and quirks.tool_results == "user":
            call_id = m.get("tool_call_id") or ""
            text = USER_RESULT_PREFIX.format(id=call_id, name=names.get(call_id, "tool")) + _text(m.get("content"))
            if out and isinstance(out[-1], dict) and out[-1].get("role") == "user" and out[-1].get("_results"):
                out[-1] = {**out[-1], "content": out[-1]["content"] + "\n\n" + text}
            else:
                out.append({"role": "user", "content": text, "_results": True})
            continue
        out.append(m)
    if quirks.tool_results == "user":
        out = [{k: v for k, v in m.items() if k != "_results"} if isinstance(m, dict) and "_results" in m else m
               for m in out]
    return out


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False)
