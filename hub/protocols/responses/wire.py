"""The Responses request as wire types: msgspec Structs for every field the gateway reads, with the
type it reads it as (docs/responses.md).

`decode_request` is the request check: one `msgspec.convert` for the top-level fields, then each
input item, content part and tool by its `type` through a table (ITEMS, PARTS, TOOLS). A type a
table does not name decodes to its fallback, which holds the type alone: new types appear, and the
decode never rejects one; the translators handle them as before (an unknown item type is a 400 there,
an unknown tool is dropped with a reason). Fields an item or tool carries that the gateway only
forwards or drops (a reasoning item's summary, a tool's `external_web_access`) are not declared, so
they are never rejected. A wrong type is a BadRequest whose param is the JSON path
(`input[2].call_id`), from hub/core/wire.py. The body itself stays the dict the client sent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from ...core.wire import bad_request, convert, join
from ...tools.kind import OPENROUTER
from ...tools.kinds.web_search import RESPONSES_TOOLS
from ...tools.registry import TOOLS as TOOL_KINDS

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Positive = Annotated[int, msgspec.Meta(ge=1)]
WHAT = "Responses request"
T = TypeVar("T")

# --- content parts (message content, tool output) ---------------------------------------------------


class TextPart(msgspec.Struct):
    """input_text, output_text, text."""

    type: str
    text: str


class ImageURL(msgspec.Struct):
    url: str | None = None


class ImagePart(msgspec.Struct):
    """input_image: a URL or data URL (the chat shape `{"url"}` too); file ids have no store here."""

    type: str
    image_url: str | ImageURL | None = None
    detail: str | None = None


class FilePart(msgspec.Struct):
    """input_file: inline `file_data` is what a chat backend can take."""

    type: str
    file_data: str | None = None
    filename: str | None = None


class RefusalPart(msgspec.Struct):
    type: str
    refusal: str | None = None


class OtherPart(msgspec.Struct):
    """A part of a type PARTS does not name (or none): the translator says where it is not allowed."""

    type: str | None = None


Part = TextPart | ImagePart | FilePart | RefusalPart | OtherPart
PARTS: dict[str, type[Part]] = {
    "input_text": TextPart, "output_text": TextPart, "text": TextPart,
    "input_image": ImagePart, "input_file": FilePart, "refusal": RefusalPart,
}

# --- input items ---------------------------------------------------------------------------------------


class MessageItem(msgspec.Struct):
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[Any] | None = None  # the parts decoded through PARTS


class FunctionCall(msgspec.Struct):
    call_id: NonEmpty
    name: NonEmpty
    arguments: str | dict[str, Any] | None = None
    namespace: str | None = None


class CustomToolCall(msgspec.Struct):
    call_id: NonEmpty
    name: NonEmpty
    input: str


class ToolOutput(msgspec.Struct):
    """function_call_output and custom_tool_call_output."""

    call_id: NonEmpty
    output: str | list[Any]  # the parts decoded through PARTS


class AdditionalTools(msgspec.Struct):
    """Codex's newest mode: tools offered in an input item instead of `tools`."""

    tools: list[Any]  # decoded through TOOLS


class ItemReference(msgspec.Struct):
    """`{"type": "item_reference", "id"}`, or `{"id"}` alone: replaced by the stored item it names."""

    id: NonEmpty


class OtherItem(msgspec.Struct):
    """An item the gateway reads nothing of but its type (reasoning, web_search_call, compaction, a new one)."""

    type: str | None = None


Item = MessageItem | FunctionCall | CustomToolCall | ToolOutput | AdditionalTools | ItemReference | OtherItem
ITEMS: dict[str, type[Item]] = {
    "message": MessageItem,
    "function_call": FunctionCall,
    "custom_tool_call": CustomToolCall,
    "function_call_output": ToolOutput,
    "custom_tool_call_output": ToolOutput,
    "additional_tools": AdditionalTools,
    "item_reference": ItemReference,
}

# --- tools ---------------------------------------------------------------------------------------------


