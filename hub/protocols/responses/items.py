"""Responses input items -> chat messages (docs/responses.md).

Raises BadRequest naming the JSON path of a malformed item; drops, with a reason, the items a chat
backend has no use for (reasoning, replayed web searches, other providers' hosted tools).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ...core.errors import BadRequest
from ...core.text import str_or_empty, str_or_none
from .tools import CUSTOM_INPUT, ToolRef, chat_name_for

# Items of the SDK's input union that a chat backend has no use for: dropped, never rejected.
_DROPPED_ITEMS = {
    "reasoning": "reasoning items are opaque to chat backends",
    "web_search_call": "a replayed or referenced web_search_call; the message after it has the answer",
    "compaction": "compaction items hold another provider's encrypted context",
    "compaction_trigger": "server-side compaction is not supported",
    "configuration_update": "configuration updates have no chat equivalent",
    "file_search_call": "file_search is not supported",
    "computer_call": "computer use is not supported",
    "computer_call_output": "computer use is not supported",
    "code_interpreter_call": "code_interpreter is not supported",
    "image_generation_call": "image_generation is not supported",
    "local_shell_call": "the hosted local_shell tool is not offered to chat models",
    "local_shell_call_output": "the hosted local_shell tool is not offered to chat models",
    "shell_call": "the hosted shell tool is not offered to chat models",
    "shell_call_output": "the hosted shell tool is not offered to chat models",
    "apply_patch_call": "the hosted apply_patch tool is not offered to chat models",
    "apply_patch_call_output": "the hosted apply_patch tool is not offered to chat models",
    "mcp_list_tools": "hosted MCP is not supported",
    "mcp_approval_request": "hosted MCP is not supported",
    "mcp_approval_response": "hosted MCP is not supported",
    "mcp_call": "hosted MCP is not supported",
    "tool_search_call": "tool_search is not offered to chat models",
    "tool_search_output": "tool_search is not offered to chat models",
    "program": "programmatic tool calling is not supported",
    "program_output": "programmatic tool calling is not supported",
}
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})


def reference_id(item: Any, path: str) -> str | None:
    """The id an `item_reference` input item names (its `type` may be left out: `{"id": …}` alone), or
    None for any other item. A reference without a usable id is a 400 naming `<path>.id`."""
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    if kind != "item_reference" and not (kind is None and item.keys() == {"id"}):
        return None
    ref = item.get("id")
    if not isinstance(ref, str) or not ref:
        raise BadRequest(f"{path}.id is required and must be a non-empty string", param=f"{path}.id")
    return ref


class Conversation:
    """Input items -> chat messages. Consecutive assistant-side items become one assistant message."""

    def __init__(self, refs: dict[str, ToolRef], dropped: list[str]) -> None:
        self.refs = refs
        self.dropped = dropped
        self.messages: list[dict] = []
        self.pending_images: list[dict] = []  # images in tool results, shown in a user turn after them

    def translate(self, items: list) -> list[dict]:
        for i, item in enumerate(items):
            path = f"input[{i}]"
            if not isinstance(item, dict):
                raise BadRequest(f"{path} must be an object", param=path)
            kind = item.get("type")
            if kind is not None and not isinstance(kind, str):
                raise BadRequest(f"{path}.type must be a string", param=f"{path}.type")
            if kind is None and "role" in item:
                kind = "message"
            if kind == "message":
                self._message(item, path)
            elif kind == "function_call":
                name = _required_str(item, "name", path)
                call_id = _required_str(item, "call_id", path)
                namespace = item.get("namespace") if isinstance(item.get("namespace"), str) else None
                chat_name = chat_name_for(self.refs, "function", name, namespace)
                self._call(call_id, chat_name, _arguments(item.get("arguments"), f"{path}.arguments"))
            elif kind == "custom_tool_call":
                name = _required_str(item, "name", path)
                call_id = _required_str(item, "call_id", path)
                raw = item.get("input")
                if not isinstance(raw, str):
                    raise BadRequest(f"{path}.input must be a string", param=f"{path}.input")
                chat_name = chat_name_for(self.refs, "custom", name, None)
                self._call(call_id, chat_name, json.dumps({CUSTOM_INPUT: raw}, ensure_ascii=False))
            elif kind in ("function_call_output", "custom_tool_call_output"):
                call_id = _required_str(item, "call_id", path)
                content = self._tool_output(item.get("output"), f"{path}.output", call_id)
                self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
            elif kind == "additional_tools":
                pass  # its tools were collected with the top-level ones
            elif (ref := reference_id(item, path)) is not None:
                # references are replaced by their stored items before translation (hub/protocols/responses/stored.py)
                raise BadRequest(f"{path}: item_reference '{ref[:120]}' was not resolved; "
                                 "send the item itself", param=path)
            elif isinstance(kind, str) and kind in _DROPPED_ITEMS:
                self.dropped.append(f"{path}: {_DROPPED_ITEMS[kind]}")
            elif kind is None:
                raise BadRequest(f"{path} has neither 'type' nor 'role'", param=f"{path}.type")
            else:
                raise _bad_type(path, kind, "is not a supported input item type")
        self._flush_images()
        return self.messages

    def _append(self, message: dict) -> None:
        self._flush_images()
        self.messages.append(message)

    def _flush_images(self) -> None:
        if self.pending_images:
            self.messages.append({"role": "user", "content": self.pending_images})
            self.pending_images = []

    def _message(self, item: dict, path: str) -> None:
        role = str_or_none(item.get("role"))
        if role not in _ROLES:
            raise BadRequest(f"{path}.role must be one of 'user', 'assistant', 'system', 'developer'",
                             param=f"{path}.role")
        content = item.get("content")
        if role == "user":
            self._append({"role": "user", "content": _user_content(content, f"{path}.content")})
            return
        text = _plain_text(content, f"{path}.content")
        if role != "assistant":
            self._append({"role": "system", "content": text})
            return
        last = self.messages[-1] if self.messages and not self.pending_images else None
        if last is not None and last["role"] == "assistant":
            last["content"] = f"{last['content']}\n\n{text}" if last.get("content") else text
        else:
            self._append({"role": "assistant", "content": text})

    def _call(self, call_id: str, chat_name: str, arguments: str) -> None:
        call = {"id": call_id, "type": "function", "function": {"name": chat_name, "arguments": arguments}}
        last = self.messages[-1] if self.messages and not self.pending_images else None
        if last is not None and last["role"] == "assistant":
            last.setdefault("tool_calls", []).append(call)
        else:
            self._append({"role": "assistant", "content": None, "tool_calls": [call]})

    def _tool_output(self, output: Any, path: str, call_id: str) -> str:
        if isinstance(output, str):
            return output
        if not isinstance(output, list):
            raise BadRequest(f"{path} must be a string or an array of content items", param=path)
        texts: list[str] = []
        images: list[dict] = []
        for part, ppath, kind in _typed_parts(output, path):
            if kind in _TEXT_PARTS:
                texts.append(_part_text(part, ppath))
            elif kind == "input_image":
                images.append(_image_part(part, ppath))
                texts.append(f"[image {len(images)} follows in the next message]")
            elif kind == "input_file":
                name = part.get("filename") if isinstance(part.get("filename"), str) else "file"
                texts.append(f"[{name}: files in tool results are not supported]")
            else:
                raise _bad_type(ppath, kind, "is not a supported tool output part")
        if images:
            self.pending_images.append({"type": "text", "text": f"Images returned by tool call {call_id}:"})
            self.pending_images.extend(images)
        out = ""
        for t in texts:
            out += t if not out or out.endswith("\n") else "\n" + t
        return out


def _required_str(item: dict, key: str, path: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{path}.{key} is required and must be a non-empty string", param=f"{path}.{key}")
    return value


def _arguments(value: Any, path: str) -> str:
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    raise BadRequest(f"{path} must be a JSON string", param=path)


def _typed_parts(parts: list, path: str) -> Iterator[tuple[dict, str, str | None]]:
    """Each part of a content array with its JSON path and its type; a part that is not an object is rejected."""
    for j, part in enumerate(parts):
        ppath = f"{path}[{j}]"
        if not isinstance(part, dict):
            raise BadRequest(f"{ppath} must be an object", param=ppath)
        yield part, ppath, str_or_none(part.get("type"))


def _bad_type(path: str, kind: Any, problem: str) -> BadRequest:
    return BadRequest(f"{path}.type {str(kind)[:60]!r} {problem}", param=f"{path}.type")


def _part_text(part: dict, path: str) -> str:
    text = part.get("text")
    if not isinstance(text, str):
        raise BadRequest(f"{path}.text must be a string", param=f"{path}.text")
    return text


def _image_part(part: dict, path: str) -> dict:
    url = part.get("image_url")
    if isinstance(url, dict):
        url = url.get("url")
    if not isinstance(url, str) or not url:
        raise BadRequest(f"{path}.image_url is required (file ids are not supported)", param=f"{path}.image_url")
    image: dict[str, Any] = {"url": url}
    if part.get("detail") in ("auto", "low", "high"):
        image["detail"] = part["detail"]
    return {"type": "image_url", "image_url": image}


def _user_content(content: Any, path: str) -> str | list[dict]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise BadRequest(f"{path} must be a string or an array of content parts", param=path)
    parts: list[dict] = []
    for part, ppath, kind in _typed_parts(content, path):
        if kind in _TEXT_PARTS:
            parts.append({"type": "text", "text": _part_text(part, ppath)})
        elif kind == "input_image":
            parts.append(_image_part(part, ppath))
        elif kind == "input_file":
            data = part.get("file_data")
            if not isinstance(data, str) or not data:
                raise BadRequest(f"{ppath}.file_data is required (file ids and URLs are not supported)",
                                 param=f"{ppath}.file_data")
            file: dict[str, Any] = {"file_data": data}
            if isinstance(part.get("filename"), str):
                file["filename"] = part["filename"]
            parts.append({"type": "file", "file": file})
        else:
            raise _bad_type(ppath, kind, "is not a supported content part")
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)  # chat templates that only take strings work too
    return parts


def _plain_text(content: Any, path: str) -> str:
    """System and assistant content: text only (refusals read as text)."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if not isinstance(content, list):
        raise BadRequest(f"{path} must be a string or an array of content parts", param=path)
    texts = []
    for part, ppath, kind in _typed_parts(content, path):
        if kind in _TEXT_PARTS:
            texts.append(_part_text(part, ppath))
        elif kind == "refusal":
            texts.append(str_or_empty(part.get("refusal")))
        else:
            raise _bad_type(ppath, kind, "is not allowed here (text only)")
    return "\n".join(texts)
