"""Anthropic Messages request wire types: the request, its content blocks and its tools as msgspec Structs.

One `decode_request` checks a body against them: every field the gateway reads has the type it reads
it as, and a wrong one is a BadRequest worded as Anthropic words it, the JSON path first
(`messages.1.content.0.tool_use_id: Field required`). Fields the gateway does not read are left alone,
and the body itself stays the dict the client sent (a pass-through target gets it untouched).

New block and tool types appear all the time, so neither is a closed union: a content block is decoded
by its `type` through BLOCKS (a type not listed keeps only its type, as `OtherBlock`), a tool by its
type's prefix (`web_search_*`, `web_fetch_*` of any version; a server tool another server tool of
hub/tools/kinds/ declares as `ServerTool`; other Anthropic-defined tools as `OtherTool`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec

from ...core.errors import BadRequest
from ...core.wire import join, located, missing_field
from ...tools.kind import MESSAGES
from ...tools.registry import offerings

PositiveInt = Annotated[int, msgspec.Meta(ge=1)]


def bad_request(path: str, problem: str) -> BadRequest:
    """Anthropic's wording: the dotted JSON path, then the problem (`tools.0.max_uses: ...`)."""
    return BadRequest(f"{path}: {problem}", param=path)


# --- content blocks ----------------------------------------------------------------------------


class Block:
    """A content block: one of BLOCKS' Structs, or OtherBlock (decoded by `_by_type`)."""

    __slots__ = ()


class Text(msgspec.Struct, Block):
    text: str


class Base64Source(msgspec.Struct, tag_field="type", tag="base64"):
    media_type: str
    data: str


class UrlSource(msgspec.Struct, tag_field="type", tag="url"):
    url: str


class Image(msgspec.Struct, Block):
    source: Base64Source | UrlSource


_SOURCE_FIELDS = {"base64": ("media_type", "data"), "text": ("data",), "content": ("content",), "url": ("url",)}


class DocumentSource(msgspec.Struct):
    """base64 (a PDF), text, content (blocks) or url; another type (file, ...) reads as no text."""

    type: str
    media_type: str | None = None
    data: str | None = None
    url: str | None = None
    content: str | list[Block] | None = None

    def __post_init__(self) -> None:
        for name in _SOURCE_FIELDS.get(self.type, ()):
            if getattr(self, name) is None:
                raise ValueError(f"Object missing required field `{name}`")


class Document(msgspec.Struct, Block):
    source: DocumentSource
    title: str | None = None


class SearchResult(msgspec.Struct, Block):
    title: str | None = None
    source: str | None = None
    content: str | list[Block] | None = None


class ToolReference(msgspec.Struct, Block):
    """Claude Code's ToolSearch answer: the deferred tool it loaded (docs/claude-code.md)."""

    tool_name: str


class ToolUse(msgspec.Struct, Block):
    id: str
    name: str
    input: dict[str, Any] = {}


class ToolResult(msgspec.Struct, Block):
    tool_use_id: str
    content: str | list[Block] | None = None
    is_error: bool | None = None


class ServerToolUse(msgspec.Struct, Block):
    id: str
    name: str
    input: dict[str, Any] = {}


class ServerToolResult(msgspec.Struct, Block):
    """`web_search_tool_result` / `web_fetch_tool_result`: `content` is each tool's own (its replay reads it)."""

    tool_use_id: str
    content: Any = None


class MidConvSystem(msgspec.Struct, Block):
    content: str | list[Block]


class Thinking(msgspec.Struct, Block):
    thinking: str
    signature: str | None = None  # dropped on replay (hub/protocols/messages/blocks.py THINKING_SIGNATURE)


class RedactedThinking(msgspec.Struct, Block):
    data: str


class ContainerUpload(msgspec.Struct, Block):
    file_id: str


class OtherBlock(msgspec.Struct, Block):
    """A block type the gateway does not read: accepted, and dropped for a chat backend."""

    type: str


