"""The server-tool interface: a tool the gateway runs itself, between two model rounds.

A server tool is one module of `kinds/` declaring `TOOL = ToolKind(...)` (`kind.py`), found by
`registry.py`. It has

- a `name` (the chat function name the model calls; configurable, e.g. `webSearch.toolName`) and a
  `schema(request)`: the chat function tool offered to the model, built at config load;
- `offered(request)`: whether this request's model gets the tool (the client's hosted tools, the
  operator's per-backend policy), and `max_uses(request)`: how many calls one turn may make;
- `call(call_id, raw_arguments, request)`: the model's arguments parsed and repaired into a
  `ToolCall`, or `ArgumentError` whose message is written for the model to read and retry;
- `run(call, request)`: the execution; it sets `call.result` and never raises for a failure
  (failures are values: an error result the model and the client see);
- `render(call, first_n, room)`: the ONE rendering of the outcome into the text the model receives,
  with the sources it numbers from `first_n`; result-size caps are measured on this text, and a tool
  whose text can be shortened (a fetched page) fits it into `room`, the bytes left in the budget;
- `replay(shown_input, content)`: a hosted result block a client sends back (Anthropic history)
  turned into the chat call arguments and the tool text the model would have seen.

Its `ToolCall` subclass is what the encoders show (`ToolStarted` / `ToolFinished` in
`hub/tools/events.py` carry it) and says how the call maps to each protocol's hosted shape (`Hosted`):
the Responses `web_search_call` action, the Anthropic `server_tool_use` name and result block, and
the `usage.server_tool_use` counter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ..core.citations import Source

if TYPE_CHECKING:
    from ..config.keys import ApiKey
    from ..search.metered import SearchBill


@dataclass(frozen=True, slots=True)
class Hosted:
    """How a tool's calls show where a protocol has hosted (provider-run) tools."""

    action: str  # Responses `web_search_call` action type: "search" ("open_page" for a fetch tool)
    anthropic_name: str  # Anthropic `server_tool_use` name: "web_search" ("web_fetch")
    anthropic_result: str  # Anthropic result block type: "web_search_tool_result" ("web_fetch_tool_result")
    usage_key: str  # Anthropic `usage.server_tool_use` counter: "web_search_requests" ("web_fetch_requests")


@dataclass(slots=True)
class ToolCall:
    """One server-side call. `id` is stable for the life of the call (the model's tool-call id);
    subclasses add the repaired arguments and a `result` (None while running)."""

    id: str
    HOSTED: ClassVar[Hosted]

    @property
    def ok(self) -> bool:
        """Did the call succeed? (False while running.)"""
        result = getattr(self, "result", None)
        return result is not None and result.ok

    @property
    def key(self) -> str:
        """Equal for calls that would do the same thing (the repeated-call guard)."""
        raise NotImplementedError

    @property
    def label(self) -> str:
        """What the call did, for the model: "searched for 'rust'"."""
        raise NotImplementedError

    @property
    def ran(self) -> bool:
        """Counts as a request in usage (a call refused by a guard never ran)."""
        return True

    def shown_input(self) -> dict:
        """The call's input as clients see it: `server_tool_use.input`."""
        raise NotImplementedError

    def action(self, *, done: bool) -> dict:
        """The Responses `web_search_call.action` for this call."""
        raise NotImplementedError

    def hosted_content(self) -> list[dict] | dict:
        """The content of the Anthropic result block (`HOSTED.anthropic_result`)."""
        raise NotImplementedError

    def pages(self) -> Iterable[tuple[str, str | None, str]]:
        """(url, title, snippet) of what the call brought back, for citations."""
        return ()

    def trace_fields(self) -> dict:
        """What a request trace shows of the call (hub/observability/trace.py): any of engine, chosen_by, query, url,
        outcome (the error code), error, hits, cached. No secrets, no page text."""
        return {}

    @property
    def document(self) -> bool:
        """Its Anthropic result holds a document (a fetched page): documents are numbered for citations."""
        return False

    def citation(self, claim: str, document_index: int) -> dict | None:
        """An Anthropic citation into the call's own document for a claim it supports (a fetched page's
        `char_location`); None when the document is not to be cited."""
        return None


