"""Normalize what OpenAI-compatible backends (vLLM, Ollama, llama.cpp) return into OpenAI's Chat shape.

docs/architecture.md ("Backend quirks") lists them. The openai SDK's stream accumulator concatenates every
string it sees twice, so a stream must carry role once per choice, and id/type/name once per tool call.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import msgspec

from ..core.ids import new_id

_TOP_EXTRAS = ("prompt_logprobs", "prompt_token_ids", "kv_transfer_params")
_CHOICE_EXTRAS = ("stop_reason", "token_ids")
_JSON_SPACE = " \t\r\n"
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what every client protocol accepts as a call id
_NAME_NOISE = re.compile(r"^\s*[\"'`]?(?:functions?[.:])?|[\"'`]?\s*(?:<\|[^|]*\|>|</?[a-z_]+>)*\s*$")


def clean_name(name: object) -> str | None:
    """A tool name as the backend meant it: "functions.web_search", "web_search<|im_end|>" and
    quoted names are what small models and some templates produce."""
    if not isinstance(name, str):
        return None
    name = _NAME_NOISE.sub("", name)
    return name or None


def _usable_id(call_id: object) -> bool:
    return isinstance(call_id, str) and _ID.fullmatch(call_id) is not None


def new_call_id() -> str:
    """A tool-call id in OpenAI's format: "call_" + 24 random alphanumerics."""
    return new_id("call")


def _arguments_text(value: object) -> str | None:
    """Arguments as the JSON text OpenAI sends; objects (native Ollama) are serialised once."""
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _blank(arguments: str | None) -> bool:
    """No argument text at all; only JSON's own whitespace counts as blank, so "{}" can follow it."""
    return not arguments or not arguments.strip(_JSON_SPACE)


def _move_reasoning(part: dict) -> None:
    """Keep one field name for reasoning text: reasoning_content (vLLM and Ollama say reasoning)."""
    if "reasoning" in part:
        reasoning = part.pop("reasoning")
        if part.get("reasoning_content") is None and reasoning is not None:
            part["reasoning_content"] = reasoning


def _drop_extras(resp: dict, choices: list) -> None:
    for key in _TOP_EXTRAS:
        resp.pop(key, None)
    for choice in choices:
        if isinstance(choice, dict):
            for key in _CHOICE_EXTRAS:
                choice.pop(key, None)


def _is_error(resp: dict) -> bool:
    return "error" in resp or resp.get("object") == "error"


# --- the model's name ----------------------------------------------------------------------------

# A `"model"` member: inside a JSON string a quote is escaped (\"), so text cannot look like one,
# and a key that ends in "model" (`"default_model"`) has no quote before the m.
_MODEL_MEMBER = re.compile(rb'"model"[ \t\r\n]*:[ \t\r\n]*(?:"(?:[^"\\]|\\.)*"|null)')


class ModelName:
    """Makes a stream's bytes name the model the client asked for (a route, `provider.model`,
    `default`), whatever the backend calls itself (llama.cpp's server: its GGUF file's path). The
    backend's own `"model"` member is learned from the first one in the stream (the answer's own:
    a chunk's, Anthropic's `message`'s, a Response's; it comes before any nested one) and from then
    on replaced wherever it stands, with one `bytes.replace` per read (a stream names one model).
    Bytes it already rewrote come out the same again; a member cut by the end of the bytes is not
    seen (give it whole lines)."""

    __slots__ = ("new", "old")

    def __init__(self, model: str) -> None:
        self.new = b'"model":' + msgspec.json.encode(model)
        self.old: bytes | None = None  # the backend's own member, as it writes it

    def __call__(self, data: bytes) -> bytes:
        old = self.old
        if old is None:  # until the backend's first member: a search that costs little when it misses
            found = _MODEL_MEMBER.search(data)
            if found is None:
                return data
            old = self.old = found.group(0)
        return data if old == self.new else data.replace(old, self.new)


# --- non-streaming ------------------------------------------------------------------------------


def normalize_completion(resp: dict) -> dict:
    """Fix a non-streaming chat completion in place and return it; error bodies are returned untouched."""
    if not isinstance(resp, dict) or _is_error(resp):
        return resp
    choices = resp.get("choices")
    if not isinstance(choices, list):
        return resp
    _drop_extras(resp, choices)
    for choice in choices:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        _move_reasoning(message)
        _drop_non_text(message)
        calls = _usable_calls(message)
        if not calls:
            _fix_function_call(message)
            continue
        if "function_call" in message and _same_call(message["function_call"], calls):
            message.pop("function_call")  # llama.cpp sends the legacy field beside tool_calls
        _fix_calls(calls)
        if choice.get("finish_reason") in (None, "stop"):
            choice["finish_reason"] = "tool_calls"
        if message.get("content") == "":  # Ollama; OpenAI sends null beside tool calls
            message["content"] = None
    return resp


def _drop_non_text(part: dict) -> None:
    """A content that is not text (a number, an object) from a broken backend is dropped."""
    for key in ("content", "reasoning_content"):
        if part.get(key) is not None and not isinstance(part[key], str):
            del part[key]


