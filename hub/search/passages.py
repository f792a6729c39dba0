"""Grounded answers for small models: the few whole sentences of a fetched page's main text that are
most relevant to the search query, ranked with BM25 (bm25s), at most max_chars in total and returned
in document order; the page's opening when nothing matches. Pure: no I/O, no state between calls."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from operator import add

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_CHINESE, STOPWORDS_EN_PLUS

# bm25s sets its own logger to DEBUG and logs every index() call; through a root handler (the CLIs'
# basicConfig, routes/serve.py) that would print a line per page. As routes/serve.py quiets httpx.
logging.getLogger("bm25s").setLevel(logging.WARNING)

MAX_INPUT = 200_000  # characters of page text considered: bounds the time of one call
MAX_QUERY = 1_000  # characters of query considered
MAX_QUERY_TOKENS = 64
# Ranked units (sentences, or pieces of long ones) considered: a page of 50 KB has about 500; this
# bounds hostile text made of tens of thousands of one-character "sentences".
MAX_UNITS = 5_000
ELLIPSIS = "…"
BOOST = 2.0  # query tokens with a digit or a capital letter: numbers and names decide relevance
CONTEXT = 0.25  # a sentence next to a hit gains this share of its score, so the hit comes with context

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
# Sentence ends: Latin terminators before whitespace, unless a lowercase word follows ("e.g. the");
# CJK terminators anywhere; and any line break or control character (trafilatura puts one paragraph
# or list item per line). Closing quotes and brackets stay with their sentence. The lookbehind and the
# possessive runs keep a long run of terminators linear (else each position re-scans the run).
_END = re.compile(
    r"((?<![.!?])[.!?]++[\"'”’)\]]*+(?=\s)(?!\s++[a-z])"
    r"|[。！？；]+[”’」』）]*)"
    r"|[\n\r\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]+"
)
# Control characters other than tab and line breaks: never inside a passage, and sentences on either
# side of one are not merged into one passage.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Tokens: a run of CJK characters (made into bigrams below, as Lucene's CJK analyzer does); a number
# with inner separators kept whole ("3.5", "1,000", "12:30"); any other run of letters and digits.
_CJK_CHAR = re.compile(f"[{_CJK}]")
_TOKEN = re.compile(rf"([{_CJK}]+)|(\d++(?:[.,:]\d++)+)|((?:(?![{_CJK}])[^\W_])+)")


@dataclass(frozen=True, slots=True)
class _Unit:
    """A ranked slice text[start:end]: a whole sentence, or a piece of one longer than max_chars."""

    start: int
    end: int
    head: bool  # starts where its sentence starts (else shown after an ellipsis)
    tail: bool  # ends where its sentence ends (else shown before an ellipsis)
    joins: bool  # only whitespace separates it from the unit before, so they merge into one passage


def select(text: str, query: str, max_chars: int) -> list[str]:
    """The passages of `text` most relevant to `query`, at most `max_chars` characters in total, in document order."""
    if not text or max_chars <= 0:
        return []
    text = text[:MAX_INPUT]
    units = _units(text, max_chars)
    if not units:
        return []
    scores = _scores([text[u.start : u.end] for u in units], query[:MAX_QUERY])
    if scores is None:
        return _render(text, units, _fill(units, range(len(units)), max_chars, True))
    ranked = scores.copy()
    ranked[1:] += CONTEXT * scores[:-1]
    ranked[:-1] += CONTEXT * scores[1:]
    order = np.argsort(-ranked, kind="stable")  # ties in document order: deterministic
    return _render(text, units, _fill(units, order[ranked[order] > 0].tolist(), max_chars, False))


def _units(text: str, max_chars: int) -> list[_Unit]:
    units: list[_Unit] = []
    prev_end = 0
    for start, end in _sentences(text):
        # Nothing but whitespace may lie between merged units: no control character, and no
        # sentence left out (one too long to cut for a tiny max_chars).
        joins = bool(units) and units[-1].end == prev_end and not _CONTROL.search(text, prev_end, start)
        if end - start <= max_chars:
            units.append(_Unit(start, end, True, True, joins))
        else:
            units.extend(_pieces(text, start, end, max_chars, joins))
        prev_end = end
        if len(units) >= MAX_UNITS:
            return units[:MAX_UNITS]
    return units


def _sentences(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in _END.finditer(text):
        # a terminator stays with its sentence; a line break or control character with neither
        spans.append(_trim(text, pos, m.end() if m.lastindex else m.start()))
        pos = m.end()
    spans.append(_trim(text, pos, len(text)))
    return [(s, e) for s, e in spans if s < e]


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    piece = text[start:end]
    stripped = piece.lstrip()
    start += len(piece) - len(stripped)
    return start, start + len(stripped.rstrip())


def _pieces(text: str, start: int, end: int, max_chars: int, joins: bool) -> list[_Unit]:
    """A sentence longer than max_chars, cut into pieces that fit max_chars with an ellipsis on both
    sides: at the last space of a piece when one lies in its second half, else mid-word (CJK text,
    a long URL)."""
    size = max_chars - 2 * len(ELLIPSIS)
    if size <= 0:
        return []  # no cut piece could be shown
    pieces: list[_Unit] = []
    pos = start
    while pos < end and len(pieces) < MAX_UNITS:
        cut = min(pos + size, end)
        if cut < end:
            space = max(text.rfind(" ", pos + 1, cut + 1), text.rfind("\t", pos + 1, cut + 1))
            if space > pos + size // 2:
                cut = space
        s, e = _trim(text, pos, cut)
        if s < e:
            pieces.append(_Unit(s, e, s == start, e == end, joins or bool(pieces)))
        pos = cut
    return pieces


def _tokens(text: str, singles: frozenset[str] = frozenset()) -> list[str]:
    """The text's tokens, with the CJK characters in singles also counted alone: a one-character
    query word (桥) matches inside longer words (大桥), which bigrams alone would miss."""
    out: list[str] = []
    for cjk, number, word in _TOKEN.findall(text):
        if cjk:
            out.extend(_bigrams(cjk))
            if singles:
                out.extend(filter(singles.__contains__, cjk))
        else:
            out.append((number or word).casefold())
    return out


def _bigrams(cjk: str) -> list[str]:
    """Chinese has no spaces between words: overlapping character pairs stand for them (a lone
    character for itself), so 大桥通车 matches 大桥 and 通车 without a dictionary."""
    return list(map(add, cjk, cjk[1:])) if len(cjk) > 1 else [cjk]


def _query_weights(query: str) -> dict[str, float]:
    """Each distinct query token and its weight; very common English and Chinese words (what, the,
    什么, 时候) are left out unless the query has nothing else."""
    weights: dict[str, float] = {}
    for cjk, number, word in _TOKEN.findall(query):
        if cjk:
            for pair in _bigrams(cjk):
                weights.setdefault(pair, 1.0)
        else:
            raw = number or word
            strong = any(c.isdigit() or c.isupper() for c in raw)
            token = raw.casefold()
            weights[token] = max(weights.get(token, 0.0), BOOST if strong else 1.0)
    content = {t: w for t, w in weights.items() if t not in STOPWORDS_EN_PLUS and t not in STOPWORDS_CHINESE}
    return dict(list((content or weights).items())[:MAX_QUERY_TOKENS])


def _scores(docs: list[str], query: str) -> np.ndarray | None:
    """Each doc's BM25 score for the query, each query token's share multiplied by its weight; None
    when no doc has any query token."""
    weights = _query_weights(query)
    # Tokens the query lacks only count towards a doc's length (BM25's length normalisation), so one
    # placeholder id (0) stands for them all: the same scores from a far smaller index.
    vocab = {"": 0} | {token: i for i, token in enumerate(weights, 1)}
    singles = frozenset(t for t in weights if len(t) == 1 and _CJK_CHAR.match(t))
    corpus: list[list[int]] = []
    found: set[str] = set()
    for doc in docs:
        tokens = _tokens(doc, singles)
        hits = list(filter(weights.__contains__, tokens))
        found.update(hits)
        # an empty doc gets one placeholder: bm25s cannot index an empty document
        corpus.append([vocab[t] for t in hits] + [0] * max(len(tokens) - len(hits), not hits))
    if not found:
        return None
    bm25 = bm25s.BM25()
    bm25.index((corpus, vocab), show_progress=False)
    total = np.zeros(len(docs), dtype=np.float32)
    for token in sorted(found, key=vocab.__getitem__):  # a fixed order of float sums
        total += bm25.get_scores_from_ids([vocab[token]]) * np.float32(weights[token])
    return total


def _fill(units: list[_Unit], order: Iterable[int], max_chars: int, opening: bool) -> list[int]:
    """Units taken in the given order while they fit max_chars; the opening stops at the first that
    does not, since it must read as the start of the page."""
    chosen: set[int] = set()
    used = 0
    for i in order:
        cost = _cost(units, chosen, i)
        if used + cost <= max_chars:
            chosen.add(i)
            used += cost
        elif opening:
            break
    return sorted(chosen)


def _cost(units: list[_Unit], chosen: set[int], i: int) -> int:
    """Characters that adding unit i adds to the rendered passages: its text, plus the whitespace
    that joins it to a chosen neighbour (whose ellipsis then goes) or else its own ellipsis."""
    u = units[i]
    cost = u.end - u.start
    if i - 1 in chosen and u.joins:
        left = units[i - 1]
        cost += u.start - left.end - (not left.tail)
    else:
        cost += not u.head
    if i + 1 in chosen and units[i + 1].joins:
        right = units[i + 1]
        cost += right.start - u.end - (not right.head)
    else:
        cost += not u.tail
    return cost


def _render(text: str, units: list[_Unit], chosen: list[int]) -> list[str]:
    passages: list[str] = []
    run: list[int] = []
    for i in chosen:
        if run and (i != run[-1] + 1 or not units[i].joins):
            passages.append(_passage(text, units[run[0]], units[run[-1]]))
            run = []
        run.append(i)
    if run:
        passages.append(_passage(text, units[run[0]], units[run[-1]]))
    return passages


def _passage(text: str, first: _Unit, last: _Unit) -> str:
    return (
        (ELLIPSIS if not first.head else "")
        + text[first.start : last.end]
        + (ELLIPSIS if not last.tail else "")
    )
