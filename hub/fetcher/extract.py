"""Fetched bytes -> (title, readable text, links). HTML goes through trafilatura (main content, no
navigation, scripts or comments), PDF through pypdf, plain text, Markdown and JSON are decoded. An
HTML page's links (all of its `<a href>`, navigation included) are collected apart from its text,
which they leave as it is. Everything here is synchronous and CPU-bound: the fetcher runs it in a
worker thread."""

from __future__ import annotations

import codecs
import io
import logging
import re
from dataclasses import dataclass
from urllib.parse import urljoin

from .urls import Target, parse

log = logging.getLogger("searchhub.fetch")

HTML, TEXT, MARKDOWN, JSON, PDF = "html", "text", "markdown", "json", "pdf"
MEDIA_TYPES = {
    "text/html": HTML, "application/xhtml+xml": HTML,
    "text/plain": TEXT,
    "text/markdown": MARKDOWN, "text/x-markdown": MARKDOWN,
    "application/json": JSON, "text/json": JSON,
    "application/pdf": PDF, "application/x-pdf": PDF,
}
_GENERIC = ("", "application/octet-stream", "binary/octet-stream")
_CHARSET = re.compile(r"charset\s*=\s*\"?([A-Za-z0-9._:-]{1,40})", re.I)
_TITLE = re.compile(rb"<title[^>]*>(.{0,600}?)</title", re.I | re.S)
MAX_LINKS = 100  # per page, the first ones in document order
MAX_LINK_CHARS = 2048
_HREF_DROPPED = re.compile(r"[\t\n\r]")  # what a browser removes from a URL before parsing it


@dataclass(frozen=True, slots=True)
class Extracted:
    title: str | None
    text: str
    links: tuple[str, ...] = ()  # absolute http(s) URLs, deduplicated (HTML only)


class Unreadable(Exception):
    """The body is of a supported type but nothing readable came out of it."""


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def may_read(content_type: str | None) -> bool:
    """Whether a body with this Content-Type can be one the fetcher reads (decided before reading)."""
    mt = media_type(content_type)
    return mt in MEDIA_TYPES or mt.endswith("+json") or mt in _GENERIC


def kind_of(content_type: str | None, head: bytes) -> str | None:
    """The kind of document, from the Content-Type or (when absent or generic) the first bytes;
    None for anything the fetcher does not read (images, archives, video, ...)."""
    mt = media_type(content_type)
    if mt in MEDIA_TYPES:
        return MEDIA_TYPES[mt]
    if mt.endswith("+json"):
        return JSON
    if mt in _GENERIC:
        start = head.lstrip()[:512].lower()
        if start.startswith(b"%pdf-"):
            return PDF
        if start.startswith((b"<!doctype html", b"<html")) or b"<html" in start:
            return HTML
    return None


def charset_of(content_type: str | None) -> str | None:
    m = _CHARSET.search(content_type or "")
    if not m:
        return None
    try:
        return codecs.lookup(m.group(1)).name
    except LookupError:
        return None


def decode(body: bytes, charset: str | None) -> str:
    if charset:
        return body.decode(charset, errors="replace")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body.decode("cp1252", errors="replace")


def extract(kind: str, body: bytes, content_type: str | None, url: str, max_chars: int) -> Extracted:
    """Blocking: call it off the event loop."""
    if kind == HTML:
        return _html(body, charset_of(content_type), url)
    if kind == PDF:
        return _pdf(body, max_chars)
    return Extracted(None, decode(body, charset_of(content_type)))


def _html(body: bytes, charset: str | None, url: str) -> Extracted:
    import trafilatura  # ~0.25 s to import: only when a page is first read

    page: str | bytes = body.decode(charset, errors="replace") if charset else body
    # No extensive date search: it runs dateparser over ~400 locales, compiling their patterns on first
    # use (about 2 s for the first page in a language, tens of ms a page after), for a date the result
    # does not carry (bench/README.md, "Grounding").
    doc = trafilatura.bare_extraction(page, url=url, with_metadata=True, include_comments=False,
                                      include_tables=True, include_images=False, include_links=False,
                                      date_extraction_params={"extensive_search": False, "original_date": True})
    title = doc.title if doc is not None else None
    text = doc.text if doc is not None else None
    if not text:
        # Too little for an article (a short page): all its visible text, still without scripts.
        text = trafilatura.html2txt(page)
    if not title:
        m = _TITLE.search(body)
        title = decode(m.group(1), charset).strip() if m else None
    return Extracted(title or None, text or "", links_of(page, url))


def links_of(page: str | bytes, base_url: str) -> tuple[str, ...]:
    """The page's links in document order: every `<a>` and `<area>` href resolved against the page's
    `<base href>` (itself resolved against `base_url`, the URL the page came from) or `base_url`,
    kept when it is an http(s) URL the fetcher could parse (no credentials, at most MAX_LINK_CHARS),
    in its normalized spelling without the fragment; each URL once, at most MAX_LINKS. Never raises:
    a page lxml cannot parse has no links."""
    from trafilatura.utils import load_html

    try:
        tree = load_html(page)
        if tree is None:
            return ()
        base = base_url
        for element in tree.iter("base"):
            href = element.get("href")
            if href:
                joined = absolute_url(base_url, href)
                if joined is not None:
                    base = joined
                break
        seen: set[str] = set()
        links: list[str] = []
        for element in tree.iter("a", "area"):
            href = element.get("href")
            if not href or href.lstrip().startswith("#"):  # a place on this page
                continue
            url = absolute_url(base, href)
            if url is not None and url not in seen:
                seen.add(url)
                links.append(url)
                if len(links) >= MAX_LINKS:
                    break
        return tuple(links)
    except Exception as e:  # the links are an extra: whatever breaks here must not cost the page its text
        log.info("link extraction failed: %s", type(e).__name__)
        return ()


def absolute_url(base: str, href: str, max_chars: int = MAX_LINK_CHARS) -> str | None:
    """An href as an absolute http(s) URL without its fragment, in the fetcher's spelling, or None
    (javascript:, data:, mailto:, credentials, a host that is no host, longer than max_chars)."""
    raw = _HREF_DROPPED.sub("", href.strip()).replace(" ", "%20")
    if not raw or len(raw) > max_chars:
        return None
    try:
        joined = urljoin(base, raw) if base else raw
    except ValueError:
        return None
    target = parse(joined.split("#", 1)[0], max_chars=max_chars)
    if not isinstance(target, Target) or target.userinfo:
        return None
    return target.url


def _pdf(body: bytes, max_chars: int) -> Extracted:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(body))
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("the PDF is encrypted")
        meta = reader.metadata
        title = str(meta.title) if meta is not None and meta.title else None
        parts: list[str] = []
        total = 0
        for page in reader.pages:
            text = page.extract_text() or ""
            parts.append(text)
            total += len(text)
            if total > max_chars:  # the rest would be cut anyway
                break
    except Unreadable:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError,
            NotImplementedError, OSError) as e:
        log.info("pdf extraction failed: %s", type(e).__name__)
        raise Unreadable("the PDF could not be read") from None
    return Extracted(title, "\n\n".join(p.strip() for p in parts if p.strip()))
