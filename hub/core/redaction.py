"""Keeping secrets out of what the gateway says: the one redaction, for upstream error bodies and
search engine messages alike."""

from __future__ import annotations

from collections.abc import Iterable

FRAGMENT = 8  # this many characters of a key in a row count as the key


def redact(text: str, secrets: Iterable[str | None], *, fragments: bool = True) -> str:
    """Mask every secret, and with `fragments` every run of FRAGMENT or more characters taken from
    one (providers like to echo a key's first or last characters back)."""
    for s in secrets:
        if not s or len(s) < 4:
            continue
        text = text.replace(s, "****")
        if len(s) < FRAGMENT or not fragments:
            continue
        grams = {s[i:i + FRAGMENT] for i in range(len(s) - FRAGMENT + 1)}
        covered = [False] * len(text)
        for i in range(len(text) - FRAGMENT + 1):
            if text[i:i + FRAGMENT] in grams:
                covered[i:i + FRAGMENT] = [True] * FRAGMENT
        if any(covered):
            out, i = [], 0
            while i < len(text):
                if covered[i]:
                    while i < len(text) and covered[i]:
                        i += 1
                    out.append("****")
                else:
                    out.append(text[i])
                    i += 1
            text = "".join(out)
    return text


def redact_bytes(body: bytes, secrets: Iterable[str | None], *, fragments: bool = True) -> bytes:
    """`redact` on bytes; bytes that are not UTF-8 pass through unchanged."""
    text = body.decode("utf-8", errors="surrogateescape")
    return redact(text, secrets, fragments=fragments).encode("utf-8", errors="surrogateescape")