class FunctionTool(msgspec.Struct):
    """A function tool, flat as Responses has it or in the chat shape (`function` holds the rest)."""

    name: NonEmpty | None = None  # required unless `function` is given (checked after the decode)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None
    function: FunctionTool | None = None


class CustomFormat(msgspec.Struct):
    type: str | None = None
    definition: str | None = None
    syntax: str | None = None


class CustomTool(msgspec.Struct):
    """A freeform tool (Codex's apply_patch and exec)."""

    name: NonEmpty
    description: str | None = None
    format: CustomFormat | None = None


class NamespaceTool(msgspec.Struct):
    name: NonEmpty
    tools: list[Any]  # decoded through TOOLS


class SearchFilters(msgspec.Struct):
    allowed_domains: list[str] | None = None
    blocked_domains: list[str] | None = None


class UserLocation(msgspec.Struct):
    country: str | None = None
    city: str | None = None
    region: str | None = None
    timezone: str | None = None


class WebSearchTool(msgspec.Struct):
    """OpenAI's hosted web_search (every version and the preview): the search the gateway runs."""

    filters: SearchFilters | None = None
    user_location: UserLocation | None = None
    search_context_size: Literal["low", "medium", "high"] | None = None
    type: str = ""  # which of its names (hub/tools/kinds/web_search.py RESPONSES_TOOLS)


@dataclass(frozen=True, slots=True)
class OpenRouterTool:
    """OpenRouter's server tools, kept as sent: hub/injection/openrouter.py reads them on the chat request."""

    spec: dict


class OtherTool(msgspec.Struct):
    """A tool of a type the gateway does not offer to chat models (tool_search, mcp, a new one)."""

    type: str


Tool = FunctionTool | CustomTool | NamespaceTool | WebSearchTool | OpenRouterTool | OtherTool
HOSTED_SEARCH_TOOLS = RESPONSES_TOOLS  # the built-in web_search's names, declared by the tool
# the `openrouter:*` server tools the gateway's server tools declare (hub/tools/registry.py)
OPENROUTER_TOOLS = frozenset(name for kind in TOOL_KINDS.values() if (offer := kind.offers.get(OPENROUTER))
                             for name in offer.names)
TOOLS: dict[str, type[Tool]] = {
    "function": FunctionTool,
    "custom": CustomTool,
    "namespace": NamespaceTool,
    **dict.fromkeys(HOSTED_SEARCH_TOOLS, WebSearchTool),
    **dict.fromkeys(OPENROUTER_TOOLS, OpenRouterTool),  # not decoded: kept as they came
}

# --- the request ---------------------------------------------------------------------------------------


class AllowedTool(msgspec.Struct):
    type: str | None = None
    name: str | None = None


class ChoiceName(msgspec.Struct):
    name: str | None = None


class ToolChoice(msgspec.Struct):
    type: str | None = None
    name: str | None = None
    function: ChoiceName | None = None  # the chat shape
    custom: ChoiceName | None = None
    mode: Literal["auto", "required"] | None = None  # allowed_tools
    tools: list[AllowedTool] | None = None  # allowed_tools


class Reasoning(msgspec.Struct):
    effort: str | None = None


class TextFormat(msgspec.Struct):
    type: str | None = None


class TextConfig(msgspec.Struct):
    format: TextFormat | None = None
    verbosity: str | None = None


class ResponsesRequest(msgspec.Struct):
    """The top-level fields of a Responses request the gateway reads, with the types it reads them as."""

    model: NonEmpty
    input: str | list[Any] | None = None  # the items decoded through ITEMS
    instructions: str | None = None
    tools: list[Any] | None = None  # decoded through TOOLS
    tool_choice: Literal["auto", "none", "required"] | ToolChoice | None = None
    previous_response_id: str | None = None
    conversation: Any = None  # not supported: a 400 in translation
    store: bool | None = None
    stream: bool | None = None
    include: list[str] | None = None
    reasoning: Reasoning | None = None
    text: TextConfig | None = None
    max_output_tokens: Positive | None = None
    max_tool_calls: Positive | None = None
    parallel_tool_calls: bool | None = None
    temperature: int | float | None = None
    top_p: int | float | None = None
    truncation: str | None = None
    metadata: dict[str, Any] | None = None
    prompt_cache_key: str | None = None
    safety_identifier: str | None = None
    user: str | None = None