@dataclass(frozen=True, slots=True)
class HostedFetch:
    """The client offered a provider-hosted page fetch (Anthropic `web_fetch_*`; Responses' `web_search`,
    whose calls may open pages): the gateway fetches itself and shows the fetches."""

    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()
    max_uses: int | None = None
    citations: bool = False  # Anthropic `citations.enabled`: char_location citations into the document
    max_content_tokens: int | None = None
    use_cache: bool = True


class Transcript:
    """What a conversation has shown the model from outside, in order: user messages and tool results,
    never the model's own text. The pipeline starts it from the request's messages and the loop adds
    every tool result; a tool that may only act on what the conversation showed (web_fetch's URL rule)
    reads it."""

    __slots__ = ("messages",)

    def __init__(self, messages: Iterable[object] = ()) -> None:
        self.messages: list[dict] = []
        for m in messages:
            self.add(m)

    def add(self, message: object) -> None:
        if isinstance(message, dict) and message.get("role") in ("user", "tool"):
            self.messages.append(message)


@dataclass(slots=True)
class HostedSearch:
    """The client offered a provider-hosted search tool (Responses `web_search`, Anthropic
    `web_search_20250305`): the gateway runs the search loop itself and shows the searches."""

    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()
    max_uses: int | None = None
    user_location: dict | None = None
    context_size: str | None = None  # low | medium | high -> result count
    max_results: int | None = None  # results per search the client asked for (OpenRouter's max_results)
    engine: str | None = None  # the engine a call that names none goes to (OpenRouter's engine, if it is ours)


@dataclass(frozen=True, slots=True)
class ToolRequest:
    """What one request says about its server tools (decided by the pipeline's plan)."""

    # the client's offers of provider-hosted tools, by tool name (ToolKind.name): "web_search" ->
    # HostedSearch, "web_fetch" -> HostedFetch; read by the protocols through hub/tools/registry.py
    hosted: Mapping[str, Any] = field(default_factory=dict)
    google: bool = False  # Google-preferred intent
    baidu: bool = False  # Baidu-preferred (`百度一下` with webSearch.baiduPreference "baidu")
    count_hint: int | None = None  # results wanted when the call names no count (search_context_size)
    user_location: dict | None = None  # chat web_search_options.user_location, when no hosted tool gives one
    key: ApiKey | None = None  # the calling gateway key: searches spend its budget
    bill: SearchBill | None = None
    provider: str = ""  # the provider id of the target serving the request (per-backend settings)
    context_size: str | None = None  # search_context_size (Responses tool, chat web_search_options): pages read
    transcript: Transcript = field(default_factory=Transcript)

    @property
    def client_hosted(self) -> bool:
        """The client named the hosted tools it wants: only those are offered."""
        return bool(self.hosted)


@dataclass(frozen=True, slots=True)
class Rendered:
    text: str  # exactly what the model receives
    sources: list[Source]  # numbered sources in it, for [n] citations


class ServerTool(Protocol):
    name: str
    call_type: type[ToolCall]

    def offered(self, request: ToolRequest) -> bool: ...

    def max_uses(self, request: ToolRequest) -> int | None: ...

    def schema(self, request: ToolRequest) -> dict: ...

    def call(self, call_id: str, raw_arguments: Any, request: ToolRequest) -> ToolCall: ...

    async def run(self, call: Any, request: ToolRequest) -> None: ...

    def refuse(self, call: Any, code: str, message: str) -> None: ...

    def render(self, call: Any, first_n: int, room: int | None = None) -> Rendered: ...

    def replay(self, shown_input: dict, content: Any) -> tuple[dict, str]: ...
