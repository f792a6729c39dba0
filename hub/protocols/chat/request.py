"""Chat Completions request check: every field the gateway reads has the type it reads it as.

One pass at decode, so the pipeline, the loop and the encoders can trust the shape; a wrong type is a
BadRequest naming its JSON path (`messages[2].tool_calls[0].function.name`), never a 500 later.
Fields the gateway only forwards are the backend's business and are left alone.
"""

from __future__ import annotations

from ...core.errors import BadRequest

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
TOOL_CHOICES = frozenset({"auto", "none", "required"})
CONTEXT_SIZES = frozenset({"low", "medium", "high"})


def _bad(path: str, problem: str) -> BadRequest:
    return BadRequest(f"'{path}' {problem}", param=path)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _content(content: object, path: str) -> None:
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise _bad(path, "must be a string, an array of content parts or null")
    for j, part in enumerate(content):
        where = f"{path}[{j}]"
        if not isinstance(part, dict):
            raise _bad(where, "must be a content part object")
        kind = part.get("type")
        if not isinstance(kind, str):
            raise _bad(f"{where}.type", "must be a string")
        if kind == "text" and not isinstance(part.get("text"), str):
            raise _bad(f"{where}.text", "must be a string")


def _function(fn: object, path: str, *, arguments: bool) -> None:
    if not isinstance(fn, dict):
        raise _bad(path, "must be an object")
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise _bad(f"{path}.name", "must be a non-empty string")
    if "description" in fn and fn["description"] is not None and not isinstance(fn["description"], str):
        raise _bad(f"{path}.description", "must be a string")
    if arguments and fn.get("arguments") is not None and not isinstance(fn["arguments"], str | dict):
        raise _bad(f"{path}.arguments", "must be a JSON string")
    if not arguments and fn.get("parameters") is not None and not isinstance(fn["parameters"], dict):
        raise _bad(f"{path}.parameters", "must be a JSON Schema object")


def _message(m: object, i: int) -> None:
    path = f"messages[{i}]"
    if not isinstance(m, dict):
        raise _bad(path, "must be an object")
    role = m.get("role")
    if not isinstance(role, str) or role not in ROLES:
        raise _bad(f"{path}.role", f"must be one of {sorted(ROLES)}")
    _content(m.get("content"), f"{path}.content")
    for key in ("name", "reasoning_content"):
        if m.get(key) is not None and not isinstance(m[key], str):
            raise _bad(f"{path}.{key}", "must be a string")
    if role == "tool" and not isinstance(m.get("tool_call_id"), str):
        raise _bad(f"{path}.tool_call_id", "is required for tool messages and must be a string")
    calls = m.get("tool_calls")
    if calls is None:
        return
    if not isinstance(calls, list):
        raise _bad(f"{path}.tool_calls", "must be an array")
    for j, call in enumerate(calls):
        where = f"{path}.tool_calls[{j}]"
        if not isinstance(call, dict):
            raise _bad(where, "must be an object")
        if call.get("id") is not None and not isinstance(call["id"], str):
            raise _bad(f"{where}.id", "must be a string")
        _function(call.get("function"), f"{where}.function", arguments=True)


def _tools(tools: object) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise _bad("tools", "must be an array of tool objects")
    for i, tool in enumerate(tools):
        path = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise _bad(path, "must be a tool object")
        kind = tool.get("type")
        if kind is not None and not isinstance(kind, str):
            raise _bad(f"{path}.type", "must be a string")
        if kind in (None, "function") or "function" in tool:
            _function(tool.get("function"), f"{path}.function", arguments=False)


def _tool_choice(choice: object) -> None:
    if choice is None or (isinstance(choice, str) and choice in TOOL_CHOICES):
        return
    if not isinstance(choice, dict):
        raise _bad("tool_choice", f"must be one of {sorted(TOOL_CHOICES)} or an object")
    if not isinstance(choice.get("type"), str):
        raise _bad("tool_choice.type", "must be a string")
    if "function" in choice:
        fn = choice["function"]
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise _bad("tool_choice.function", "must be an object with a string 'name'")


def _web_search_options(opts: object) -> None:
    if opts is None:
        return
    if not isinstance(opts, dict):
        raise _bad("web_search_options", "must be an object")
    size = opts.get("search_context_size")
    if size is not None and (not isinstance(size, str) or size not in CONTEXT_SIZES):
        raise _bad("web_search_options.search_context_size", f"must be one of {sorted(CONTEXT_SIZES)}")
    loc = opts.get("user_location")
    if loc is None:
        return
    if not isinstance(loc, dict):
        raise _bad("web_search_options.user_location", "must be an object")
    approx = loc.get("approximate")
    if approx is not None and not isinstance(approx, dict):
        raise _bad("web_search_options.user_location.approximate", "must be an object")
    for key, value in (approx or {}).items():
        if value is not None and not isinstance(value, str):
            raise _bad(f"web_search_options.user_location.approximate.{key}", "must be a string")


def validate_chat(body: dict) -> None:
    """Raise BadRequest for the first field of a chat request the gateway cannot read."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("'model' is required and must be a non-empty string", param="model")
    messages = body.get("messages")
    if messages is None:
        raise BadRequest("'messages' is required", param="messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty array", param="messages")
    for i, m in enumerate(messages):
        _message(m, i)
    _tools(body.get("tools"))
    _tool_choice(body.get("tool_choice"))
    _web_search_options(body.get("web_search_options"))
    for key in ("stream", "parallel_tool_calls", "enable_web_search", "web_search"):
        if body.get(key) is not None and not isinstance(body[key], bool):
            raise _bad(key, "must be a boolean")
    for key in ("stream_options", "response_format"):
        if body.get(key) is not None and not isinstance(body[key], dict):
            raise _bad(key, "must be an object")
    for key in ("max_tokens", "max_completion_tokens"):
        if body.get(key) is not None and not _is_int(body[key]):
            raise _bad(key, "must be an integer")
    if body.get("reasoning_effort") is not None and not isinstance(body["reasoning_effort"], str):
        raise _bad("reasoning_effort", "must be a string")


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
