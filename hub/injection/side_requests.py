"""Side requests: a client's utility calls about the conversation, which are not search turns.

Coding agents ask their model for a session title, a summary, a memory extraction or a topic check
beside the real turns, often with the user's prompt as the last message ("Search the web for ..."),
so intent alone would search and the title would become the answer. They are recognised by shape,
on the internal chat form:

- an operator rule from `webSearch.sideRequests.rules` in engines.json (checked first; may also
  declare a shape a main request),
- structured output (`response_format` json_schema/json_object) with no tools offered,
- a system prompt (or a "### Task:" user prompt) that asks for a title, summary, memory extraction,
  tags, follow-up questions or a classification,
- no tools while the same client's other requests carry them, together with a short `max_tokens`.

Pure: `classify_side()` takes the body and what is known about the client and returns a decision
with its reason; `ClientTools` is the small per-process memory of which clients send tools.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..config.side_requests import SideRule
from ..core.text import text_of

SHORT_MAX_TOKENS = 1024  # a real answer (let alone one with search results) needs more
_HEAD = 600  # a utility prompt says what it is at the start of its block

_TASK = re.compile(
    r"\btitle generator\b"
    r"|\b(?:generate|write|create|suggest|produce|give|output)\s+(?:me\s+)?(?:only\s+)?(?:a|an|the|one)\s+"
    r"(?:[\w,-]+\s+){0,4}titles?\b(?:\s+(?:for|of|that|which|summari[sz]ing)\b)?"
    r"|\bnaming\s+(?:a|the|this)\s+(?:[\w-]+\s+)?(?:session|conversation|chat|thread)\b"
    r"|\bmemory\s+extraction\b|\bextract\s+(?:[\w-]+\s+){0,2}(?:memories|facts)\b"
    r"|\b(?:summar(?:ize|ise|izing|ising|y))\b.{0,60}\b(?:conversation|chat|session|thread|history)\b"
    r"|\bgenerate\s+(?:[\w-]+\s+){0,3}(?:tags|follow[- ]?up questions|search quer(?:y|ies)|autocompletion)\b"
    r"|\bclassif(?:y|ier|ication)\b.{0,60}\b(?:conversation|message|request|topic|prompt|intent)\b"
    r"|\b(?:respond|reply|answer|output)\s+(?:only\s+)?(?:with|in)\s+(?:a\s+)?(?:valid\s+)?json\b"
    r"|\bis\s+(?:this|the)\s+(?:message|request|prompt)\s+(?:about\s+)?a\s+new\s+(?:topic|conversation)\b",
    re.I | re.S,
)
_USER_TASK = re.compile(r"^\s*#{2,4}\s*task\s*:|\btitle\s+for\s+(?:this|the)\s+(?:conversation|chat|session)\b",
                        re.I)


@dataclass(frozen=True, slots=True)
class SideDecision:
    side: bool
    rule: str | None  # "operator:<name>", "structured-output", "task-prompt", "tool-less-short", None
    reason: str


# --- the request's shape --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shape:
    model: str
    system: str  # the head of every system/developer message, joined
    last_user: str
    has_tools: bool
    max_tokens: int | None
    structured: str | None  # the response_format type when it asks for JSON


def shape_of(body: dict) -> Shape:
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    system: list[str] = []
    last_user: dict | None = None
    for m in messages:
        if not isinstance(m, dict):
            continue
        if m.get("role") in ("system", "developer"):
            # Several prompt blocks arrive joined; each one states its purpose first.
            blocks = text_of(m.get("content"), any_part=True).split("\n\n")
            system += [block[:_HEAD] for block in blocks if block.strip()][:8]
        elif m.get("role") == "user":
            last_user = m  # only the last one's text is read (a history's tool results can be long)
    max_tokens = next((v for k in ("max_tokens", "max_completion_tokens")
                       if isinstance(v := body.get(k), int) and not isinstance(v, bool)), None)
    fmt = body.get("response_format")
    structured = fmt.get("type") if isinstance(fmt, dict) and fmt.get("type") in ("json_schema", "json_object") \
        else None
    tools = body.get("tools")
    model = body.get("model")
    user_text = text_of(last_user.get("content"), any_part=True) if last_user is not None else ""
    return Shape(model=model if isinstance(model, str) else "", system="\n\n".join(system),
                 last_user=user_text[:_HEAD], has_tools=isinstance(tools, list) and bool(tools),
                 max_tokens=max_tokens, structured=structured)


def classify_side(body: dict, *, rules: Iterable[SideRule] = (), client_uses_tools: bool = False) -> SideDecision:
    """Is this chat request a client's side request (title, summary, memory, classification)?"""
    shape = shape_of(body)
    for rule in rules:
        if rule.matches(shape):
            what = "a side request" if rule.side else "a main request"
            return SideDecision(rule.side, f"operator:{rule.name}", f"operator rule '{rule.name}' says {what}")
    if shape.structured and not shape.has_tools:
        return SideDecision(True, "structured-output", f"structured output ({shape.structured}) with no tools")
    task = system_task(shape.system)
    if task is not None:
        return SideDecision(True, "task-prompt", f'system prompt asks for a utility task: "{_clip(task)}"')
    m = _USER_TASK.search(shape.last_user)
    if m is not None:
        return SideDecision(True, "task-prompt", f'user prompt is a utility task: "{_clip(m.group(0))}"')
    if not shape.has_tools and client_uses_tools and shape.max_tokens is not None \
            and shape.max_tokens <= SHORT_MAX_TOKENS:
        return SideDecision(True, "tool-less-short",
                            f"no tools (this client's other requests carry them) and max_tokens={shape.max_tokens}")
    return SideDecision(False, None, "no side-request signal")


_SYSTEM_TASKS: dict[str, str | None] = {}  # a client sends the same system prompt on every request


def system_task(system: str) -> str | None:
    """The utility task a system prompt asks for (the words that say so), or None; each distinct
    prompt is searched once (the pattern costs tens of µs on a long prompt)."""
    if system in _SYSTEM_TASKS:
        return _SYSTEM_TASKS[system]
    m = _TASK.search(system)
    task = m.group(0) if m is not None else None
    if len(_SYSTEM_TASKS) < 256:
        _SYSTEM_TASKS[system] = task
    return task


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:77] + "..."


# --- which clients send tools ---------------------------------------------------------------------


class ClientTools:
    """Remembers, per client (hashed key and user agent), whether its requests lately carried tools."""

    def __init__(self, *, ttl_s: float = 3600.0, size: int = 4096,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._seen: OrderedDict[bytes, float] = OrderedDict()
        self._ttl = ttl_s
        self._size = size
        self._clock = clock

    @staticmethod
    def _id(client: str) -> bytes:
        return hashlib.blake2b(client.encode(), digest_size=12).digest()

    def note(self, client: str, has_tools: bool) -> bool:
        """Record this request; True when the client sent tools within the ttl (before or now)."""
        key = self._id(client)
        now = self._clock()
        if has_tools:
            self._seen[key] = now
            self._seen.move_to_end(key)
            while len(self._seen) > self._size:
                self._seen.popitem(last=False)
            return True
        at = self._seen.get(key)
        return at is not None and now - at <= self._ttl