BLOCKS: dict[str, type] = {
    "text": Text, "image": Image, "document": Document, "search_result": SearchResult,
    "tool_reference": ToolReference, "tool_use": ToolUse, "tool_result": ToolResult,
    "server_tool_use": ServerToolUse, "web_search_tool_result": ServerToolResult,
    "web_fetch_tool_result": ServerToolResult, "mid_conv_system": MidConvSystem, "thinking": Thinking,
    "redacted_thinking": RedactedThinking, "container_upload": ContainerUpload,
}
_NESTING = frozenset({Document, SearchResult, ToolResult, MidConvSystem})  # blocks holding blocks


# --- tools -------------------------------------------------------------------------------------


class Tool:
    """A tool: CustomTool, WebSearchTool, WebFetchTool, ServerTool or OtherTool (decoded by `_by_type`)."""

    __slots__ = ()


class CustomTool(msgspec.Struct, Tool):
    name: str
    input_schema: dict[str, Any]
    description: str | None = None
    strict: bool | None = None
    defer_loading: bool | None = None  # Claude Code's deferred tools (docs/claude-code.md)


class ServerTool(msgspec.Struct, Tool):
    """The fields every version of the web_search / web_fetch server tools may carry; as itself, any other
    server tool a tool of hub/tools/kinds/ declares a Messages name for (hub/tools/registry.py)."""

    name: str | None = None
    max_uses: PositiveInt | None = None
    allowed_domains: list[str] | None = None
    blocked_domains: list[str] | None = None
    allowed_callers: list[str] | None = None  # "direct" or code-execution callers, which this gateway has not
    defer_loading: bool | None = None  # accepted: a server tool is offered at once
    strict: bool | None = None
    response_inclusion: str | None = None  # "full" | "excluded": about code-execution results only
    type: str = ""  # its versioned type: web_search_20250305, web_fetch_20250910, ...


class UserLocation(msgspec.Struct):
    city: str | None = None
    region: str | None = None
    country: str | None = None
    timezone: str | None = None


class WebSearchTool(ServerTool):
    user_location: UserLocation | None = None


class Citations(msgspec.Struct):
    enabled: bool | None = None


class ToolName(msgspec.Struct):
    name: str
    type: Literal["tool_reference"] | None = None


class InputSource(msgspec.Struct):
    type: Literal["all", "none"]


class ResultSource(msgspec.Struct):
    type: Literal["all", "none", "only", "except"]
    tools: list[ToolName] | None = None  # for only / except (required): each names a tool of the request

    def __post_init__(self) -> None:
        if self.type in ("only", "except") and self.tools is None:
            raise ValueError("Object missing required field `tools`")


class UrlSources(msgspec.Struct):
    """Where a web_fetch tool's URLs may come from (hub/tools/kinds/web_fetch.py UrlSources)."""

    user_input: Literal["all", "none"] | InputSource | None = None
    server_tool_results: Literal["all", "none"] | ResultSource | None = None
    client_tool_results: Literal["all", "none"] | ResultSource | None = None


class WebFetchTool(ServerTool):
    citations: Citations | None = None
    max_content_tokens: PositiveInt | None = None
    use_cache: bool | None = None
    url_sources: UrlSources | None = None

    def __post_init__(self) -> None:
        if any(self.allowed_domains or ()) and any(self.blocked_domains or ()):
            raise ValueError("allowed_domains and blocked_domains cannot both be set")


class OtherTool(msgspec.Struct, Tool):
    """Another Anthropic-defined tool (bash_*, code_execution_*, ...): no chat equivalent, not offered."""

    type: str
    name: Any = None


# --- the request -------------------------------------------------------------------------------


class ToolChoice(msgspec.Struct):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None  # required for "tool"
    disable_parallel_tool_use: bool | None = None

    def __post_init__(self) -> None:
        if self.type == "tool" and self.name is None:
            raise ValueError("Object missing required field `name`")


class ThinkingConfig(msgspec.Struct):
    type: str  # enabled | adaptive | disabled, and newer ones
    budget_tokens: int | None = None
    display: str | None = None


