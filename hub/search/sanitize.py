"""Provider output -> a safe, bounded SearchResult: plain text only, http(s) URLs only, one hit per
URL, domain filters applied on our side, and the whole tool content under a byte cap."""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any
from urllib.parse import SplitResult, urlsplit

import msgspec

from ..observability import (
    metrics,  # its names are read when used: hub/observability/metrics.py imports hub/fetcher, which imports us
)
from .base import MAX_QUERY_CHARS, UNAVAILABLE, Hit, Parsed, RawHit, SearchRequest, SearchResult, failure
from .render import hit_fields, tool_bytes

log = logging.getLogger("searchhub.search")

TITLE_CAP = 300
SOURCE_CAP = 100
PUBLISHED_CAP = 64
URL_CAP = 2048
NO_RESULTS = "no results found; try a broader query or a different recency"

# Tags, bounded by the next '<' so that unclosed '<' cannot make the scan quadratic.
_TAG = re.compile(r"</?[A-Za-z][^<>]*>|<![^<>]*>")
_BLOCK_TAG = re.compile(r"</?(?:br|p|div|li|ul|ol|tr|td|th|h[1-6]|blockquote|section|article)\b[^<>]*>", re.I)
# Control characters, lone surrogates, and invisible format characters (bidi overrides, zero-width
# characters, Unicode tag characters) that can hide text from a human reviewer but not from a model.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]"
)
# What a decoded answer carries in place of text that was not text: U+FFFD for bytes that are not
# UTF-8 (hub/search/fetch.py decode_answer), a lone surrogate for an escaped one.
_UNDECODABLE = re.compile("[\ufffd\ud800-\udfff]")
_SPACE = re.compile(r"\s+")
_ANY_SPACE = re.compile(r"\s")
_INLINE_SPACE = re.compile(r"[^\S\n]+")
_LINE_EDGES = re.compile(r" ?\n ?")
_BLANK_LINES = re.compile(r"\n{3,}")
_REF = re.compile(r"\[([^\[\]\s]{1,32})\]")
_encode = msgspec.json.Encoder().encode


def truncate(s: str, cap: int) -> str:
    if len(s) <= cap:
        return s
    return s[: max(cap - 1, 0)].rstrip() + "…" if cap > 0 else ""


def clean_text(value: Any, cap: int, *, multiline: bool = False) -> str:
    """Plain text: tags and entities resolved away, invisible characters removed, whitespace
    collapsed (to one line, or keeping paragraph breaks with multiline)."""
    if type(value) is not str:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        elif not isinstance(value, str):
            return ""
    if not value:
        return ""
    s = value[: cap * 2 + 256]  # bounds the work on huge fields; truncated below anyway
    if "<" in s:
        s = _TAG.sub("", _BLOCK_TAG.sub(" ", s))
    if "&" in s:
        s = html.unescape(s)
        if "<" in s:  # entity-encoded markup (&lt;b&gt;)
            s = _TAG.sub("", s)
    plain = s.isascii() and s.isprintable()  # the common case: nothing invisible, no \n or \t
    if not plain:
        s = _INVISIBLE.sub("", s)
    if multiline:
        s = _BLANK_LINES.sub("\n\n", _LINE_EDGES.sub("\n", _INLINE_SPACE.sub(" ", s))).strip()
    elif not plain or "  " in s or s[:1] == " " or s[-1:] == " ":  # else splitting changes nothing
        s = " ".join(s.split())
    return truncate(s, cap)


def clean_query(value: Any, cap: int = MAX_QUERY_CHARS) -> str:
    """A query as given, minus invisible characters and extra whitespace (markup is kept: a query
    may well be about '<div>')."""
    if not isinstance(value, str):
        return ""
    return truncate(_SPACE.sub(" ", _INVISIBLE.sub("", value[: cap * 4])).strip(), cap)


def clean_url(value: Any) -> str | None:
    """The URL if it is an absolute http(s) URL with a host, else None."""
    checked = _checked_url(value)
    return checked[0] if checked else None


def _checked_url(value: Any) -> tuple[str, SplitResult, str] | None:
    """(url, its parts, its host) for an absolute http(s) URL with a host (split once: a search
    round checks every hit's URL)."""
    if not isinstance(value, str):
        return None
    url = value.strip()
    if not url or len(url) > URL_CAP:
        return None
    # Printable ASCII has no invisible character and no whitespace but the space: the common URL
    # skips the two regexes.
    if not (url.isascii() and url.isprintable() and " " not in url) and (
            _INVISIBLE.search(url) or _ANY_SPACE.search(url) or "\ufffd" in url):
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not host:
        return None
    return url, parts, host


