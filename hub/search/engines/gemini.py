"""Google Gemini grounded on Google Search: `generateContent` with the google_search tool and no
other tool; groundingMetadata are the hits, the answer text the summary."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any, ClassVar

from ...config.engine_kinds import EngineKind
from ...config.settings import Target
from ..base import EngineError, Parsed, RawHit, SearchRequest, as_dict, as_list, first_str, recency_start
from ..engine import malformed
from ..locale import language_tag, location_hint
from ..model import ModelEngine

INSTRUCTION = (
    "Search the web with Google Search for the user's query and answer briefly from what you find. "
    "Do not answer from memory."
)
_SUFFIXES = ("/openai", "/v1beta", "/v1")


def api_root(base_url: str) -> str:
    """The provider's baseURL without an API-version suffix (an OpenAI-style '/v1beta/openai' too)."""
    root = base_url.rstrip("/")
    for suffix in _SUFFIXES:
        root = root.removesuffix(suffix)
    return root


def rfc3339(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class GeminiEngine(ModelEngine):
    PROVIDER_TYPE: ClassVar[str] = "gemini"  # the type of the provider its providerKey names
    KIND: ClassVar[EngineKind] = EngineKind(index="google")  # Google Search grounding

    @classmethod
    def build(cls, target: Target, req: SearchRequest, options: dict) -> tuple[str, dict[str, str], dict]:
        google_search: dict[str, Any] = {}
        start = recency_start(req.recency)
        if start is not None:
            google_search["timeRangeFilter"] = {"startTime": rfc3339(start), "endTime": rfc3339(datetime.now(UTC))}
        # google_search grounding has no location field: the model writes the search, so tell it;
        # the retrieval language follows the country.
        hint = [{"text": text}] if (text := location_hint(req.user_location)) else []
        body: dict[str, Any] = {
            "contents": [{"role": "user", "parts": [{"text": req.query}]}],
            "systemInstruction": {"parts": [{"text": INSTRUCTION}, *hint]},
            # Only the search tool: Gemini does not take google_search beside function declarations.
            "tools": [{"google_search": google_search}],
        }
        if (language := language_tag(req.country)) is not None:
            body["toolConfig"] = {"retrievalConfig": {"languageCode": language}}
        if isinstance(options.get("generationConfig"), dict):
            body["generationConfig"] = options["generationConfig"]
        p = target.provider
        model = target.model.removeprefix("models/")
        url = f"{api_root(p.base_url)}/v1beta/models/{model}:generateContent"
        headers = {"content-type": "application/json", "accept": "application/json",
                   "x-goog-api-key": p.api_key or "", **p.headers}
        return url, headers, body

    @staticmethod
    def parse(data: Any) -> Parsed:
        if not isinstance(data, dict):
            raise malformed("Gemini", "not a JSON object")
        candidates = data.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            reason = first_str(as_dict(data.get("promptFeedback")).get("blockReason"))
            raise EngineError(f"Gemini returned no answer{f' (blocked: {reason[:40]})' if reason else ''}")
        cand = as_dict(candidates[0])
        parts = as_list(as_dict(cand.get("content")).get("parts"))
        text = "".join(p["text"] for p in parts
                       if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought"))
        meta = as_dict(cand.get("groundingMetadata"))
        # A chunk's snippet: the answer sentences Google says it supports.
        support: dict[int, list[str]] = defaultdict(list)
        for s in as_list(meta.get("groundingSupports")):
            segment = first_str(as_dict(as_dict(s).get("segment")).get("text"))
            for i in as_list(as_dict(s).get("groundingChunkIndices")):
                if segment and isinstance(i, int) and not isinstance(i, bool) and segment not in support[i]:
                    support[i].append(segment)
        hits = []
        for i, chunk in enumerate(as_list(meta.get("groundingChunks"))):
            web = as_dict(as_dict(chunk).get("web"))
            title = first_str(web.get("title"))
            hits.append(RawHit(title, web.get("uri"), " ".join(support.get(i, ())), first_str(web.get("domain"), title)))
        queries = [q for q in as_list(meta.get("webSearchQueries")) if isinstance(q, str) and q.strip()]
        if queries:
            text += "\n\nGoogle searched for: " + "; ".join(queries)
        return Parsed(hits, text or None)
