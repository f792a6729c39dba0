"""The typed config: what `hub/config/loader.py` builds from engines.json, and what the rest of the gateway
reads. Plain values with no loading logic, so any module (engines included) can import them without
importing the loader."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..config.keys import ApiKey
from ..config.proxy import USERINFO, mask_proxy
from ..config.quirks import COMMERCIAL_QUIRKS, Quirks
from ..config.side_requests import SideConfig

# The provider types that are hosted APIs. The self-hosted ones are the backend families, one module
# each in hub/backends/families/, passed to the loader (hub/config/plugins.py).
COMMERCIAL_TYPES = frozenset({"openai", "anthropic", "gemini", "glm", "dashscope", "moonshot", "perplexity"})
ROUTE_CLASSES = ("longcontext", "thinking", "background")
# A stream's first content within this (providers.X.firstTokenTimeoutMs when unset, never above
# timeoutMs; docs/configuration.md says why): a self-hosted server reads the whole prompt before its
# first token, a commercial API streams within seconds.
FIRST_TOKEN_TIMEOUT_MS = {"self_hosted": 300_000, "commercial": 120_000}
SEARCH_ROUTE = "web_search"


@dataclass(frozen=True, slots=True)
class Provider:
    id: str
    type: str
    base_url: str
    api_key: str | None = field(repr=False)
    # the file's headers, plus the Basic authorization made of credentials its baseURL was written
    # with (hub/config/loader.py takes them out of base_url: aiohttp refuses them beside an Authorization)
    headers: dict[str, str] = field(repr=False)
    timeout_s: float
    connect_timeout_s: float
    self_hosted: bool
    max_concurrency: int | None
    proxy: str | None = field(repr=False)  # None: the environment's; "direct": none
    quirks: Quirks = COMMERCIAL_QUIRKS
    base_url_env: tuple[str, ...] = ()  # the variables its baseURL was written with (`${VAR}`, `${VAR:-default}`)
    first_token_timeout_s: float | None = None  # a streamed attempt's first content within this; None: no deadline

    def masked(self) -> dict:
        return {
            "type": self.type,
            "baseURL": mask_url(self.base_url),
            "apiKey": mask(self.api_key),
            "headers": {k: "****" for k in self.headers},
            "selfHosted": self.self_hosted,
            **({"proxy": mask_proxy(self.proxy)} if self.proxy else {}),
        }


@dataclass(frozen=True, slots=True)
class Target:
    key: str  # "provider.model", as written in engines.json
    provider: Provider
    model: str


@dataclass(frozen=True, slots=True)
class Pool:
    id: str
    priority: int
    targets: tuple[Target, ...]


@dataclass(frozen=True, slots=True)
class EngineConfig:
    id: str
    description: str
    default: bool
    google: bool
    provider_key: str | None = None  # LLM search backend reached via the web_search route
    type: str | None = None  # API provider type
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    max_results: int | None = None
    timeout_s: float | None = None
    options: dict = field(default_factory=dict)
    proxy: str | None = field(default=None, repr=False)  # None: the environment's; "direct": none
    # sent with every request to the service: the Basic authorization made of credentials its baseURL
    # was written with (hub/config/loader.py takes them out of base_url)
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    members: tuple[str, ...] = ()  # a multi engine's engines
    baidu: bool = False  # Baidu-backed (what `百度一下` can be set to prefer)
    cost_per_call: float = 0.0
    cost_per_input_token: float = 0.0  # model engines, from the usage they report
    cost_per_output_token: float = 0.0


@dataclass(frozen=True, slots=True)
class ReadPages:
    """webSearch.readPages: after a search, read the top result pages and give the model the passages
    that answer instead of the engines' teasers (hub/fetcher/reading.py)."""

    enabled: bool = True
    top: int = 3  # pages read per search
    timeout_s: float = 4.0  # per page, from the moment the search answered
    max_chars: int = 2000  # passage characters per page

    def sized(self, context_size: str | None) -> ReadPages:
        """A request's `search_context_size`: low = snippets only, medium = as configured, high = 5
        pages with more characters each."""
        if context_size == "low":
            return ReadPages(False, self.top, self.timeout_s, self.max_chars)
        if context_size == "high" and self.enabled:
            return ReadPages(True, max(self.top, 5), self.timeout_s, max(self.max_chars, 3000))
        return self


@dataclass(frozen=True, slots=True)
class Limits:
    enabled: bool
    inject_policy: str
    max_tool_iterations: int
    loop_wall_clock_s: float
    max_total_result_bytes: int
    max_consecutive_errors: int
    mode: str = "tool"  # tool | presearch | hybrid
    read_pages: ReadPages = ReadPages()


@dataclass(frozen=True, slots=True)
class WebSearchConfig:
    enabled: bool
    engines: tuple[EngineConfig, ...]
    tool_name: str
    limits: Limits
    per_backend: dict[str, Limits]
    result_char_cap: int
    max_results: int
    timeout_s: float
    cache_ttl_s: float
    chain_ttl_s: float
    fallback: bool
    exec_summary: str
    keepalive_s: float
    baidu_preference: str  # what `百度一下` narrows the engines to: "google" or "baidu"
    side_requests: SideConfig = field(default_factory=SideConfig)

    def limits_for(self, provider_id: str) -> Limits:
        return self.per_backend.get(provider_id, self.limits)

    @property
    def default_engine(self) -> EngineConfig | None:
        for e in self.engines:
            if e.default:
                return e
        return self.engines[0] if len(self.engines) == 1 else None


