"""A fetched page as Codex's `open`, `find` and `click` see it: numbered lines and numbered links.

The same text always gives the same lines and links (open, find and click agree, also across calls
and replicas). Blank lines are dropped and long lines wrapped at WRAP characters, so a line number
points at a readable slice and a window of lines has a predictable size. Links are the ones the
page's text carries: Markdown links (`[text](url)`, relative ones resolved against the page's URL)
and bare http(s) URLs, each shown inline as `【n†text】`. The links the fetcher found in an HTML page's
markup (`FetchResult.links`), whose text shows without its target, follow as numbered lines at the end
of the page, so `click` can follow them too. Pure.
"""

from __future__ import annotations

import re
import textwrap
from bisect import bisect_right
from dataclasses import dataclass

from ...fetcher.extract import absolute_url
from ...tools.passages import find as find_spans

WRAP = 160
MAX_LINES = 5_000
MAX_LINKS = 100  # per page; further links stay as plain text
MAX_LINK_URL = 250  # the fetcher's own URL limit (hub/fetcher/urls.py): a longer one could not be opened
MAX_LINK_TEXT = 120

_MD_LINK = re.compile(r"!?\[([^\[\]\n]{0,300})\]\(([^()\s]{1,2048})(?:\s+\"[^\"\n]{0,300}\")?\)")
_BARE_URL = re.compile(r"https?://[^\s<>\"'`\[\](){}|\\^【】]{1,2048}", re.I)
_LINKS = re.compile(f"{_MD_LINK.pattern}|{_BARE_URL.pattern}", re.I)
_TRAILING = ".,;:!?*_~'\""


@dataclass(frozen=True, slots=True)
class Page:
    lines: tuple[str, ...]
    links: tuple[str, ...]  # link n is links[n]


def _link_url(raw: str, base: str) -> str | None:
    """A link as the fetcher would open it (its parser and spelling), or None."""
    return absolute_url(base, raw, MAX_LINK_URL)


def page_of(text: str, base_url: str = "", markup_links: tuple[str, ...] = ()) -> Page:
    """The page's numbered lines (line 1 is lines[0]) with its links marked, and the links; the
    markup's links the text does not carry are listed after the text."""
    links: list[str] = []
    ids: dict[str, int] = {}

    def number(url: str | None) -> int | None:
        if url is None:
            return None
        n = ids.get(url)
        if n is None and len(links) < MAX_LINKS:
            n = ids[url] = len(links)
            links.append(url)
        return n

    def mark(m: re.Match) -> str:
        whole = m.group(0)
        if m.group(2) is not None:  # [text](url)
            label = " ".join(m.group(1).split())[:MAX_LINK_TEXT] or m.group(2)[:MAX_LINK_TEXT]
            n = number(_link_url(m.group(2), base_url))
            return label if n is None else f"【{n}†{label}】"
        url = whole.rstrip(_TRAILING)
        tail = whole[len(url):]
        n = number(_link_url(url, ""))
        return whole if n is None else f"【{n}†{url}】{tail}"

    lines: list[str] = []
    for raw in text.split("\n"):
        line = " ".join(raw.split())
        if not line:
            continue
        if "](" in line or "://" in line:
            line = _LINKS.sub(mark, line)
        if len(line) <= WRAP:
            lines.append(line)
        else:
            lines.extend(textwrap.wrap(line, WRAP, break_long_words=True, break_on_hyphens=False))
        if len(lines) >= MAX_LINES:
            del lines[MAX_LINES:]
            break
    listed = []
    for url in markup_links:
        if url not in ids and (n := number(_link_url(url, ""))) is not None:
            listed.append(f"【{n}†{url}】")
    if listed and len(lines) < MAX_LINES:
        lines.append("Links on this page:")
        lines.extend(listed[: MAX_LINES - len(lines)])
    return Page(tuple(lines), tuple(links))


def window(page: Page, start: int, max_lines: int, max_chars: int) -> tuple[list[str], int]:
    """Lines from `start` (1-based) as `L{n}: text`, at most max_lines of them and max_chars in all
    (at least one line, cut if it alone is longer); (the lines, the last line number shown)."""
    out: list[str] = []
    used = 0
    last = start - 1
    for n in range(start, min(len(page.lines), start - 1 + max(1, max_lines)) + 1):
        row = f"L{n}: {page.lines[n - 1]}"
        if out and used + len(row) + 1 > max_chars:
            break
        if not out and len(row) > max_chars:
            row = row[: max(max_chars - 1, 8)] + "…"
        out.append(row)
        used += len(row) + 1
        last = n
    return out, last


def matches(page: Page, pattern: str, limit: int) -> tuple[list[int], bool]:
    """(1-based numbers of the lines where `pattern` occurs, case-insensitively, at most `limit` of
    them; whether there were more). A match that runs across a wrapped line's end counts for the
    line it starts on."""
    text = " ".join(page.lines)
    starts: list[int] = []
    at = 0
    for line in page.lines:
        starts.append(at)
        at += len(line) + 1
    found: list[int] = []
    spans = find_spans(text, pattern, context=0, limit=limit * 4 + 1)  # a line may hold several
    for begin, _ in spans:
        n = bisect_right(starts, begin)
        if n not in found:
            found.append(n)
    return found[:limit], len(found) > limit or len(spans) > limit * 4
