"""Prometheus metrics (names listed in docs/deployment.md). Labels never carry secrets."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

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
CONFIG_RELOADS = Counter(
    "searchhub_config_reloads_total", "Config reload attempts.", ["outcome"], registry=REGISTRY
)
STATE_ERRORS = Counter(
    "searchhub_state_errors_total", "Shared-state store errors (the gateway degraded to local memory).",
    registry=REGISTRY,
)
STATE_DEGRADED = Gauge(
    "searchhub_state_degraded", "1 while the shared-state store is unreachable.", registry=REGISTRY
)


def render() -> bytes:
    return generate_latest(REGISTRY)