def _usable_calls(message: dict) -> list:
    """The message's tool calls that name a function; one bare call object counts as a list of one.
    Anything else a broken backend put there (strings, nulls, nameless calls) is dropped."""
    calls = message.get("tool_calls")
    if isinstance(calls, dict):
        calls = [calls]
    if not isinstance(calls, list):
        message.pop("tool_calls", None)
        return []
    if not calls:
        return calls  # vLLM always sends the list; an empty one is left as it is
    usable = [c for c in calls if isinstance(c, dict) and isinstance(c.get("function"), dict)
              and isinstance(c["function"].get("name"), str) and c["function"]["name"]]
    if usable:
        message["tool_calls"] = usable
    else:
        message.pop("tool_calls", None)
    return usable


def _fix_calls(calls: list) -> None:
    seen: set[str] = set()
    for call in calls:
        if not isinstance(call, dict):
            continue
        call_id = call.get("id")
        if not _usable_id(call_id) or call_id in seen:
            call_id = call["id"] = new_call_id()
        seen.add(call_id)
        if not call.get("type"):
            call["type"] = "function"
        function = call.get("function")
        if not isinstance(function, dict):
            function = call["function"] = {}
        if "name" in function:
            function["name"] = clean_name(function["name"]) or ""
        arguments = _arguments_text(function.get("arguments"))
        function["arguments"] = "{}" if _blank(arguments) else arguments


def _fix_function_call(message: dict) -> None:
    fc = message.get("function_call")
    if isinstance(fc, dict):
        if "name" in fc:
            fc["name"] = clean_name(fc["name"]) or ""
        fc["arguments"] = _arguments_text(fc.get("arguments")) or ""
    elif "function_call" in message and fc is None:
        message.pop("function_call")


def _same_call(fc: object, calls: list) -> bool:
    """The legacy function_call repeats one of the tool calls (or is empty)."""
    if not isinstance(fc, dict):
        return fc is None
    name = clean_name(fc.get("name"))
    return name is None or any(isinstance(c, dict) and clean_name((c.get("function") or {}).get("name")) == name
                               for c in calls)


# --- streaming ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Call:
    index: int  # the index clients see: dense, in order of first appearance
    backend_id: str | None
    named: bool
    has_arguments: bool = False  # any non-blank argument text sent


@dataclass(slots=True)
class _Choice:
    calls: list[_Call] = field(default_factory=list)
    by_backend_index: dict[int, _Call] = field(default_factory=dict)
    ids: set[str] = field(default_factory=set)
    last: _Call | None = None
    function_named: bool = False  # the legacy function_call's name was sent


