"""Passages of a fetched document: the spans around a pattern (web_fetch's `find`, shown as a
Responses `find_in_page` action) and the sentence that best supports a claim (an Anthropic
`char_location` citation). Pure and bounded: spans are (start, end) offsets into the document, end
exclusive."""

from __future__ import annotations

import re

MAX_PATTERN = 200
_SENTENCE = re.compile(r"[^.!?。！？\n]+(?:[.!?。！？]+|\n|$)")
_WORD = re.compile(r"\w{3,}")
_MARKER = re.compile(r"\[\d{1,3}(?:\s*,\s*\d{1,3})*\]")
MAX_CITED = 500


def find(text: str, pattern: str, *, context: int = 300, limit: int = 8) -> list[tuple[int, int]]:
    """Spans of `text` around each case-insensitive occurrence of `pattern`, `context` characters
    either side, overlapping spans merged; at most `limit` spans."""
    needle = " ".join(pattern.split())[:MAX_PATTERN].casefold()
    if not needle:
        return []
    haystack = text.casefold()
    if len(haystack) != len(text):  # casefold changed lengths (ß -> ss): offsets would drift
        haystack = text.lower() if len(text.lower()) == len(text) else text
    spans: list[tuple[int, int]] = []
    at = haystack.find(needle)
    while at != -1 and len(spans) <= limit:
        start, end = max(0, at - context), min(len(text), at + len(needle) + context)
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], end)
        elif len(spans) < limit:
            spans.append((start, end))
        else:
            break
        at = haystack.find(needle, at + max(1, len(needle)))
    return spans


def excerpts(text: str, spans: list[tuple[int, int]]) -> str:
    """The spans joined, with an ellipsis where text was left out."""
    parts = []
    for start, end in spans:
        part = text[start:end].strip()
        parts.append(("…" if start > 0 else "") + part + ("…" if end < len(text) else ""))
    return "\n\n".join(parts)


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(_MARKER.sub(" ", text))}


def locate(document: str, claim: str) -> tuple[int, int] | None:
    """The span of the document's sentence sharing the most words with `claim` (earliest on a tie),
    trimmed of surrounding whitespace and at most MAX_CITED characters; None when no word is shared."""
    wanted = _words(claim)
    if not wanted:
        return None
    best: tuple[int, int, int] | None = None  # (score, start, end)
    for m in _SENTENCE.finditer(document):
        score = len(wanted & _words(m.group()))
        if score and (best is None or score > best[0]):
            best = (score, m.start(), m.end())
    if best is None:
        return None
    _, start, end = best
    while start < end and document[start].isspace():
        start += 1
    while end > start and document[end - 1].isspace():
        end -= 1
    return (start, min(end, start + MAX_CITED)) if end > start else None
