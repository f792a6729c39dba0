"""Responses input items -> chat messages (docs/responses.md).

The items come decoded (hub/protocols/responses/wire.py), so their shapes are checked; this module
raises BadRequest, naming the JSON path, for what a chat backend cannot take (an item or part type it
has no equivalent for, an image without a URL), and drops, with a reason, the items a chat backend has
no use for (reasoning, replayed web searches, other providers' hosted tools).
"""

from __future__ import annotations

import json
from typing import Any

from ...core.errors import BadRequest
from .tools import CUSTOM_INPUT, ToolRef, chat_name_for
from .wire import (
    AdditionalTools,
    CustomToolCall,
    FilePart,
    FunctionCall,
    ImagePart,
    ImageURL,
    Item,
    ItemReference,
    MessageItem,
    OtherItem,
    Part,
    RefusalPart,
    TextPart,
    ToolOutput,
)

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


class Conversation:
    """Input items -> chat messages. Consecutive assistant-side items become one assistant message."""

    def __init__(self, refs: dict[str, ToolRef], dropped: list[str]) -> None:
        self.refs = refs
        self.dropped = dropped
        self.messages: list[dict] = []
        self.pending_images: list[dict] = []  # images in tool results, shown in a user turn after them

    def translate(self, items: list[Item]) -> list[dict]:
        """Decoded items (hub/protocols/responses/wire.py) in chat form."""
        for i, item in enumerate(items):
            path = f"input[{i}]"
            match item:
                case MessageItem():
                    self._message(item, path)
                case FunctionCall():
                    chat_name = chat_name_for(self.refs, "function", item.name, item.namespace)
                    self._call(item.call_id, chat_name, _arguments(item.arguments))
                case CustomToolCall():
                    chat_name = chat_name_for(self.refs, "custom", item.name, None)
                    self._call(item.call_id, chat_name, json.dumps({CUSTOM_INPUT: item.input}, ensure_ascii=False))
                case ToolOutput():
                    content = self._tool_output(item.output, f"{path}.output", item.call_id)
                    self.messages.append({"role": "tool", "tool_call_id": item.call_id, "content": content})
                case AdditionalTools():
                    pass  # its tools were collected with the top-level ones
                case ItemReference():
                    # references are replaced by their stored items before translation (stored.py)
                    raise BadRequest(f"{path}: item_reference '{item.id[:120]}' was not resolved; "
                                     "send the item itself", param=path)
                case OtherItem(type=str(kind)) if kind in _DROPPED_ITEMS:
                    self.dropped.append(f"{path}: {_DROPPED_ITEMS[kind]}")
                case OtherItem(type=None):
                    raise BadRequest(f"{path} has neither 'type' nor 'role'", param=f"{path}.type")
                case OtherItem():
                    raise _bad_type(path, item.type, "is not a supported input item type")
        self._flush_images()
        return self.messages

    def _append(self, message: dict) -> None:
        self._flush_images()
        self.messages.append(message)

    def _flush_images(self) -> None:
        if self.pending_images:
            self.messages.append({"role": "user", "content": self.pending_images})
            self.pending_images = []

    def _message(self, item: MessageItem, path: str) -> None:
        content = item.content
        if item.role == "user":
            self._append({"role": "user", "content": _user_content(content, f"{path}.content")})
            return
        text = _plain_text(content, f"{path}.content")
        if item.role != "assistant":
            self._append({"role": "system", "content": text})  # system and developer
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

    def _tool_output(self, output: str | list[Part], path: str, call_id: str) -> str:
        if isinstance(output, str):
            return output
        texts: list[str] = []
        images: list[dict] = []
        for j, part in enumerate(output):
            match part:
                case TextPart():
                    texts.append(part.text)
                case ImagePart():
                    images.append(_image_part(part, f"{path}[{j}]"))
                    texts.append(f"[image {len(images)} follows in the next message]")
                case FilePart():
                    texts.append(f"[{part.filename if part.filename is not None else 'file'}: "
                                 "files in tool results are not supported]")
                case _:
                    raise _bad_type(f"{path}[{j}]", part.type, "is not a supported tool output part")
        if images:
            self.pending_images.append({"type": "text", "text": f"Images returned by tool call {call_id}:"})
            self.pending_images.extend(images)
        out = ""
        for t in texts:
            out += t if not out or out.endswith("\n") else "\n" + t
        return out


def _arguments(value: str | dict | None) -> str:
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _bad_type(path: str, kind: str | None, problem: str) -> BadRequest:
    return BadRequest(f"{path}.type {str(kind)[:60]!r} {problem}", param=f"{path}.type")


def _image_part(part: ImagePart, path: str) -> dict:
    url = part.image_url.url if isinstance(part.image_url, ImageURL) else part.image_url
    if not url:
        raise BadRequest(f"{path}.image_url is required (file ids are not supported)", param=f"{path}.image_url")
    image: dict[str, Any] = {"url": url}
    if part.detail in ("auto", "low", "high"):
        image["detail"] = part.detail
    return {"type": "image_url", "image_url": image}


def _user_content(content: str | list[Part] | None, path: str) -> str | list[dict]:
    if isinstance(content, str):
        return content
    if content is None:
        raise BadRequest(f"{path} is required for a user message: a string or an array of content parts",
                         param=path)
    parts: list[dict] = []
    for j, part in enumerate(content):
        match part:
            case TextPart():
                parts.append({"type": "text", "text": part.text})
            case ImagePart():
                parts.append(_image_part(part, f"{path}[{j}]"))
            case FilePart(file_data=str(data)) if data:
                file: dict[str, Any] = {"file_data": data}
                if part.filename is not None:
                    file["filename"] = part.filename
                parts.append({"type": "file", "file": file})
            case FilePart():
                raise BadRequest(f"{path}[{j}].file_data is required (file ids and URLs are not supported)",
                                 param=f"{path}[{j}].file_data")
            case _:
                raise _bad_type(f"{path}[{j}]", part.type, "is not a supported content part")
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)  # chat templates that only take strings work too
    return parts


def _plain_text(content: str | list[Part] | None, path: str) -> str:
    """System and assistant content: text only (refusals read as text)."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    texts = []
    for j, part in enumerate(content):
        match part:
            case TextPart():
                texts.append(part.text)
            case RefusalPart():
                texts.append(part.refusal or "")
            case _:
                raise _bad_type(f"{path}[{j}]", part.type, "is not allowed here (text only)")
    return "\n".join(texts)