@dataclass(slots=True)
class Request:
    """A checked Responses request: its fields, input items and tools decoded, and the body as sent
    (what a Response echoes is the client's own JSON)."""

    body: dict
    fields: ResponsesRequest
    items: list[Item]
    tools: list[Tool]


def decode_request(body: Any) -> Request:
    """The request decoded and checked, or a BadRequest naming the JSON path of the first wrong field."""
    fields = convert(body, ResponsesRequest, what=WHAT)
    raw = fields.input
    try:
        if raw is None:
            items: list[Item] = []
        elif isinstance(raw, str):
            items = [MessageItem(role="user", content=raw)]
        else:
            items = _each(raw, _item, "input")
        tools = _each(fields.tools or [], _tool, "tools")
    except _Invalid as e:
        raise bad_request(e.message, at=e.path, what=WHAT) from None
    return Request(body, fields, items, tools)


def decode_items(raw: list) -> list[Item]:
    """Items decoded by type (a response's output items, for a continuation's history)."""
    try:
        return _each(raw, _item, "input")
    except _Invalid as e:
        raise bad_request(e.message, at=e.path, what=WHAT) from None


def decode_item(raw: Any, at: str) -> Item:
    """One item decoded by type; `at` is where it stands in the request (`input[3]`)."""
    try:
        return _item(raw)
    except msgspec.ValidationError as e:
        raise bad_request(str(e), at=at, what=WHAT) from None
    except _Invalid as e:
        raise bad_request(e.message, at=join(at, e.path), what=WHAT) from None


_NO_NAME = "Object missing required field `name`"  # msgspec's words, for a name only one shape requires


class _Invalid(Exception):
    """msgspec's message about a value, and where that value is under the list being decoded."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


def _each(values: list, decode: Callable[[Any], T], at: str) -> list[T]:
    """Each value decoded; a failure names its path under `at` (built only then: the hot path builds no strings)."""
    out: list[T] = []
    try:
        for value in values:
            out.append(decode(value))
    except msgspec.ValidationError as e:
        raise _Invalid(str(e), f"{at}[{len(out)}]") from None
    except _Invalid as e:
        raise _Invalid(e.message, join(f"{at}[{len(out)}]", e.path)) from None
    return out


def _item(raw: Any) -> Item:
    kind = _by_type(raw, ITEMS, OtherItem)
    if kind is OtherItem and isinstance(raw, dict) and raw.get("type") is None:  # the type left out
        kind = MessageItem if "role" in raw else ItemReference if raw.keys() == {"id"} else OtherItem
    item = msgspec.convert(raw, kind)
    if kind is MessageItem and isinstance(item.content, list):
        item.content = _each(item.content, _part, "content")
    elif kind is ToolOutput and isinstance(item.output, list):
        item.output = _each(item.output, _part, "output")
    elif kind is AdditionalTools:
        item.tools = _each(item.tools, _tool, "tools")
    return item


def _part(raw: Any) -> Part:
    return msgspec.convert(raw, _by_type(raw, PARTS, OtherPart))


def _tool(raw: Any) -> Tool:
    kind = _by_type(raw, TOOLS, OtherTool)
    if kind is OpenRouterTool:
        return OpenRouterTool(raw)
    tool = msgspec.convert(raw, kind)
    if kind is FunctionTool:
        if tool.function is not None:  # the chat shape
            if tool.function.name is None:
                raise _Invalid(_NO_NAME, "function")
            return tool.function
        if tool.name is None:
            raise _Invalid(_NO_NAME, "")
    elif kind is NamespaceTool:
        tool.tools = _each(tool.tools, _tool, "tools")
    return tool


def _by_type(raw: Any, table: dict[str, type], fallback: type) -> type:
    """The wire type an object's `type` names in `table`; the fallback for any other (msgspec then
    says what is wrong with a value that is not an object, or a `type` that is not a string)."""
    kind = raw.get("type") if isinstance(raw, dict) else None
    return table.get(kind, fallback) if isinstance(kind, str) else fallback
