"""The internal chat result -> a Responses API Response object (docs/responses.md).

The item builders here are shared with the stream encoder, so a streamed response and a JSON one
have the same shape.
"""

from __future__ import annotations

import time
from typing import Any

from ...core.ids import new_id
from ...tools.base import ToolCall
from ...tools.events import Outcome
from .request import ResponsesContext
from .tools import custom_input

_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def response_object(
    ctx: ResponsesContext, response_id: str, created_at: int, *, status: str, output: list[dict],
    usage: dict | None = None, error: dict | None = None, incomplete_reason: str | None = None,
) -> dict:
    """A Response with the request's echoes. `output_text` is SDK-only and never sent."""
    echo = ctx.echo
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "background": echo["background"],
        "completed_at": int(time.time()) if status == "completed" else None,
        "error": error,
        "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
        "instructions": echo["instructions"],
        "max_output_tokens": echo["max_output_tokens"],
        "max_tool_calls": echo["max_tool_calls"],
        "model": ctx.model,
        "output": output,
        "parallel_tool_calls": echo["parallel_tool_calls"],
        "previous_response_id": echo["previous_response_id"],
        "prompt_cache_key": echo["prompt_cache_key"],
        "reasoning": echo["reasoning"],
        "safety_identifier": echo["safety_identifier"],
        "service_tier": echo["service_tier"],
        "store": echo["store"],
        "temperature": echo["temperature"],
        "text": echo["text"],
        "tool_choice": echo["tool_choice"],
        "tools": echo["tools"],
        "top_p": echo["top_p"],
        "truncation": echo["truncation"],
        "usage": usage,
        "user": echo["user"],
        "metadata": echo["metadata"],
    }


def status_for(finish_reason: str | None) -> tuple[str, str | None]:
    """(Response status, incomplete_details.reason) for a chat finish_reason."""
    reason = _INCOMPLETE.get(finish_reason or "")
    return ("incomplete", reason) if reason else ("completed", None)


def usage_from_chat(usage: Any) -> dict:
    u = usage if isinstance(usage, dict) else {}
    prompt = _int(u.get("prompt_tokens"))
    completion = _int(u.get("completion_tokens"))
    prompt_details = u.get("prompt_tokens_details") if isinstance(u.get("prompt_tokens_details"), dict) else {}
    completion_details = (u.get("completion_tokens_details")
                          if isinstance(u.get("completion_tokens_details"), dict) else {})
    total = _int(u.get("total_tokens")) or prompt + completion
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": _int(prompt_details.get("cached_tokens")), "cache_write_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": _int(completion_details.get("reasoning_tokens"))},
        "total_tokens": total,
    }


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def annotation(chat_annotation: Any, shift: int = 0, limit: int | None = None) -> dict | None:
    """A chat url_citation (nested) as a Responses one (flat), offsets moved by -shift and clipped to
    [0, limit]; None when it is not a url citation or falls outside."""
    if not isinstance(chat_annotation, dict) or chat_annotation.get("type") != "url_citation":
        return None
    inner = chat_annotation.get("url_citation")
    if not isinstance(inner, dict):
        inner = chat_annotation  # already flat
    url = inner.get("url")
    if not isinstance(url, str) or not url:
        return None
    start = inner.get("start_index") if isinstance(inner.get("start_index"), int) else 0
    end = inner.get("end_index") if isinstance(inner.get("end_index"), int) else start
    start, end = start - shift, end - shift
    if limit is not None:
        if end <= 0 or start >= limit:
            return None  # cites text of another message item
        start, end = max(0, start), min(end, limit)
    title = inner.get("title")
    return {"type": "url_citation", "start_index": start, "end_index": end, "url": url,
            "title": title if isinstance(title, str) else url}


