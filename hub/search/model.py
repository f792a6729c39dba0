"""Search-capable models (docs/engines.md): the engine's providerKey is the preferred target
of the web_search route; the dispatcher fails over through the route's other targets with cooldowns,
and each target gets the request of ITS provider type (a gemini target the Gemini request)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from ..config.proxy import proxy_secrets
from ..config.settings import SEARCH_ROUTE, EngineConfig, Target
from ..routing.dispatch import AllTargetsFailed
from ..upstream.http import UpstreamError, post_json
from .base import TOO_MANY_REQUESTS, UNAVAILABLE, EngineError, Parsed, RawHit, SearchRequest
from .engine import Engine, EngineContext
from .fetch import status_error

_AUTH_HEADER = re.compile(r"auth|key|token|secret", re.I)
# Markdown links and bare URLs in an answer text (for models that return no structured sources).
_MD_LINK = re.compile(r"\[([^\[\]\n]{1,300})\]\((https?://(?:[^\s()<>]|\([^\s()<>]{0,200}\)){1,2048})\)")
_BARE_URL = re.compile(r"https?://[^\s<>\[\]\"'`]{1,2048}")

# (url, headers, body) -> the upstream's JSON answer; raises UpstreamError.
Post = Callable[[str, dict[str, str], dict], Awaitable[dict]]


def int_option(options: dict, name: str, default: int, upper: int) -> int:
    """A positive integer engine option, or its default when the value is anything else."""
    value = options.get(name, default)
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 < value <= upper
    return value if ok else default


def cited_links(text: Any) -> list[RawHit]:
    """The links an answer text names, in order: Markdown links with their text as the title, then
    bare URLs. For backends whose only sources are the URLs the model writes."""
    if not isinstance(text, str):
        return []
    hits = [RawHit(m.group(1), m.group(2), "") for m in _MD_LINK.finditer(text)]
    linked = {h.url for h in hits}
    for m in _BARE_URL.finditer(_MD_LINK.sub(" ", text)):
        url = m.group(0).rstrip(".,;:!?*_")
        while url.endswith(")") and url.count(")") > url.count("("):  # "(see https://x/y)."
            url = url[:-1].rstrip(".,;:!?*_")
        if url not in linked:
            linked.add(url)
            hits.append(RawHit(None, url, ""))
    return hits


class ModelEngine(Engine):
    """Subclasses describe one backend family's wire: build() the request, parse() the answer."""

    MAX_COUNT: ClassVar[int] = 50

    def __init__(self, config: EngineConfig, ctx: EngineContext) -> None:
        super().__init__(config, ctx)
        if ctx.router is None or ctx.dispatcher is None:
            raise ValueError(f"engine {config.id} needs the router and dispatcher")
        providers = [t.provider for pool in ctx.router.config.router.routes.get(SEARCH_ROUTE, ()) for t in pool.targets]
        self._secrets = tuple(dict.fromkeys(
            s for p in providers
            for s in (p.api_key, *(v for k, v in p.headers.items() if _AUTH_HEADER.search(k)), *proxy_secrets(p.proxy))
            if s
        ))

    @property
    def secrets(self) -> tuple[str, ...]:
        return self._secrets

    @classmethod
    def build(cls, target: Target, req: SearchRequest, options: dict) -> tuple[str, dict[str, str], dict]:
        """(url, headers, body) of the search request to this target."""
        raise NotImplementedError

    @staticmethod
    def parse(data: Any) -> Parsed:
        """The model's answer -> raw hits and the answer text as summary; EngineError if malformed."""
        raise NotImplementedError

    @classmethod
    async def exchange(cls, post: Post, target: Target, req: SearchRequest, options: dict) -> Parsed:
        """The whole conversation with one target: one request and its answer, unless the backend
        needs a round trip (Kimi's $web_search echo)."""
        url, headers, body = cls.build(target, req, options)
        return cls.parse(await post(url, headers, body))

    async def run(self, req: SearchRequest) -> Parsed:
        ctx = self.ctx
        assert ctx.router is not None and ctx.dispatcher is not None
        candidates = tuple(
            t for t in ctx.router.candidates(SEARCH_ROUTE, prefer=self.config.provider_key)
            if t.provider.type in ctx.backends
        )
        if not candidates:
            raise EngineError(f"no search-capable target in virtualrouter.routing.{SEARCH_ROUTE}")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        retries = ctx.router.config.router.retries
        options = self.config.options

        async def call(target: Target) -> Parsed:
            backend: type[ModelEngine] = ctx.backends[target.provider.type]
            used: list[tuple[int, int]] = []  # the tokens of every answer in this exchange, for its cost

            async def post(url: str, headers: dict[str, str], body: dict) -> dict:
                timeout = max(deadline - loop.time(), 0.05)
                try:
                    data = await post_json(ctx.client, target.provider, url, body, headers, retries=retries,
                                           timeout=timeout)
                except UpstreamError as e:
                    # The request is ours, not a client's: any target failure (a 4xx too, e.g. a
                    # revoked key) is a reason to try the next target.
                    e.retryable = True
                    if e.status is not None and e.body is not None:  # an HTTP error: say what it was
                        e.reason = status_error(e.status, e.body, self.secrets).message
                    raise
                if (tokens := token_usage(data)) is not None:
                    used.append(tokens)
                return data

            try:
                parsed = await backend.exchange(post, target, req, options)
            except EngineError as e:  # a malformed answer or a failed search: let the next target try
                raise UpstreamError(e.message, status=429 if e.code == TOO_MANY_REQUESTS else 502) from None
            if used:
                parsed = parsed._replace(usage=(sum(n for n, _ in used), sum(n for _, n in used)))
            return parsed

        try:
            parsed, _ = await ctx.dispatcher.run(SEARCH_ROUTE, candidates, call)
        except AllTargetsFailed as e:
            tried = "; ".join(f"{a.target}: {a.reason}" for a in e.attempts) or "no target was available"
            rate_limited = bool(e.attempts) and all(a.status == 429 for a in e.attempts)
            raise EngineError(f"no search backend answered ({tried})",
                              TOO_MANY_REQUESTS if rate_limited else UNAVAILABLE) from None
        return parsed


def token_usage(data: Any) -> tuple[int, int] | None:
    """(input, output) tokens from an OpenAI- or Anthropic-style `usage` or Gemini's `usageMetadata`."""
    if not isinstance(data, dict):
        return None
    for name, tin, tout in (("usage", "prompt_tokens", "completion_tokens"),
                            ("usage", "input_tokens", "output_tokens"),  # OpenAI Responses, Anthropic
                            ("usageMetadata", "promptTokenCount", "candidatesTokenCount")):
        u = data.get(name)
        if isinstance(u, dict):
            n_in, n_out = u.get(tin), u.get(tout)
            if isinstance(n_in, int) and isinstance(n_out, int) and n_in >= 0 and n_out >= 0:
                return n_in, n_out
    return None