@dataclass(frozen=True, slots=True)
class FetchOffer:
    """When the web_fetch tool is offered to a backend's models, and how often one turn may call it."""

    enabled: bool = True
    inject_policy: str = "always"  # always: beside every web_search; hosted: only when a client's hosted tool asks
    max_fetches_per_turn: int = 3


@dataclass(frozen=True, slots=True)
class WebFetchConfig:
    """The webFetch section: the tool's offer (per backend) and the fetcher's safety policy and limits
    (hub/fetcher/)."""

    offer: FetchOffer = FetchOffer()
    per_backend: dict[str, FetchOffer] = field(default_factory=dict)
    allow_private: bool = False
    allow_hosts: tuple[str, ...] = ()
    allow_ports: tuple[int, ...] = (80, 443)
    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()
    require_prior_context: bool = True
    max_bytes: int = 5 * 1024 * 1024
    max_chars: int = 50_000
    timeout_s: float = 15.0
    connect_timeout_s: float = 5.0
    max_redirects: int = 5
    cache_ttl_s: float = 900.0

    @property
    def enabled(self) -> bool:
        """Offered to some backend at all (else the tool is not built)."""
        return self.offer.enabled or any(o.enabled for o in self.per_backend.values())

    def offer_for(self, provider_id: str) -> FetchOffer:
        return self.per_backend.get(provider_id, self.offer)


@dataclass(frozen=True, slots=True)
class ServerConfig:
    host: str
    port: int
    api_keys: tuple[ApiKey, ...] = field(repr=False)
    admin_keys: tuple[ApiKey, ...] = field(repr=False)
    max_body_bytes: int
    log_level: str
    reload_interval_s: float
    shutdown_grace_s: float


@dataclass(frozen=True, slots=True)
class RouterConfig:
    routes: dict[str, tuple[Pool, ...]]
    cooldown_s: float
    retries: int
    long_context_threshold: int
    background_patterns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TraceConfig:
    enabled: bool = True
    ring_size: int = 2000
    sample_rate: float = 1.0  # share of plain requests kept; searched or failed ones are always kept
    bodies: bool = False
    store_ttl_s: float = 3600.0  # 0: traces stay in the process
    flush_interval_s: float = 1.0


@dataclass(frozen=True, slots=True)
class TelemetryConfig:
    otlp_endpoint: str | None = None
    service_name: str = "searchhub"
    headers: dict[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class Config:
    path: str | None
    server: ServerConfig
    providers: dict[str, Provider]
    router: RouterConfig
    web_search: WebSearchConfig
    model_aliases: dict[str, Any]
    state: dict
    responses_ttl_s: float
    raw_hash: str = ""
    web_fetch: WebFetchConfig = field(default_factory=WebFetchConfig)
    # tools.<name>: a server tool's own settings, as the type its module declares (ToolKind.settings)
    tools: Mapping[str, Any] = field(default_factory=dict)
    trace: TraceConfig = field(default_factory=TraceConfig)
    telemetry: TelemetryConfig = field(default_factory=TelemetryConfig)

    def target(self, key: str) -> Target | None:
        """Resolve a pinned 'provider.model' (split at the first '.')."""
        provider_id, sep, model = key.partition(".")
        provider = self.providers.get(provider_id)
        if not sep or not model or provider is None:
            return None
        return Target(key, provider, model)

    def routing_table(self) -> dict:
        """The resolved routing, secrets masked: what `searchhub check` prints."""
        return {
            "providers": {pid: p.masked() for pid, p in self.providers.items()},
            "routes": {
                name: [
                    {"id": p.id, "priority": p.priority, "targets": [t.key for t in p.targets]}
                    for p in pools
                ]
                for name, pools in self.router.routes.items()
            },
            "webSearch": {
                "enabled": self.web_search.enabled,
                "injectPolicy": self.web_search.limits.inject_policy,
                "engines": [
                    {
                        "id": e.id,
                        "kind": "llm" if e.provider_key else e.type,
                        **({"providerKey": e.provider_key} if e.provider_key else {}),
                        **({"apiKey": mask(e.api_key)} if e.api_key else {}),
                        **({"headers": {k: "****" for k in e.headers}} if e.headers else {}),
                        **({"proxy": mask_proxy(e.proxy)} if e.proxy else {}),
                        **({"engines": list(e.members)} if e.members else {}),
                        "google": e.google,
                        "default": e.default,
                    }
                    for e in self.web_search.engines
                ],
            },
            "state": {k: (mask_url(v) if k == "url" else v) for k, v in self.state.items()},
        }


def mask(secret: str | None) -> str | None:
    if not secret:
        return secret
    return "****" if len(secret) < 12 else secret[:3] + "****" + secret[-2:]


# Up to the authority's last '@': a password written with a raw '@' is masked whole.
class StrippedURL(str):
    """A base URL whose credentials hub/config/loader.py took out (into a Basic authorization header). Its
    value, and every URL built from it, has no `user:pass@`; it carries only how mask_url shows it,
    as the operator wrote it with the credentials masked (`http://****@host/v1`)."""

    masked: str

    def __new__(cls, bare: str, written: str) -> StrippedURL:
        url = super().__new__(cls, bare)
        url.masked = mask_url(written)
        return url

    def __reduce__(self):
        return _stripped, (str(self), self.masked)


def _stripped(bare: str, masked: str) -> StrippedURL:
    return StrippedURL(bare, masked)


def mask_url(url: str) -> str:
    """A URL as errors, logs, /health and commands show it: credentials (`user:pass@`) and a query
    string (which may carry a key) become ****."""
    url = getattr(url, "masked", None) or url
    url = USERINFO.sub("****@", url)
    q = url.find("?")
    return url if q < 0 else url[: q + 1] + "****"