class StreamNormalizer:
    """Fixes one backend stream chunk by chunk so clients always see OpenAI's shape."""

    def __init__(self) -> None:
        self._choices: dict[int, _Choice] = {}

    def feed(self, chunk: dict) -> dict | None:
        """Return the fixed chunk (mutated in place), or None when nothing is left to send."""
        if not isinstance(chunk, dict) or _is_error(chunk):
            return chunk
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices:
            return chunk  # the usage-only chunk
        _drop_extras(chunk, choices)
        kept = [choice for choice in choices if isinstance(choice, dict) and self._fix_choice(choice)]
        if not kept and chunk.get("usage") is None:
            return None
        chunk["choices"] = kept
        return chunk

    def text_only(self, chunk: object) -> str | None:
        """The text of a chunk that carries nothing but text for the one choice already begun (no
        role to add, call, reasoning, finish or usage): what `feed` would keep of it, without
        fixing it. None for any other chunk (give that to `feed`). Most chunks of an answer are this."""
        if type(chunk) is not dict or chunk.get("usage") is not None or "error" in chunk:
            return None
        choices = chunk.get("choices")
        if type(choices) is not list or len(choices) != 1:
            return None
        choice = choices[0]
        if (type(choice) is not dict or choice.get("finish_reason") or choice.get("index", 0) != 0
                or 0 not in self._choices or chunk.get("object") == "error"):
            return None
        delta = choice.get("delta")
        if type(delta) is not dict:
            return None
        text = None
        for key, value in delta.items():
            if key == "content":
                text = value
            elif value is not None and key != "role":
                return None
        return text if type(text) is str else None

    def _fix_choice(self, choice: dict) -> bool:
        """Fix one choice in place; False when it carries nothing a client needs."""
        index = choice.get("index")
        if not isinstance(index, int):
            index = choice["index"] = 0
        state = self._choices.get(index)
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            delta = choice["delta"] = {}
        if state is None:
            state = self._choices[index] = _Choice()
            if not delta.get("role"):
                delta["role"] = "assistant"
        else:
            delta.pop("role", None)
        _move_reasoning(delta)
        _drop_non_text(delta)
        fc = delta.pop("function_call", None)
        fragments = delta.pop("tool_calls", None)
        if isinstance(fc, dict) and not fragments and not state.calls:
            # legacy function_call only: llama.cpp repeats the name in every chunk, clients concatenate it
            fc = dict(fc)
            name = clean_name(fc.pop("name", None))
            if name is not None and not state.function_named:
                fc["name"] = name
                state.function_named = True
            arguments = _arguments_text(fc.get("arguments"))
            fc.pop("arguments", None)
            if arguments:
                fc["arguments"] = arguments
            if fc:
                delta["function_call"] = fc
        if isinstance(fragments, list) and fragments:
            fixed = [out for frag in fragments if (out := self._fix_fragment(state, frag)) is not None]
            if fixed:
                delta["tool_calls"] = fixed
        finish = choice.get("finish_reason")
        if finish and state.calls:
            if finish == "stop":
                choice["finish_reason"] = "tool_calls"
            # vLLM's hermes parser may never stream arguments for a parameterless call
            empty = [call for call in state.calls if not call.has_arguments]
            if empty:
                delta.setdefault("tool_calls", []).extend(
                    {"index": call.index, "function": {"arguments": "{}"}} for call in empty
                )
                for call in empty:
                    call.has_arguments = True
        return bool(delta) or bool(finish) or choice.get("logprobs") is not None

    def _fix_fragment(self, state: _Choice, frag: object) -> dict | None:
        if not isinstance(frag, dict):
            return None
        function = frag.get("function")
        if not isinstance(function, dict):
            function = {}
        backend_index = frag.get("index")
        if not isinstance(backend_index, int) or isinstance(backend_index, bool):
            inner = function.get("index")  # native Ollama keeps it inside function
            backend_index = inner if isinstance(inner, int) and not isinstance(inner, bool) else None
        call_id = frag.get("id") if _usable_id(frag.get("id")) else None
        name = clean_name(function.get("name"))

        call = self._known_call(state, backend_index, call_id, name)
        out_function: dict = {}
        if call is None:
            call = _Call(index=len(state.calls), backend_id=call_id, named=name is not None)
            state.calls.append(call)
            # ids must be unique in a message, whatever the backend sent
            client_id = call_id if call_id is not None and call_id not in state.ids else new_call_id()
            state.ids.add(client_id)
            out: dict = {"index": call.index, "id": client_id}
            frag_type = frag.get("type")
            out["type"] = frag_type if isinstance(frag_type, str) and frag_type else "function"
            if name is not None:
                out_function["name"] = name
            out_function["arguments"] = ""
        else:
            out = {"index": call.index}
            if call.backend_id is None and call_id is not None:
                call.backend_id = call_id  # the client already has the id we made up
            if name is not None and not call.named:
                out_function["name"] = name
                call.named = True
        if backend_index is not None:
            state.by_backend_index[backend_index] = call
        state.last = call

        arguments = _arguments_text(function.get("arguments"))
        if arguments:
            out_function["arguments"] = arguments
            call.has_arguments = call.has_arguments or not _blank(arguments)
        if out_function:
            out["function"] = out_function
        return out if len(out) > 1 else None

    @staticmethod
    def _known_call(
        state: _Choice, backend_index: int | None, call_id: str | None, name: str | None
    ) -> _Call | None:
        """The call this fragment continues, or None when it starts a new one."""
        call = state.by_backend_index.get(backend_index) if backend_index is not None else None
        if call is None:
            # no usable index: a fragment that names a new call starts one, anything else continues
            last = state.last
            if last is None:
                return None
            if call_id is not None:
                return last if call_id == last.backend_id else None
            return last if name is None else None
        if call_id is not None and call.backend_id not in (None, call_id):
            return None  # a second whole call reusing the index (older Ollama)
        return call


# --- assembling ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Parts:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)


class ToolCallAssembler:
    """Assembles streamed tool-call fragments by index (after StreamNormalizer)."""

    def __init__(self) -> None:
        self._parts: dict[int, _Parts] = {}
        self._last: int | None = None

    def add(self, delta_tool_calls: list[dict]) -> None:
        """Take one delta's tool_calls fragments; id and name count once, arguments concatenate."""
        for frag in delta_tool_calls or ():
            if not isinstance(frag, dict):
                continue
            function = frag.get("function") if isinstance(frag.get("function"), dict) else {}
            index = frag.get("index")
            if not isinstance(index, int) or isinstance(index, bool):
                starts = bool(frag.get("id") or function.get("name"))
                index = self._last if self._last is not None and not starts else len(self._parts)
                while index in self._parts and starts:
                    index += 1
            parts = self._parts.setdefault(index, _Parts())
            self._last = index
            if parts.id is None and isinstance(frag.get("id"), str) and frag["id"]:
                parts.id = frag["id"]
            if parts.name is None and isinstance(function.get("name"), str) and function["name"]:
                parts.name = function["name"]
            arguments = _arguments_text(function.get("arguments"))
            if arguments:
                parts.arguments.append(arguments)

    def calls(self) -> list[dict]:
        """The assembled calls in index order; missing arguments become "{}"."""
        out = []
        for index in sorted(self._parts):
            parts = self._parts[index]
            if parts.id is None:
                parts.id = new_call_id()
            arguments = "".join(parts.arguments)
            out.append(
                {
                    "id": parts.id,
                    "type": "function",
                    "function": {
                        "name": parts.name or "",
                        "arguments": "{}" if _blank(arguments) else arguments,
                    },
                }
            )
        return out