def web_search_item(item_id: str, call: ToolCall, *, done: bool = True, results: bool = False) -> dict:
    """A `web_search_call` item for a server tool call; its action says what the call did (a search,
    a page opened). A failed call is still `completed` (docs/responses.md). `results` (the request's
    include has `web_search_call.results`): the finished item also lists what the call brought back,
    each `{"url", "title", "snippet"}` (a search's hits, or the page read)."""
    item = {"type": "web_search_call", "id": item_id, "status": "completed" if done else "in_progress",
            "action": call.action(done=done)}
    if results and done:
        item["results"] = [{"url": url, "title": title or url, "snippet": snippet} for url, title, snippet in call.pages()]
    return item


def reasoning_item(item_id: str, text: str | None) -> dict:
    summary = [{"type": "summary_text", "text": text}] if text is not None else []
    return {"type": "reasoning", "id": item_id, "summary": summary}


def message_item(item_id: str, text: str | None, annotations: list[dict], *, status: str = "completed",
                 refusal: str | None = None) -> dict:
    content: list[dict] = []
    if text is not None:
        content.append({"type": "output_text", "text": text, "annotations": annotations})
    if refusal:
        content.append({"type": "refusal", "refusal": refusal})
    return {"type": "message", "id": item_id, "status": status, "role": "assistant", "content": content}


def call_item(ctx: ResponsesContext, item_id: str, call_id: str, chat_name: str, arguments: str | None,
              *, status: str = "completed") -> dict:
    """A function_call, or a custom_tool_call for a custom tool; `arguments` None = still streaming."""
    tool = ctx.client_tool(chat_name)
    if tool.kind == "custom":
        # Codex routes custom tool calls by plain name; no namespace
        return {"type": "custom_tool_call", "id": item_id, "call_id": call_id, "name": tool.name,
                "input": "" if arguments is None else custom_input(arguments), "status": status}
    item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": tool.name,
            "arguments": "" if arguments is None else (arguments if arguments.strip() else "{}"), "status": status}
    if tool.namespace is not None:
        item["namespace"] = tool.namespace
    return item


def call_item_id(ctx: ResponsesContext, chat_name: str) -> str:
    return new_id("ctc" if ctx.client_tool(chat_name).kind == "custom" else "fc")


def from_chat(outcome: Outcome, ctx: ResponsesContext, *, response_id: str | None = None,
              created_at: int | None = None) -> dict:
    """The Response for a finished pipeline run."""
    resp = outcome.response if isinstance(outcome.response, dict) else {}
    choices = resp.get("choices") if isinstance(resp.get("choices"), list) else []
    choice = choices[0] if choices and isinstance(choices[0], dict) else {}
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    output: list[dict] = []
    if ctx.hosted:
        output.extend(web_search_item(new_id("ws"), call, results=ctx.results) for call in outcome.calls)
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        output.append(reasoning_item(new_id("rs"), reasoning))
    status, reason = status_for(choice.get("finish_reason"))
    text = message.get("content") if isinstance(message.get("content"), str) else None
    refusal = message.get("refusal") if isinstance(message.get("refusal"), str) else None
    calls = [c for c in message.get("tool_calls") or () if isinstance(c, dict)]
    if text or refusal or not calls:
        skipped = len(text) - len(text.lstrip("\n")) if text else 0  # no leading blank lines; offsets follow
        text = text[skipped:] if text else text
        limit = len(text) if text else None
        annotations = [a for a in (annotation(raw, skipped, limit) for raw in message.get("annotations") or ())
                       if a is not None]
        body = text if text else (None if refusal else "")
        output.append(message_item(new_id("msg"), body, annotations,
                                   status="incomplete" if status == "incomplete" else "completed", refusal=refusal))
    for call in calls:
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        name = function.get("name") if isinstance(function.get("name"), str) else ""
        arguments = function.get("arguments") if isinstance(function.get("arguments"), str) else "{}"
        call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else new_id("call")
        output.append(call_item(ctx, call_item_id(ctx, name), call_id, name, arguments))
    created = created_at if created_at is not None else _created(resp)
    return response_object(ctx, response_id or new_id("resp"), created, status=status, output=output,
                           usage=usage_from_chat(resp.get("usage")), incomplete_reason=reason)


def _created(resp: dict) -> int:
    created = resp.get("created")
    return created if isinstance(created, int) and not isinstance(created, bool) else int(time.time())
