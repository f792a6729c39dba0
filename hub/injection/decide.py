"""Whether a request gets the server tools: a pure function of the config, the target that will
serve it, the request and the chain's sticky state. Tests call `decide` directly.

Order: only self-hosted backends (or those opted in with `webSearch.perBackend`), or any backend
when the client offered a hosted search or fetch tool; a request override (`web_search: false`) turns it off;
a forced or hosted search, a hosted fetch, or the client's own tool of the same name, turns it on; a client tool
that searches the web under another name (`WebSearch`, `google_search`; hub/injection/client_search.py) is
left alone, local searches (`grep_search`, `tool_search`) are not; a client's side request (a title,
summary or memory extraction, hub/injection/side_requests.py) is not a search turn; otherwise the policy: `always`, `never`,
`auto` (the request opted in), `selective` (opted in, the chain already searched, or the latest user
text has web-search intent, hub/injection/intent.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..config.settings import Limits, Provider, WebSearchConfig
from ..tools.kinds.web_search import WEB_SEARCH
from .chain import ChainState
from .client_search import client_web_search
from .intent import Intent, classify, latest_user_text


@dataclass(frozen=True, slots=True)
class Request:
    """What the decision reads from one request."""

    messages: list[dict]  # after the chain's splice
    tools: list  # the client's tools
    opted_in: bool = False  # enable_web_search / web_search_options
    force: bool | None = None  # True/False: client override; None: policy decides
    hosted: Mapping[str, Any] = field(default_factory=dict)  # the client's hosted tool offers, by tool name
    side: bool = False  # a client's side request (title, summary, memory): hub/injection/side_requests.py


@dataclass(frozen=True, slots=True)
class Decision:
    inject: bool
    google: bool = False  # Google-preferred intent (this request or the chain)
    intent: Intent | None = None  # when the latest user text was classified
    client_has_tool: bool = False  # the client offers a tool named like ours: serviced, not injected
    by_intent: bool = False  # the intent classification decided (counted in the intent metrics)
    baidu: bool = False  # `百度一下` with webSearch.baiduPreference "baidu": Baidu-backed engines instead
    reason: str = ""  # why, in words (request traces, docs/operating.md)


def tool_name(tool: object) -> str | None:
    """The name of a chat tool (or a tool_choice naming one)."""
    if not isinstance(tool, dict):
        return None
    fn = tool.get("function")
    if isinstance(fn, dict):
        return fn.get("name")
    return tool.get("name")


def request_of(body: dict, messages: list[dict], *, force: bool | None, hosted: Mapping[str, Any],
               side: bool = False) -> Request:
    opted_in = body.get("enable_web_search") is True or isinstance(body.get("web_search_options"), dict)
    return Request(messages, body.get("tools") or [], opted_in, force, hosted, side)


def eligible(ws: WebSearchConfig, provider: Provider, *, hosted: Mapping[str, Any], force: bool | None) -> bool:
    """Could this request get the tools at all (before looking at its messages)? `hosted`: the client's
    hosted tool offers, by tool name."""
    if force is False:
        return False
    if any(name != WEB_SEARCH for name in hosted):
        return True  # a hosted tool other than search (a fetch) needs no search engine
    if not ws.engines:
        return False
    if hosted:
        return True
    limits = ws.limits_for(provider.id)
    return limits.enabled and (provider.self_hosted or provider.id in ws.per_backend)


def ineligible_reason(ws: WebSearchConfig, provider: Provider, force: bool | None) -> str:
    """Why `eligible` said no."""
    if force is False:
        return "the client switched search off"
    if not ws.engines:
        return "no search engine is configured"
    if not ws.limits_for(provider.id).enabled:
        return f"web search is disabled for provider '{provider.id}'"
    return f"provider '{provider.id}' is not self-hosted and has no webSearch.perBackend entry"


def decide(ws: WebSearchConfig, provider: Provider, request: Request, state: ChainState | None = None) -> Decision:
    if not eligible(ws, provider, hosted=request.hosted, force=request.force):
        return Decision(False, reason=ineligible_reason(ws, provider, request.force))
    names = [tool_name(t) for t in request.tools]
    client_has_tool = ws.tool_name in names
    client_search = client_web_search(request.tools, request.messages, ws.tool_name) is not None
    limits: Limits = ws.limits_for(provider.id)
    intent = None
    by_intent = False
    if request.hosted or request.force or client_has_tool:
        inject = True
        reason = ("the client offered hosted web search" if WEB_SEARCH in request.hosted else
                  "the client forced search" if request.force else "the client offers the tool itself")
    elif client_search:
        inject, reason = False, "the client has its own search tool"  # stay out of its way
    elif request.side and not request.opted_in:
        # a title, summary or memory call about the conversation, not a turn
        inject, reason = False, "a side request (title, summary, memory), not a search turn"
    elif limits.inject_policy == "always":
        inject, reason = True, "injectPolicy always"
    elif limits.inject_policy == "never":
        inject, reason = False, "injectPolicy never"
    elif limits.inject_policy == "auto":
        inject = request.opted_in
        reason = "the client opted in" if inject else "injectPolicy auto: the client did not opt in"
    else:  # selective
        inject = request.opted_in or bool(state and state.sticky)
        reason = "the client opted in" if request.opted_in else "sticky chain"
        if not inject:
            intent = _classify(request.messages)
            by_intent = intent is not None
            inject = bool(intent and intent.search)
            reason = "no user text to classify" if intent is None else (
                "search intent" if inject else "no search intent")
    if not inject:
        return Decision(False, intent=intent, by_intent=by_intent, reason=reason)
    if intent is None:
        intent = _classify(request.messages)
    google = bool((intent and intent.google) or (state and state.google))
    baidu = bool(intent and intent.baidu) and ws.baidu_preference == "baidu"
    return Decision(True, google and not baidu, intent, client_has_tool, by_intent, baidu, reason)


def _classify(messages: list[dict]) -> Intent | None:
    text = latest_user_text(messages)
    return classify(text) if text else None
