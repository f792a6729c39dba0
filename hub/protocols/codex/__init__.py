"""Codex CLI's standalone web search (`POST /v1/alpha/search`, its `web.run` tool): the body decoded
(request.py), commands run on the caller's metered search and the direct fetcher (run.py), ref ids
kept per thread in the state store (refs.py), pages as numbered lines and links (pages.py), and the
plain text the model reads (render.py). Its endpoint is endpoints.py."""

from __future__ import annotations

from .request import Call, Malformed, decode
from .run import Parts, answer

__all__ = ["Call", "Malformed", "Parts", "answer", "decode"]
