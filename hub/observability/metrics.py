"""Prometheus metrics. Labels never carry secrets or model-chosen text.

With `searchhub serve --workers N`, the supervisor sets PROMETHEUS_MULTIPROC_DIR before the workers
start (hub/serve.py): every worker then writes its values to files there, and `/metrics`, whichever
worker answers, adds them up (prometheus-client's multiprocess mode).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import multiprocess as _multiprocess

from ..config.keys import ANONYMOUS

if TYPE_CHECKING:
    from ..config.settings import Config

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

REGISTRY = CollectorRegistry(auto_describe=True)

REQUESTS = Counter(
    "searchhub_requests_total", "Client requests by endpoint and status.", ["endpoint", "status"], registry=REGISTRY
)
REQUEST_LATENCY = Histogram(
    "searchhub_request_duration_seconds", "Time to the complete response (streams: to the last byte).",
    ["endpoint"], registry=REGISTRY,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)
UPSTREAM_LATENCY = Histogram(
    "searchhub_upstream_duration_seconds", "Upstream call latency (streams: to the first byte).",
    ["provider", "outcome"], registry=REGISTRY,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
WEB_SEARCH_CALLS = Counter(
    "web_search_calls_total", "Executed web_search tool calls.", ["provider", "outcome"], registry=REGISTRY
)
WEB_SEARCH_DURATION = Histogram(
    "web_search_call_duration_seconds", "Search execution latency.", ["provider", "outcome"], registry=REGISTRY,
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 30),
)
WEB_SEARCH_ITERATION_CAP = Counter(
    "web_search_iteration_cap_total", "Loops ended by a guard.", ["component", "guard"], registry=REGISTRY
)
WEB_SEARCH_INJECTIONS = Counter(
    "web_search_injections_total", "Requests where the web_search tool was injected.", ["backend_type"],
    registry=REGISTRY,
)
WEB_SEARCH_CACHE = Counter(
    "web_search_cache_total", "Search cache lookups.", ["outcome"], registry=REGISTRY
)
WEB_FETCH_CALLS = Counter(
    "web_fetch_calls_total", "Executed web fetches, by outcome ('ok' or a web_fetch error code).", ["outcome"],
    registry=REGISTRY,
)
WEB_FETCH_DURATION = Histogram(
    "web_fetch_call_duration_seconds", "Fetch latency, extraction included.", ["outcome"], registry=REGISTRY,
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 30, 60),
)
PAGES_READ = Counter(
    "searchhub_pages_read_total", "Result pages read for passages after a search (webSearch.readPages), by "
    "outcome: ok, timeout, blocked, error, skipped, budget.", ["outcome"], registry=REGISTRY,
)
PAGE_READ_DURATION = Histogram(
    "searchhub_page_read_seconds", "Time from a search's answer until its pages' passages were ready.",
    registry=REGISTRY, buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16),
)
WEB_FETCH_BYTES = Counter(
    "web_fetch_bytes_total", "Response body bytes read from the network by fetches.", registry=REGISTRY
)
WEB_FETCH_BLOCKED = Counter(
    "web_fetch_blocked_total", "Fetches refused by policy, by reason (scheme, credentials, port, local, "
    "private, domain_blocked, not_in_context, ...).", ["reason"], registry=REGISTRY,
)
WEB_FETCH_CACHE = Counter(
    "web_fetch_cache_total", "Fetch cache lookups.", ["outcome"], registry=REGISTRY
)
SEARCH_COST = Counter(
    "searchhub_search_cost_total", "Search cost by the engines' configured prices, by API key name and engine.",
    ["key", "engine"], registry=REGISTRY,
)
SEARCH_BUDGET_DENIALS = Counter(
    "searchhub_budget_denials_total", "Searches and fetches refused because a key's budget was spent.",
    ["key", "limit"], registry=REGISTRY,
)
INTENT_DECISIONS = Counter(
    "searchhub_intent_decisions_total", "Intent classifier decisions.", ["language", "rule", "decision"],
    registry=REGISTRY,
)
TEXT_TOOL_CALLS = Counter(
    "searchhub_text_tool_calls_total", "Tool calls recovered from text the backend wrote instead of tool_calls.",
    ["provider"], registry=REGISTRY,
)
CONFIG_RELOADS = Counter(
    "searchhub_config_reloads_total", "Config reload attempts.", ["outcome"], registry=REGISTRY
)
STATE_ERRORS = Counter(
    "searchhub_state_errors_total", "Shared-state store errors (the gateway degraded to local memory).",
    registry=REGISTRY,
)
STATE_DEGRADED = Gauge(
    "searchhub_state_degraded", "1 while the shared-state store is unreachable (any worker).", registry=REGISTRY,
    multiprocess_mode="livemax",
)
STATE_OUTAGES = Counter(  # not searchhub_state_degraded_total: the gauge above owns that name's family
    "searchhub_state_outages_total", "Times a process fell back to its own memory because the shared-state "
    "store was unreachable (hub/store/resilient.py).", registry=REGISTRY,
)
STATE_LOST_WRITES = Counter(
    "searchhub_state_lost_writes_total", "State writes (chains, stored responses, cache, counters, traces) kept "
    "only in one process's memory because the shared-state store was unreachable: other replicas never see them.",
    registry=REGISTRY,
)

# ---- what explains a search

LOOP_DEPTH = Histogram(
    "searchhub_loop_rounds", "Server-tool rounds per request that had the tool injected.", registry=REGISTRY,
    buckets=(0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20),
)
TOOL_CALLS_PER_REQUEST = Histogram(
    "searchhub_tool_calls_per_request", "Server-tool calls per request that had the tool injected.",
    registry=REGISTRY, buckets=(0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30),
)
ENGINE_SELECTIONS = Counter(
    "searchhub_engine_selections_total",
    "How each search's engine was chosen: model (named it), default, google / baidu (preferred-index "
    "narrowing), fallback (another engine answered after a failure).", ["engine", "source"], registry=REGISTRY,
)
FETCHES = Counter(
    "searchhub_fetches_total", "Page fetches the fetcher ran (web_fetch tool, MCP web_fetch), by outcome ('ok' or a "
    "web_fetch error code).", ["outcome"], registry=REGISTRY
)
SIDE_REQUESTS_SKIPPED = Counter(
    "searchhub_side_requests_skipped_total",
    "Client side requests (titles, summaries…) that got no search, by client family.", ["client"], registry=REGISTRY,
)
SEARCH_MODE = Counter(
    "searchhub_search_mode_total", "Requests that searched, by mode: tool (the model calls web_search) or "
    "presearch (the gateway searched before the first round).", ["mode"], registry=REGISTRY,
)
SEARCH_HITS_DROPPED = Counter(
    "searchhub_search_hits_dropped_total",
    "Hits dropped from an engine's answer as unusable, by engine and reason: url (no http(s) URL), encoding "
    "(a URL with bytes that are not UTF-8 or a lone surrogate).", ["engine", "reason"], registry=REGISTRY,
)
HIT_DROP_REASONS = ("url", "encoding")  # what hub/search/sanitize.py's bound counts a dropped hit as
ESTIMATED_USAGE = Counter(
    "searchhub_estimated_usage_total", "Responses whose token usage the gateway estimated.", registry=REGISTRY
)
CLIENT_REQUESTS = Counter(
    "searchhub_client_requests_total", "Model requests by client family (from the User-Agent).", ["client"],
    registry=REGISTRY,
)


def _known_label_sets() -> None:
    """Create the label sets the code enumerates, so /metrics lists them at 0 from the start (a labelled
    series is otherwise absent until its first increment, and rate() over it has nothing to start from).
    Search cost is labelled by configured key names and engine ids, which this module does not know:
    `config_series` creates those for each config a Runtime is built from (hub/runtime.py)."""
    from .trace import _FAMILIES

    for client in (*(name for name, _ in _FAMILIES), "other"):  # hub/observability/trace.py's client_family
        SIDE_REQUESTS_SKIPPED.labels(client)
    for mode in ("tool", "presearch"):  # hub/turn/pipeline.py: webSearch.mode hybrid counts as presearch
        SEARCH_MODE.labels(mode)


_known_label_sets()


def config_series(config: Config) -> None:
    """Create the series a config's labels enumerate, so /metrics lists them at 0 from the start and
    after a reload that adds a key or an engine: search cost for every configured key name (or
    `anonymous` on a gateway without keys: hub/access/keys.py) and every engine with a price (an engine
    without one never adds to it: hub/search/cost.py), and dropped hits for every engine and reason.
    Series of a key or engine a reload removed stay, as counters do."""
    keys = [k.name for k in config.server.api_keys] or [ANONYMOUS]
    engines = [e.id for e in config.web_search.engines
               if e.cost_per_call or e.cost_per_input_token or e.cost_per_output_token]
    for key in keys:
        for engine in engines:
            SEARCH_COST.labels(key, engine)
    for e in config.web_search.engines:
        for reason in HIT_DROP_REASONS:
            SEARCH_HITS_DROPPED.labels(e.id, reason)


_CHILDREN: dict[tuple, object] = {}


def child(metric, *labels: str):
    """`metric.labels(*labels)`, looked up once per label set: prometheus_client converts, checks
    and locks on every `labels` call (~2 µs), and a request touches several. Label values come
    from the config or fixed vocabularies; the cap is a seatbelt."""
    key = (id(metric), labels)
    c = _CHILDREN.get(key)
    if c is None:
        c = metric.labels(*labels)
        if len(_CHILDREN) < 4096:
            _CHILDREN[key] = c
    return c


def multiprocess() -> bool:
    return bool(os.environ.get(MULTIPROC_ENV))


def process_exit() -> None:
    """A worker stops: drop its live gauges from the sum (counters keep counting its past)."""
    if multiprocess():
        _multiprocess.mark_process_dead(os.getpid())


def render() -> bytes:
    if multiprocess():
        registry = CollectorRegistry()
        _multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry)
    return generate_latest(REGISTRY)
