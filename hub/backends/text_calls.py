"""Tool calls a backend wrote as text instead of `tool_calls` (no tool parser on the server, a small
model, a template mismatch), recovered for the tools the caller names.

Formats: Hermes/Qwen `<tool_call>{...}</tool_call>`, Mistral `[TOOL_CALLS][...]` and
`[TOOL_CALLS]name[ARGS]{...}`, Llama `<|python_tag|>{...}` and `name.call(k="v")`,
`functions.NAME:{...}` / `to=functions.NAME ... {...}`, and a bare
`{"name": NAME, "arguments": {...}}` object, each fenced in ``` or not.

`TextCallScanner` works on a stream: it holds back text that may be the start of a call, so the raw
call text never reaches the client, and releases it as soon as it cannot be one. Text that names a
tool outside `names` is left as it is.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..core.text import json_open

MAX_HELD = 16_384  # held text that is still not a complete call after this is released as text


@dataclass(frozen=True, slots=True)
class TextCall:
    name: str
    arguments: str  # JSON object text


_TRIGGERS = ("<tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "to=functions.", "functions.", "```", "{")
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_MISTRAL_ARGS = re.compile(r"\s*([A-Za-z0-9_-]{1,64})\[ARGS\]")
_PY_CALL = re.compile(r"\s*([A-Za-z0-9_-]{1,64})\.call\(")
_PY_KWARG = re.compile(r"\s*([A-Za-z_]\w*)\s*=\s*")
_FENCE_OPEN = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\r?\n?")
_CALL_END = re.compile(r"\s*(?:<\|call\|>|<\|eom_id\|>|<\|eot_id\|>)?")
_END_TOKENS = ("<|call|>", "<|eom_id|>", "<|eot_id|>")
_decoder = json.JSONDecoder()

# A match attempt: ("call", end, calls), ("no", None, None) or ("partial", None, None)
_NO = ("no", None, None)
_PARTIAL = ("partial", None, None)


def _json_at(text: str, i: int, final: bool) -> tuple[str, object, int | None]:
    """Decode one JSON value at text[i:] (after whitespace): ("ok", value, end) | ("partial"|"no", None, None)."""
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    if i >= len(text):
        return ("no" if final else "partial"), None, None
    try:
        value, end = _decoder.raw_decode(text, i)
    except ValueError:
        return ("partial" if not final and json_open(text[i:]) else "no"), None, None
    return "ok", value, end


def _call(obj: object, names: frozenset[str], name: str | None = None) -> TextCall | None:
    """A call object ({"name", "arguments"|"parameters"}, or the arguments alone when name is given)."""
    if not isinstance(obj, dict):
        return None
    if name is None:
        fn = obj.get("function")
        if isinstance(fn, dict) and "name" in fn:  # {"type": "function", "function": {...}}
            obj = fn
        name = obj.get("name")
        if not isinstance(name, str):
            return None
        args = obj.get("arguments", obj.get("parameters", {}))
    else:
        args = obj
    name = name.strip()
    if name.startswith("functions."):
        name = name[len("functions."):]
    if name not in names:
        return None
    if isinstance(args, str):
        try:
            decoded = json.loads(args)
        except ValueError:
            decoded = None
        args = decoded if isinstance(decoded, dict) else {"query": args}
    if not isinstance(args, dict):
        return None
    return TextCall(name, json.dumps(args, ensure_ascii=False))


def _prefix_of(text: str, i: int, word: str) -> bool:
    """text[i:] is a proper prefix of word (the stream may still complete it)."""
    rest = text[i:]
    return len(rest) < len(word) and word.startswith(rest)


def _match(text: str, i: int, names: frozenset[str], final: bool) -> tuple:
    """Is there a call starting at text[i]?"""
    for trigger in _TRIGGERS:
        if text.startswith(trigger, i):
            return _MATCHERS[trigger](text, i + len(trigger), names, final, i)
        if not final and _prefix_of(text, i, trigger):
            return _PARTIAL
    return _NO


def _ended(text: str, end: int, final: bool, calls: list) -> tuple:
    """A call that ended at `end`, with the end-of-call token after it if one follows (or may follow)."""
    end = _CALL_END.match(text, end).end()
    rest = text[end:].lstrip()
    if not final and rest and any(t.startswith(rest) and t != rest for t in _END_TOKENS):
        return _PARTIAL
    if not final and not rest:
        return _PARTIAL  # the end token may still come
    return "call", end, calls


def _hermes(text: str, j: int, names: frozenset[str], final: bool, start: int) -> tuple:
    close = text.find("</tool_call>", j)
    body_end = close if close >= 0 else len(text)
    if close < 0 and not final:
        return _PARTIAL
    status, value, end = _json_at(text[:body_end], j, True)
    call = _call(value, names) if status == "ok" else None
    if call is None or text[end:body_end].strip():
        return _NO
    return "call", (close + len("</tool_call>") if close >= 0 else body_end), [call]


def _mistral(text: str, j: int, names: frozenset[str], final: bool, start: int) -> tuple:
    m = _MISTRAL_ARGS.match(text, j)
    if m is not None:
        status, value, end = _json_at(text, m.end(), final)
        if status != "ok":
            return (status, None, None)
        call = _call(value, names, m.group(1))
        return ("call", end, [call]) if call else _NO
    if not final and (j >= len(text) or (text[j:].strip() == "")):
        return _PARTIAL
    status, value, end = _json_at(text, j, final)
    if status != "ok":
        if status == "partial" or (not final and re.fullmatch(r"\s*[A-Za-z0-9_-]*(?:\[A?R?G?S?\]?)?", text[j:])):
            return _PARTIAL
        return _NO
    items = value if isinstance(value, list) else [value]
    calls = [_call(v, names) for v in items]
    if not calls or any(c is None for c in calls):
        return _NO
    return "call", end, calls


def _python_tag(text: str, j: int, names: frozenset[str], final: bool, start: int) -> tuple:
    m = _PY_CALL.match(text, j)
    if m is not None:
        args: dict = {}
        k = m.end()
        while True:
            while k < len(text) and text[k] in " ,\t\n":
                k += 1
            if k >= len(text):
                return _NO if final else _PARTIAL
            if text[k] == ")":
                call = _call(args, names, m.group(1))
                return _ended(text, k + 1, final, [call]) if call else _NO
            kw = _PY_KWARG.match(text, k)
            if kw is None:
                return _NO if final or k + 64 < len(text) else _PARTIAL
            status, value, end = _json_at(text, kw.end(), final)
            if status != "ok":
                return (status, None, None)
            args[kw.group(1)] = value
            k = end
    status, value, end = _json_at(text, j, final)
    if status != "ok":
        if not final and re.fullmatch(r"\s*[A-Za-z0-9_-]*(?:\.c?a?l?l?)?", text[j:]):
            return _PARTIAL
        return (status, None, None)
    call = _call(value, names)
    return _ended(text, end, final, [call]) if call else _NO


def _functions(text: str, j: int, names: frozenset[str], final: bool, start: int) -> tuple:
    m = _NAME.match(text, j)
    if m is None:
        return _PARTIAL if not final and j == len(text) else _NO
    if m.end() == len(text) and not final:
        return _PARTIAL
    name = m.group(0)
    if name not in names:
        return _NO
    brace = text.find("{", m.end(), m.end() + 80)
    if brace < 0:
        return _NO if final or len(text) > m.end() + 80 else _PARTIAL
    between = text[m.end():brace]
    if not re.fullmatch(r"\s*(?::|<\|constrain\|>\s*json|<\|message\|>|json|\s)*\s*", between):
        return _NO
    status, value, end = _json_at(text, brace, final)
    if status != "ok":
        return (status, None, None)
    call = _call(value, names, name)
    return _ended(text, end, final, [call]) if call else _NO


def _fence(text: str, j: int, names: frozenset[str], final: bool, start: int) -> tuple:
    m = _FENCE_OPEN.match(text, start)
    k = m.end()
    while k < len(text) and text[k] in " \t\r\n":
        k += 1
    if k >= len(text) or (not final and "\n" not in text[start:k + 1] and k == m.end()):
        return _NO if final else _PARTIAL
    if text[k] != "{" and text[k] != "<" and text[k] != "[":
        return _NO
    kind, end, calls = _match(text, k, names, final)
    if kind != "call":
        return (kind, None, None)
    close = re.compile(r"\s*```").match(text, end)
    if close is None:
        rest = text[end:]
        return _PARTIAL if not final and (rest.strip() == "" or "```".startswith(rest.strip())) else _NO
    return "call", close.end(), calls


def _bare(text: str, j: int, names: frozenset[str], final: bool, start: int) -> tuple:
    k = j
    while k < len(text) and text[k] in " \t\r\n":
        k += 1
    rest = text[k:k + 12]
    if not final and (rest == "" or '"name"'.startswith(rest) or '"function"'.startswith(rest)
                      or '"type"'.startswith(rest)):
        return _PARTIAL
    if not (rest.startswith('"name"') or rest.startswith('"function"') or rest.startswith('"type"')):
        return _NO
    status, value, end = _json_at(text, start, final)
    if status != "ok":
        return (status, None, None)
    call = _call(value, names)
    return ("call", end, [call]) if call else _NO


_MATCHERS = {
    "<tool_call>": _hermes, "[TOOL_CALLS]": _mistral, "<|python_tag|>": _python_tag,
    "to=functions.": _functions, "functions.": _functions, "```": _fence, "{": _bare,
}
# Where a call may start: a whole trigger, or (mid-stream) the text ends in a trigger's first
# part, which can only begin within _TAIL characters of the end (so only that is searched for it).
_ANY_TRIGGER = re.compile("|".join(map(re.escape, _TRIGGERS)))
_CUT = sorted({t[:k] for t in _TRIGGERS for k in range(1, len(t))}, key=len, reverse=True)
_CUT_AT_END = re.compile("(?:" + "|".join(map(re.escape, _CUT)) + r")\Z")
_TAIL = max(map(len, _TRIGGERS)) - 1


class TextCallScanner:
    """Feed text deltas; get back the text safe to show now. `finish()` gives the rest and the calls."""

    def __init__(self, names: frozenset[str] | set[str]) -> None:
        self.names = frozenset(names)
        self.calls: list[TextCall] = []
        self._held = ""

    def feed(self, text: str) -> str:
        if not self.names:
            return text
        self._held += text
        return self._scan(final=False)

    def finish(self) -> str:
        """The text still held, minus the calls in it."""
        if not self.names:
            return ""
        return self._scan(final=True)

    def _scan(self, final: bool) -> str:
        text = self._held
        n = len(text)
        out: list[str] = []
        i = 0
        emitted = 0
        while i < n:
            i = self._candidate(text, i, final)
            if i >= n:
                break
            kind, end, calls = _match(text, i, self.names, final)
            if kind == "call":
                out.append(text[emitted:i])
                self.calls.extend(calls)
                i = emitted = end
            elif kind == "partial":
                if n - i > MAX_HELD:
                    i += 1
                    continue
                out.append(text[emitted:i])
                self._held = text[i:]
                return "".join(out)
            else:
                i += 1
        out.append(text[emitted:])
        self._held = ""
        return "".join(out)


    @staticmethod
    def _candidate(text: str, i: int, final: bool) -> int:
        """The first place at or after i where a call may start (len(text) when none): where a
        trigger starts, or, mid-stream, where the text ends in a trigger's first part. One regex
        search finds it."""
        n = len(text)
        m = _ANY_TRIGGER.search(text, i)
        j = m.start() if m is not None else n
        if not final and j > n - _TAIL:
            cut = _CUT_AT_END.search(text, max(i, n - _TAIL))
            if cut is not None and cut.start() < j:
                j = cut.start()
        return j


def extract(text: str, names: frozenset[str] | set[str]) -> tuple[str, list[TextCall]]:
    """The text without the calls to `names` written in it, and those calls (non-streaming)."""
    scanner = TextCallScanner(names)
    shown = scanner.feed(text) + scanner.finish()
    return (shown.strip() if scanner.calls else shown), scanner.calls