def host_of(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").rstrip(".").lower()
    except ValueError:
        return ""


def normalize_domain(value: Any) -> str | None:
    """'https://www.Example.com/x' -> 'www.example.com'; '*.example.com' -> 'example.com'."""
    if not isinstance(value, str):
        return None
    d = value.strip().lower()
    if "://" in d:
        d = host_of(d)
    d = d.split("/", 1)[0].split(":", 1)[0].removeprefix("*.").strip(".")
    if not d or len(d) > 253 or any(c.isspace() or c in "<>\"'@" for c in d):
        return None
    return d


def domain_matches(host: str, domains: Iterable[str]) -> bool:
    """True when host is one of the domains or a subdomain of one."""
    return any(host == d or host.endswith("." + d) for d in domains)


def dedup_key(url: str, parts: SplitResult | None = None, host: str | None = None) -> tuple[str, str, str]:
    """(host without www. and a trailing dot, path without a trailing /, query): one hit per key.
    `parts` and `host` (urlsplit's, and its hostname without the trailing dot) when the caller
    has them already."""
    parts = parts or urlsplit(url)
    if host is None:
        host = (parts.hostname or "").rstrip(".")  # lower-case already
    return host.removeprefix("www."), parts.path.rstrip("/") or "/", parts.query


def bound(
    engine: str, req: SearchRequest, parsed: Parsed, *, char_cap: int, max_bytes: int
) -> SearchResult:
    """The sanitized result, or a structured error when nothing usable is left. A hit without a usable
    URL is dropped and counted (searchhub_search_hits_dropped_total); text that was not text (bytes
    that are not UTF-8, lone surrogates) is replaced in a hit that is kept."""
    hits: list[Hit] = []
    dropped: dict[str, int] = {}
    seen: set[tuple[str, str, str]] = set()
    refs: dict[str, int] = {}
    known_refs: set[str] = set()
    for raw in parsed.hits:
        if not isinstance(raw, RawHit):
            continue
        ref = raw.ref if isinstance(raw.ref, str) else None
        if ref:
            known_refs.add(ref)
        if len(hits) >= req.count:
            continue
        checked = _checked_url(raw.url)
        if checked is None:
            reason = "encoding" if isinstance(raw.url, str) and _UNDECODABLE.search(raw.url) else "url"
            dropped[reason] = dropped.get(reason, 0) + 1
            continue
        url, parts, host = checked
        host = host.rstrip(".")  # hostname is lower-case already (host_of's rules)
        if req.allowed_domains and not domain_matches(host, req.allowed_domains):
            continue
        if req.blocked_domains and domain_matches(host, req.blocked_domains):
            continue
        key = dedup_key(url, parts, host)
        if key in seen:
            continue
        seen.add(key)
        hits.append(
            Hit(
                title=clean_text(raw.title, min(char_cap, TITLE_CAP)) or host,
                url=url,
                snippet=clean_text(raw.snippet, char_cap),
                source=clean_text(raw.source, SOURCE_CAP) or None,
                published=clean_text(raw.published, PUBLISHED_CAP) or None,
            )
        )
        if ref:
            refs[ref] = len(hits)
    if dropped:
        _count_dropped(engine, dropped)
    query = clean_query(req.query)
    if not hits:
        return failure(engine, query, NO_RESULTS, UNAVAILABLE)
    summary = clean_text(parsed.summary, char_cap, multiline=True) if parsed.summary is not None else ""
    if summary and known_refs:
        summary = _renumber(summary, refs, known_refs).strip()
    result = SearchResult(engine=engine, query=query, hits=tuple(hits), summary=summary or None)
    return fit(result, max_bytes)


def _count_dropped(engine: str, dropped: dict[str, int]) -> None:
    for reason, n in dropped.items():
        metrics.child(metrics.SEARCH_HITS_DROPPED, engine, reason).inc(n)
    log.debug("search engine %s: dropped %s", engine,
              ", ".join(f"{n} hit(s) without a usable URL" if reason == "url" else
                        f"{n} hit(s) whose URL is not valid text" for reason, n in sorted(dropped.items())))


def _renumber(summary: str, refs: dict[str, int], known: set[str]) -> str:
    """Provider citation markers ([ref_1]) -> our hit numbers ([n]); markers of dropped hits go."""

    def sub(m: re.Match) -> str:
        name = m.group(1)
        if name not in known:
            return m.group(0)
        n = refs.get(name)
        return f"[{n}]" if n else ""

    return _REF.sub(sub, summary)


def size(result: SearchResult) -> int:
    """Bytes of the tool message the model receives for the result (hub/search/render.py)."""
    return tool_bytes(result)


def fit(result: SearchResult, max_bytes: int) -> SearchResult:
    """Cut the result until its tool content fits max_bytes: passages read from pages first, then trailing
    hits, then the summary,
    then the last hit's snippet and title, then the echoed query."""
    total = size(result)
    if total <= max_bytes:
        return result
    hits = list(result.hits)
    # Passages read from the pages go first, the last hit's first: each such hit keeps its snippet.
    for i in range(len(hits) - 1, -1, -1):
        if total <= max_bytes:
            break
        if hits[i].passages:
            hits[i] = replace(hits[i], passages=())
            total = size(replace(result, hits=tuple(hits)))
    # Dropping trailing hits keeps the numbering of the others, so sizes add up exactly.
    while len(hits) > 1 and total > max_bytes:
        last = hits.pop()
        total -= len(_encode({"n": len(hits) + 1, **hit_fields(last)})) + 1
    result = replace(result, hits=tuple(hits))
    result = _shrink(result, "summary", max_bytes)
    if result.hits:
        for name in ("snippet", "title"):
            if size(result) <= max_bytes:
                break
            hit = _shrink_obj(result.hits[0], name, size(result) - max_bytes)
            result = replace(result, hits=(hit,))
    result = _shrink(result, "query", max_bytes)
    if size(result) > max_bytes:
        return failure(result.engine, "", f"search result does not fit in {max_bytes} bytes", UNAVAILABLE)
    return result




def _shrink(result: SearchResult, name: str, max_bytes: int) -> SearchResult:
    over = size(result) - max_bytes
    if over <= 0 or not getattr(result, name):
        return result
    result = _shrink_obj(result, name, over)
    if name == "summary" and not result.summary:
        result = replace(result, summary=None)
    return result


def _shrink_obj(obj: Any, name: str, over: int) -> Any:
    """Drop at least `over` bytes from a text field: every character cut is at least one byte, and
    the 4 spare characters pay for the ellipsis."""
    text: str = getattr(obj, name) or ""
    keep = len(text) - over - 4
    return replace(obj, **{name: truncate(text, keep) if keep > 0 else ""})
