"""Web search: one engine interface, one normalized result, one service that runs it."""

from .base import Hit, SearchEngine, SearchRequest, SearchResult
from .service import SearchService

__all__ = ["Hit", "SearchEngine", "SearchRequest", "SearchResult", "SearchService"]