class OutputFormat(msgspec.Struct):
    type: str
    schema: dict[str, Any] | None = None  # required for json_schema

    def __post_init__(self) -> None:
        if self.type == "json_schema" and self.schema is None:
            raise ValueError("Object missing required field `schema`")


class OutputConfig(msgspec.Struct):
    effort: str | None = None
    format: OutputFormat | None = None


class Metadata(msgspec.Struct):
    user_id: str | None = None  # Claude Code: a JSON string with device_id and session_id


class Message(msgspec.Struct):
    role: Literal["user", "assistant", "system"]  # system: mid-conversation system text
    content: str | list[Block]


class MessagesRequest(msgspec.Struct):
    """The fields of a Messages request the gateway reads, with the types it reads them as."""

    model: str
    messages: Annotated[list[Message], msgspec.Meta(min_length=1)]
    system: str | list[Block] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    thinking: ThinkingConfig | None = None
    output_config: OutputConfig | None = None
    stream: bool | None = None
    max_tokens: PositiveInt | None = None  # optional: count_tokens has none
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop_sequences: list[str] | None = None
    metadata: Metadata | None = None


def _by_type(kind: type, value: Any) -> Any:
    """msgspec's dec_hook: a block by its `type`, a tool by its type's prefix. The nested decode's error
    carries its own path; msgspec adds this value's location after it (hub/core/wire.py located)."""
    tag = value.get("type") if isinstance(value, dict) else None
    if kind is Block:  # a type that is not a string: OtherBlock's `type: str` names the problem
        cls = BLOCKS.get(tag, OtherBlock) if isinstance(tag, str) else OtherBlock
    elif kind is Tool:
        if tag is None or tag == "custom":
            cls = CustomTool
        elif not isinstance(tag, str):
            cls = OtherTool  # its `type: str` names the problem
        elif tag.startswith("web_search_"):
            cls = WebSearchTool
        elif tag.startswith("web_fetch_"):
            cls = WebFetchTool
        elif offerings(MESSAGES, tag):
            cls = ServerTool  # another tool's hosted form: the fields every server tool may carry
        else:
            cls = OtherTool
    else:
        raise NotImplementedError(kind)
    try:  # a dec_hook makes a convert about three times slower: only where blocks nest
        return msgspec.convert(value, cls, dec_hook=_by_type) if cls in _NESTING else msgspec.convert(value, cls)
    except msgspec.ValidationError as e:
        raise ValueError(str(e)) from None


_INDEX = re.compile(r"\[(\d+)\]")


def decode_request(body: object) -> MessagesRequest:
    """The request the body is, or a BadRequest for the first field the gateway cannot read."""
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    try:
        request = msgspec.convert(body, MessagesRequest, dec_hook=_by_type)
    except msgspec.ValidationError as e:
        path, problem = located(str(e))
        field = missing_field(problem)
        if field is not None:
            path, problem = join(path, field), "Field required"
        if not path:
            raise BadRequest(f"invalid request: {problem}") from None
        raise bad_request(_INDEX.sub(r".\1", path), problem) from None
    if not request.model.strip():
        raise bad_request("model", "must not be empty")
    _check_url_sources(request.tools or ())
    return request


def _check_url_sources(tools: list[Tool]) -> None:
    """A web_fetch tool's url_sources may name only tools of this request."""
    fetches = [(i, t.url_sources) for i, t in enumerate(tools) if type(t) is WebFetchTool and t.url_sources]
    declared = {t.name for t in tools if isinstance(t.name, str)} if fetches else set()
    for i, sources in fetches:
        for key in ("server_tool_results", "client_tool_results"):
            source = getattr(sources, key)
            named = isinstance(source, ResultSource) and source.type in ("only", "except")
            for j, ref in enumerate(source.tools or () if named else ()):
                if ref.name not in declared:
                    raise bad_request(f"tools.{i}.url_sources.{key}.tools.{j}.name",
                                      f"names no tool of this request: {ref.name[:64]}")
