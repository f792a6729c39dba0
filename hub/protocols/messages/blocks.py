"""Anthropic Messages response pieces shared by the JSON and SSE encoders (protocols.md 3.5, 9.5-9.8).

Search results travel as `web_search_result` blocks whose `encrypted_content` is our own opaque
payload (base64 of {url, title, snippet}), so a replayed block can be turned back into text.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import string
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...events import SearchCall

_ALNUM = string.ascii_letters + string.digits
_ID_SAFE = re.compile(r"[^A-Za-z0-9_-]")
_TOOL_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")

CITED_TEXT_MAX = 150
THINKING_SIGNATURE = "c2VhcmNoaHViOnRoaW5raW5n"  # opaque; searchhub drops thinking blocks on replay
WEB_SEARCH_ERROR_CODES = frozenset(
    {"invalid_tool_input", "unavailable", "max_uses_exceeded", "too_many_requests", "query_too_long",
     "request_too_large"}
)
_STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


def _random(n: int) -> str:
    return "".join(secrets.choice(_ALNUM) for _ in range(n))


def message_id() -> str:
    return "msg_01" + _random(22)


def tool_use_id(chat_id: object) -> str:
    """A chat tool-call id as an Anthropic tool_use id: kept when it fits ^[A-Za-z0-9_-]+$ (ids
    must survive the round trip), otherwise a fresh toolu_ id."""
    if isinstance(chat_id, str) and _TOOL_ID.fullmatch(chat_id):
        return chat_id
    return "toolu_01" + _random(22)


def server_tool_use_id(call_id: str) -> str:
    """srvtoolu_ id derived from the search call's id, so start and result blocks agree."""
    if call_id.startswith("srvtoolu_"):
        return call_id
    safe = _ID_SAFE.sub("", call_id) or _random(22)
    return "srvtoolu_" + safe


def stop_reason(finish_reason: object, *, has_tool_use: bool = False) -> str:
    if has_tool_use:
        return "tool_use"
    if isinstance(finish_reason, str):
        return _STOP_REASONS.get(finish_reason, "end_turn")
    return "end_turn"


def usage(chat_usage: object, *, searches: int | None = None) -> dict:
    """Chat usage -> Anthropic usage (protocols.md 9.6); searches counted when the client offered
    the server tool."""
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
    if searches is not None:
        out["server_tool_use"] = {"web_search_requests": searches, "web_fetch_requests": 0}
    return out


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# --- search blocks ------------------------------------------------------------------------------


def searches_run(calls: Iterable[SearchCall]) -> int:
    """web_search_requests: the searches that ran (a call refused for max_uses never did)."""
    return sum(1 for call in calls if getattr(call.result, "error_code", None) != "max_uses_exceeded")


def encode_hit(url: str, title: str, snippet: str) -> str:
    raw = json.dumps({"url": url, "title": title, "snippet": snippet}, ensure_ascii=False)
    return base64.b64encode(raw.encode()).decode()


def decode_hit(encrypted_content: object) -> dict | None:
    """Our own encrypted_content back to {url, title, snippet}; None for anyone else's."""
    if not isinstance(encrypted_content, str) or not encrypted_content:
        return None
    try:
        value = json.loads(base64.b64decode(encrypted_content, validate=True))
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def server_tool_use_block(call: SearchCall) -> dict:
    return {"type": "server_tool_use", "id": server_tool_use_id(call.id), "name": "web_search",
            "input": {"query": call.query}}


def web_search_result_block(call: SearchCall) -> dict:
    """The complete `web_search_tool_result` block: the hits, or the error object."""
    return {"type": "web_search_tool_result", "tool_use_id": server_tool_use_id(call.id),
            "content": search_content(call)}


def search_content(call: SearchCall) -> list[dict] | dict:
    result = call.result
    if result is None or not getattr(result, "ok", False):
        return {"type": "web_search_tool_result_error", "error_code": error_code(result)}
    out = []
    for hit in getattr(result, "hits", ()) or ():
        url = getattr(hit, "url", None)
        if not isinstance(url, str) or not url:
            continue
        title = getattr(hit, "title", None) or url
        snippet = getattr(hit, "snippet", None) or ""
        published = getattr(hit, "published", None)
        out.append({
            "type": "web_search_result",
            "url": url,
            "title": title,
            "encrypted_content": encode_hit(url, title, snippet),
            "page_age": published if isinstance(published, str) and published else None,
        })
    return out


def error_code(result: object) -> str:
    code = getattr(result, "error_code", None)
    if code == "invalid_input":
        return "invalid_tool_input"
    return code if code in WEB_SEARCH_ERROR_CODES else "unavailable"


class HitIndex:
    """url -> (title, snippet) of every hit seen, for citation blocks."""

    __slots__ = ("_hits",)

    def __init__(self, calls: Iterable[SearchCall] = ()) -> None:
        self._hits: dict[str, tuple[str | None, str]] = {}
        for call in calls:
            self.add(call)

    def add(self, call: SearchCall) -> None:
        for hit in getattr(call.result, "hits", ()) or ():
            url = getattr(hit, "url", None)
            if isinstance(url, str) and url and url not in self._hits:
                self._hits[url] = (getattr(hit, "title", None), getattr(hit, "snippet", None) or "")

    def citation(self, url: str, title: object, span: str) -> dict:
        """A `web_search_result_location` citation; cited_text is the supporting snippet."""
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
    """Cut the text at annotation boundaries: cited spans become text blocks with citations
    (protocols.md 9.7)."""
    spans: list[tuple[int, int, dict]] = []
    for annotation in annotations if isinstance(annotations, list) else ():
        parsed = url_citation(annotation)
        if parsed is None:
            continue
        url, title, start, end = parsed
        if start is None or end is None or not 0 <= start < end <= len(text):
            continue
        spans.append((start, end, hits.citation(url, title, text[start:end])))
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
