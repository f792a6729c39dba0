"""Anthropic Messages response pieces shared by the JSON and SSE encoders (docs/claude-code.md).

Server tool calls show as `server_tool_use` + result blocks; what goes in them is each tool's own
(hub/tools/base.py: `ToolCall.HOSTED`, `shown_input`, `hosted_content`).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from typing import Any

from ...core.ids import random_alnum
from ...tools.base import ToolCall
from ...tools.registry import usage_counters

_ID_SAFE = re.compile(r"[^A-Za-z0-9_-]")
_TOOL_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")

CITED_TEXT_MAX = 150
THINKING_SIGNATURE = "c2VhcmNoaHViOnRoaW5raW5n"  # opaque; searchhub drops thinking blocks on replay
DIRECT_CALLER = {"type": "direct"}  # the `caller` of every server tool block: the model called it (no code execution)
_STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


def message_id() -> str:
    return "msg_01" + random_alnum(22)


def tool_use_id(chat_id: object) -> str:
    """A chat tool-call id as an Anthropic tool_use id: kept when it fits ^[A-Za-z0-9_-]+$ (ids
    must survive the round trip), otherwise a fresh toolu_ id."""
    if isinstance(chat_id, str) and _TOOL_ID.fullmatch(chat_id):
        return chat_id
    return "toolu_01" + random_alnum(22)


def server_tool_use_id(call_id: str) -> str:
    """srvtoolu_ id derived from the search call's id, so start and result blocks agree."""
    if call_id.startswith("srvtoolu_"):
        return call_id
    safe = _ID_SAFE.sub("", call_id) or random_alnum(22)
    return "srvtoolu_" + safe


def stop_reason(finish_reason: object, *, has_tool_use: bool = False) -> str:
    if has_tool_use:
        return "tool_use"
    if isinstance(finish_reason, str):
        return _STOP_REASONS.get(finish_reason, "end_turn")
    return "end_turn"


def usage(chat_usage: object, *, server_tools: dict[str, int] | None = None) -> dict:
    """Chat usage -> Anthropic usage (docs/claude-code.md); `server_tool_use` counted when the client
    offered a server tool."""
    u = chat_usage if isinstance(chat_usage, dict) else {}
    prompt = _int(u.get("prompt_tokens"))
    details = u.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    cached = min(cached, prompt)
    out: dict[str, Any] = {
        "input_tokens": prompt - cached,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
        "output_tokens": _int(u.get("completion_tokens")),
        "service_tier": "standard",
    }
    if server_tools is not None:
        out["server_tool_use"] = server_tools
    return out


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# --- server tool blocks ------------------------------------------------------------------------


def usage_counts(calls: Iterable[ToolCall]) -> dict[str, int]:
    """`usage.server_tool_use`: the calls that ran, by each tool's counter (a refused call never ran)."""
    # every declared tool's counter, always, in the tools' order: web_search_requests, web_fetch_requests
    counts = dict.fromkeys(usage_counters(), 0)
    for call in calls:
        if call.ran:
            key = call.HOSTED.usage_key
            counts[key] = counts.get(key, 0) + 1
    return counts


def server_tool_use_block(call: ToolCall, *, shown: bool = True) -> dict:
    """`shown` False: the block as a stream opens it, its input still empty (it follows as deltas)."""
    return {"type": "server_tool_use", "id": server_tool_use_id(call.id), "name": call.HOSTED.anthropic_name,
            "input": call.shown_input() if shown else {}, "caller": DIRECT_CALLER}


def tool_result_block(call: ToolCall) -> dict:
    """The complete result block (`web_search_tool_result`, …): the call's content or its error object."""
    return {"type": call.HOSTED.anthropic_result, "tool_use_id": server_tool_use_id(call.id),
            "content": call.hosted_content(), "caller": DIRECT_CALLER}


class HitIndex:
    """url -> (title, snippet) of every hit seen, and the fetched documents by URL, for citation blocks."""

    __slots__ = ("_documents", "_hits", "_searched")

    def __init__(self, calls: Iterable[ToolCall] = ()) -> None:
        self._hits: dict[str, tuple[str | None, str]] = {}
        self._searched: set[str] = set()  # URLs a search (not a document) brought back
        self._documents: dict[str, tuple[ToolCall, int]] = {}  # page URL -> (call, document_index)
        for call in calls:
            self.add(call)

    @property
    def has_documents(self) -> bool:
        return bool(self._documents)

    def add(self, call: ToolCall) -> None:
        document = call.document
        index = len({id(c) for c, _ in self._documents.values()})
        for url, title, snippet in call.pages():
            if url not in self._hits:
                self._hits[url] = (title, snippet)
            if document:
                self._documents.setdefault(url, (call, index))
            else:
                self._searched.add(url)

    def citation(self, url: str, title: object, span: str) -> dict | None:
        """A `char_location` into a fetched document (when its tool asked for citations), else a
        `web_search_result_location` whose cited_text is the supporting snippet; None for a page
        known only as a document that is not to be cited."""
        if url in self._documents:
            call, index = self._documents[url]
            cited = call.citation(span, index)
            if cited is not None or url not in self._searched:
                return cited
        known_title, snippet = self._hits.get(url, (None, ""))
        cited = (snippet or span).strip()
        if len(cited) > CITED_TEXT_MAX:
            cited = cited[: CITED_TEXT_MAX - 1].rstrip() + "…"
        return {
            "type": "web_search_result_location",
            "url": url,
            "title": title if isinstance(title, str) and title else known_title,
            "cited_text": cited,
            "encrypted_index": base64.b64encode(url.encode()).decode(),
        }


def url_citation(annotation: object) -> tuple[str, object, int | None, int | None] | None:
    """(url, title, start, end) of a chat url_citation annotation, None when malformed."""
    if not isinstance(annotation, dict) or annotation.get("type") != "url_citation":
        return None
    inner = annotation.get("url_citation")
    inner = inner if isinstance(inner, dict) else annotation  # tolerate the flat (Responses) shape
    url = inner.get("url")
    if not isinstance(url, str) or not url:
        return None
    start, end = inner.get("start_index"), inner.get("end_index")
    start = start if isinstance(start, int) and not isinstance(start, bool) else None
    end = end if isinstance(end, int) and not isinstance(end, bool) else None
    return url, inner.get("title"), start, end


def text_blocks(text: str, annotations: object, hits: HitIndex) -> list[dict]:
    """Cut the text at annotation boundaries: cited spans become text blocks with citations."""
    spans: list[tuple[int, int, dict]] = []
    for annotation in annotations if isinstance(annotations, list) else ():
        parsed = url_citation(annotation)
        if parsed is None:
            continue
        url, title, start, end = parsed
        if start is None or end is None or not 0 <= start < end <= len(text):
            continue
        citation = hits.citation(url, title, text[start:end])
        if citation is not None:
            spans.append((start, end, citation))
    if not spans:
        return [{"type": "text", "text": text}] if text else []
    spans.sort(key=lambda s: (s[0], s[1]))
    blocks: list[dict] = []
    pos = 0
    for start, end, citation in spans:
        if start < pos:  # same or overlapping span: it cites the previous block too
            blocks[-1]["citations"].append(citation)
            continue
        if start > pos:
            blocks.append({"type": "text", "text": text[pos:start], "citations": None})
        blocks.append({"type": "text", "text": text[start:end], "citations": [citation]})
        pos = end
    if pos < len(text):
        blocks.append({"type": "text", "text": text[pos:], "citations": None})
    return blocks
