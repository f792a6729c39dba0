"""Property tests for the doors of search-as-a-service: any JSON body or MCP arguments get an answer in
shape (never a 500 or an exception), any reported usage reads as tokens or nothing, and budgets never
grant more than their limit however the calls from several replicas interleave."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hub.access.budget import Budget
from hub.config.keys import ApiKey
from hub.mcp.tools import TOOLS, ToolContext
from hub.search.metered import MeteredSearch
from hub.search.model import token_usage
from hub.store import MemoryStore

from .fakes.search_providers import config_with, search_service
from .helpers import base_config, hermetic, searxng_engine

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
FIELDS = ["query", "engine", "count", "recency", "domains", "allowed_domains", "blocked_domains", "user_location"]
BODIES = st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), JSON, max_size=6)
SLOW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SLOW
@given(body=BODIES)
def test_any_search_body_gets_a_result_or_a_shaped_error(gateway_once, body) -> None:
    r = httpx.post(gateway_once.url + "/v1/search", json=body, timeout=30)
    assert r.status_code in (200, 400, 502, 503), (r.status_code, r.text)
    doc = r.json()
    if r.status_code == 200:
        assert isinstance(doc["hits"], list) and isinstance(doc["cached"], bool)
    else:
        assert set(doc["error"]) >= {"message", "type", "code"} and doc["error"]["message"]


@pytest.fixture(scope="module")
def gateway_once(tmp_path_factory, _fake_model_server, _search_fakes_server):
    import json

    from routes.app import create_app

    from .fakes.server import ServerThread

    cfg = base_config(_fake_model_server.url)
    cfg["webSearch"] = {"engines": [searxng_engine(_search_fakes_server)], "cacheTtlMs": 0}
    path = tmp_path_factory.mktemp("props") / "engines.json"
    path.write_text(json.dumps(hermetic(cfg)))
    server = ServerThread(create_app(str(path))).start()
    yield server
    server.stop()


@SLOW
@given(arguments=st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), JSON, max_size=6))
def test_any_mcp_arguments_get_a_tool_result(search_fakes, arguments) -> None:
    cfg = config_with([searxng_engine(search_fakes)], cacheTtlMs=0)

    async def go():
        async with search_service(cfg) as service:
            ctx = ToolContext(MeteredSearch(service, Budget(MemoryStore()), None), service.engines(), None)
            return await TOOLS["web_search"].call(arguments, ctx)

    result = asyncio.run(go())
    assert result.content and result.content[0].text
    if result.is_error:
        assert result.structured_content["error"] == result.content[0].text
    else:
        assert isinstance(result.structured_content["hits"], list)


@given(data=JSON)
def test_token_usage_reads_tokens_or_nothing(data) -> None:
    usage = token_usage(data)
    assert usage is None or (len(usage) == 2 and all(isinstance(n, int) and n >= 0 for n in usage))


@settings(max_examples=50, deadline=None)
@given(limit=st.integers(0, 6), calls=st.lists(st.sampled_from([0, 1]), min_size=0, max_size=15))
def test_budget_never_grants_more_than_its_limit(limit, calls) -> None:
    """Two replicas (two Budget objects on one store) take searches concurrently, in any order."""
    store = MemoryStore()
    replicas = [Budget(store, clock=lambda: 1_800_000_000.0) for _ in range(2)]
    key = ApiKey(key="k", name="k", searches_per_day=limit)

    async def go():
        return await asyncio.gather(*(replicas[i].take_search(key) for i in calls))

    outcomes = asyncio.run(go())
    granted = sum(o is None for o in outcomes)
    assert granted == min(limit, len(calls))
    assert all(o.limit == "searchesPerDay" and o.retry_after >= 1 for o in outcomes if o is not None)
