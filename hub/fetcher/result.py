"""What a fetch returns: the page's readable text, or a structured error whose code is one of the
error codes of Anthropic's web_fetch tool result, so every protocol can render it without a table."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

# error_code values, spelled as web_fetch_tool_result_error spells them.
INVALID_TOOL_INPUT = "invalid_tool_input"
URL_TOO_LONG = "url_too_long"
URL_NOT_ALLOWED = "url_not_allowed"
URL_NOT_IN_PRIOR_CONTEXT = "url_not_in_prior_context"
URL_NOT_ACCESSIBLE = "url_not_accessible"
UNSUPPORTED_CONTENT_TYPE = "unsupported_content_type"
TOO_MANY_REQUESTS = "too_many_requests"
MAX_USES_EXCEEDED = "max_uses_exceeded"
UNAVAILABLE = "unavailable"

ERROR_CODES = (
    INVALID_TOOL_INPUT, URL_TOO_LONG, URL_NOT_ALLOWED, URL_NOT_IN_PRIOR_CONTEXT, URL_NOT_ACCESSIBLE,
    UNSUPPORTED_CONTENT_TYPE, TOO_MANY_REQUESTS, MAX_USES_EXCEEDED, UNAVAILABLE,
)


@dataclass(frozen=True, slots=True)
class Refusal:
    """A URL the policy will not fetch: the error code for the client, a metrics reason (a fixed
    word, never request text), and a message a model can act on."""

    code: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class FetchResult:
    url: str
    final_url: str = ""
    title: str | None = None
    text: str = ""
    retrieved_at: str = ""
    truncated: bool = False
    media_type: str = "text/plain"  # of the fetched body: text/html, application/pdf, ...
    error: str | None = None
    error_code: str | None = None
    cached: bool = False
    links: tuple[str, ...] = ()  # an HTML page's absolute http(s) links (hub/fetcher/extract.py links_of)

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_payload(self) -> dict:
        if self.error is not None:
            return {"url": self.url, "error": self.error, "error_code": self.error_code}
        return {
            "url": self.url, "final_url": self.final_url, "title": self.title, "text": self.text,
            "retrieved_at": self.retrieved_at, "truncated": self.truncated,
        }


def failure(url: str, message: str, code: str = UNAVAILABLE) -> FetchResult:
    return FetchResult(url=url, error=message, error_code=code)


def refused(url: str, refusal: Refusal) -> FetchResult:
    return FetchResult(url=url, error=refusal.message, error_code=refusal.code)


def now_iso() -> str:
    """ISO 8601 in UTC with a Z, to the second: the shape of web_fetch_result.retrieved_at."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
