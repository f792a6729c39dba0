"""Chat Completions request check: every field the gateway reads has the type it reads it as.

The fields are declared once, as msgspec Structs (`ChatRequest`); one `msgspec.convert` checks a body
against them at decode, so the pipeline, the loop and the encoders can trust the shape. A wrong type
is a BadRequest naming its JSON path (`messages[2].tool_calls[0].function.name`), never a 500 later.
Fields the gateway only forwards are the backend's business: unknown fields are left alone, and the
body itself stays the dict the client sent.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from ...core.errors import BadRequest
from ...core.wire import convert

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
TOOL_CHOICES = frozenset({"auto", "none", "required"})
CONTEXT_SIZES = frozenset({"low", "medium", "high"})

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]


class ContentPart(msgspec.Struct):
    type: str
    text: str | None = None  # required when type is "text" (checked after the decode)


class CallFunction(msgspec.Struct):
    name: NonEmpty
    arguments: str | dict[str, Any] | None = None


class ToolCall(msgspec.Struct):
    function: CallFunction
    id: str | None = None


class Message(msgspec.Struct):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None
    name: str | None = None
    reasoning_content: str | None = None
    tool_call_id: str | None = None  # required for role "tool" (checked after the decode)
    tool_calls: list[ToolCall] | None = None


class ToolFunction(msgspec.Struct):
    name: NonEmpty
    description: str | None = None
    parameters: dict[str, Any] | None = None


class Tool(msgspec.Struct):
    type: str | None = None
    function: ToolFunction | None = None  # required for a function tool (checked after the decode)


class ChoiceFunction(msgspec.Struct):
    name: str


class ToolChoice(msgspec.Struct):
    type: str
    function: ChoiceFunction | None = None


class UserLocation(msgspec.Struct):
    approximate: dict[str, str | None] | None = None  # the flat form's fields are read as they come


class WebSearchOptions(msgspec.Struct):
    search_context_size: Literal["low", "medium", "high"] | None = None
    user_location: UserLocation | None = None


class ChatRequest(msgspec.Struct):
    """The fields of a chat request the gateway reads, with the types it reads them as."""

    model: NonEmpty
    messages: Annotated[list[Message], msgspec.Meta(min_length=1)]
    tools: list[Tool] | None = None
    tool_choice: Literal["auto", "none", "required"] | ToolChoice | None = None
    web_search_options: WebSearchOptions | None = None
    stream: bool | None = None
    parallel_tool_calls: bool | None = None
    enable_web_search: bool | None = None
    web_search: bool | None = None
    stream_options: dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    reasoning_effort: str | None = None


def validate_chat(body: dict) -> None:
    """Raise BadRequest for the first field of a chat request the gateway cannot read."""
    request = convert(body, ChatRequest, what="chat request")
    for i, m in enumerate(request.messages):
        if m.role == "tool" and m.tool_call_id is None:
            raise BadRequest(f"'messages[{i}].tool_call_id' is required for tool messages and must be a string",
                             param=f"messages[{i}].tool_call_id")
        for j, part in enumerate(m.content if isinstance(m.content, list) else ()):
            if part.type == "text" and part.text is None:
                raise BadRequest(f"'messages[{i}].content[{j}].text' is required for a text part",
                                 param=f"messages[{i}].content[{j}].text")
    for i, tool in enumerate(request.tools or ()):
        if tool.function is None and tool.type in (None, "function"):
            raise BadRequest(f"'tools[{i}].function' is required for a function tool", param=f"tools[{i}].function")


CONTEXT_COUNTS = {"low": 3, "medium": 5, "high": 10}  # results per search for search_context_size
_LOCATION_KEYS = ("country", "region", "city", "timezone")


def context_size(body: dict) -> str | None:
    """chat's `web_search_options.search_context_size` (low, medium, high), when given."""
    opts = body.get("web_search_options")
    size = opts.get("search_context_size") if isinstance(opts, dict) else None
    return size if size in CONTEXT_COUNTS else None


def search_options(body: dict) -> tuple[dict | None, int | None]:
    """(user location, results per search) from chat's `web_search_options` (checked by validate_chat).

    `user_location` is `{"type": "approximate", "approximate": {"country", "region", "city", "timezone"}}`;
    the flat form is accepted too.
    """
    opts = body.get("web_search_options")
    if not isinstance(opts, dict):
        return None, None
    size = opts.get("search_context_size")
    count = CONTEXT_COUNTS.get(size) if isinstance(size, str) else None
    loc = opts.get("user_location")
    if isinstance(loc, dict) and isinstance(loc.get("approximate"), dict):
        loc = loc["approximate"]
    location = None
    if isinstance(loc, dict):
        location = {k: v.strip() for k in _LOCATION_KEYS if isinstance(v := loc.get(k), str) and v.strip()} or None
    return location, count
