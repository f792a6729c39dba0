"""The metrics that explain a search, in one process and summed over `searchhub serve --workers 2`."""

from __future__ import annotations

import time

import httpx
import openai
from prometheus_client.parser import text_string_to_metric_families

from .fakes.search_providers import Reply
from .helpers import base_config, searxng_engine, serper_engine
from .test_hardening import serve  # noqa: F401 (the fixture: `searchhub serve` as a subprocess)


def samples(url: str) -> dict[tuple[str, tuple], float]:
    text = httpx.get(url + "/metrics", timeout=10).text
    out: dict[tuple[str, tuple], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(all_samples: dict, name: str, **labels) -> float:
    """The sum of the samples of name whose labels include labels."""
    want = set(labels.items())
    return sum(v for (n, ls), v in all_samples.items() if n == name and want <= set(ls))


def search_then_answer(body: dict) -> dict:
    if body["messages"][-1]["role"] == "tool":
        return {"content": "Rust 1.91.0 is out [1]."}
    return {"tool_calls": [{"name": "web_search", "arguments": {"query": "latest rust release"}}]}


def search_cfg(model_url: str, fakes) -> dict:
    cfg = base_config(model_url)
    cfg["webSearch"] = {"engines": [searxng_engine(fakes, default=True)], "cacheTtlMs": 0}
    return cfg


def test_a_search_shows_in_the_metrics(gateway, fake_model, search_fakes) -> None:
    gw = gateway(search_cfg(fake_model.url, search_fakes))
    before = samples(gw.url)
    fake_model.default = search_then_answer
    openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0).chat.completions.create(
        model="default", messages=[{"role": "user", "content": "search the web for the latest Rust release"}])
    after = samples(gw.url)

    def delta(name: str, **labels) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("searchhub_loop_rounds_count") == 1 and delta("searchhub_loop_rounds_sum") == 1
    assert delta("searchhub_loop_rounds_bucket", le="0.0") == 0 and delta("searchhub_loop_rounds_bucket", le="1.0") == 1
    assert delta("searchhub_tool_calls_per_request_sum") == 1
    assert delta("searchhub_engine_selections_total", engine="searxng", source="default") == 1
    assert delta("searchhub_search_mode_total", mode="tool") == 1
    assert delta("searchhub_client_requests_total", client="openai-sdk") == 1
    assert delta("web_search_calls_total", provider="searxng", outcome="ok") == 1
    # Declared for the features that fill them, exported from the start.
    text = httpx.get(gw.url + "/metrics").text
    for name in ("searchhub_fetches_total", "searchhub_side_requests_skipped_total", "searchhub_estimated_usage_total",
                 "searchhub_search_cost_total"):
        assert f"# TYPE {name} counter" in text


def test_engine_selection_names_the_configured_engine_and_a_fallback(gateway, fake_model, search_fakes) -> None:
    """The model's engine id is resolved once, as configured whatever its case; when another engine
    answers after the chosen one failed, the selection is `fallback` under the engine that answered."""
    cfg = base_config(fake_model.url)
    cfg["webSearch"] = {"engines": [serper_engine(search_fakes, default=True), searxng_engine(search_fakes)],
                        "cacheTtlMs": 0, "fallback": True}
    gw = gateway(cfg)
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key="k", max_retries=0)

    def search_with(engine: str):
        def answer(body: dict) -> dict:
            if body["messages"][-1]["role"] == "tool":
                return {"content": "Rust 1.91.0 is out [1]."}
            return {"tool_calls": [{"name": "web_search", "arguments": {"query": "latest rust release",
                                                                        "engine": engine}}]}
        return answer

    def selections(engine_word: str) -> dict:
        before = samples(gw.url)
        fake_model.default = search_with(engine_word)
        client.chat.completions.create(model="default", messages=[{"role": "user", "content": "search rust news"}])
        after = samples(gw.url)
        return {(engine, source): value(after, "searchhub_engine_selections_total", engine=engine, source=source)
                - value(before, "searchhub_engine_selections_total", engine=engine, source=source)
                for engine in ("serper", "searxng", "SEARXNG", "Serper") for source in ("model", "fallback")}

    found = selections("SEARXNG")
    assert found[("searxng", "model")] == 1 and sum(found.values()) == 1
    search_fakes.script("serper", Reply(status=500, body={"message": "boom"}))
    found = selections("Serper")
    assert found[("searxng", "fallback")] == 1 and sum(found.values()) == 1
    assert len(search_fakes.calls("serper")) == 1


def test_known_series_are_exported_at_zero_from_the_start(serve, fake_model, search_fakes) -> None:  # noqa: F811
    """The fetch, side-request and search-mode series whose labels the code enumerates are listed at 0
    before the first request, in one process and summed over workers, so a dashboard's rate() has them."""
    from hub.fetcher import ERROR_CODES
    from hub.observability.trace import _FAMILIES

    expected = [("searchhub_fetches_total", {"outcome": o}) for o in ("ok", *ERROR_CODES)]
    expected += [("searchhub_side_requests_skipped_total", {"client": c}) for c in (*(n for n, _ in _FAMILIES), "other")]
    expected += [("searchhub_search_mode_total", {"mode": m}) for m in ("tool", "presearch")]
    expected += [("searchhub_estimated_usage_total", {})]
    for args in ((), ("--workers", "2")):
        gw = serve(search_cfg(fake_model.url, search_fakes), *args)
        found = samples(gw.url)  # the first request this gateway gets
        for name, labels in expected:
            assert found.get((name, tuple(sorted(labels.items())))) == 0, (args, name, labels)


def cost_series(url: str) -> dict[tuple[str, str], float]:
    """searchhub_search_cost_total by (key, engine), as /metrics lists it."""
    return {(dict(ls)["key"], dict(ls)["engine"]): v for (n, ls), v in samples(url).items()
            if n == "searchhub_search_cost_total"}


def test_search_cost_series_of_the_config_are_exported_at_zero(gateway, fake_model, search_fakes) -> None:
    """Every configured key name with every priced engine is listed at 0 from the start (a dashboard's
    rate() has it before the first charged search), and so is what a reload adds. The names are this
    test's own: the registry is shared by every gateway this process started."""
    cfg = search_cfg(fake_model.url, search_fakes)
    cfg["server"]["apiKeys"] = [{"key": "sk-cost-watch-one-4f1a", "name": "cost-watch-one"}]
    cfg["webSearch"]["engines"] = [searxng_engine(search_fakes, id="cost-priced-one", default=True, costPerCall=0.004),
                                   searxng_engine(search_fakes, id="cost-unpriced")]
    gw = gateway(cfg)
    found = cost_series(gw.url)  # the first request this gateway gets
    assert found[("cost-watch-one", "cost-priced-one")] == 0
    assert not any(e == "cost-unpriced" for _, e in found)  # no price, never a cost

    cfg["server"]["apiKeys"].append({"key": "sk-cost-watch-two-9b2c", "name": "cost-watch-two"})
    cfg["webSearch"]["engines"].append(searxng_engine(search_fakes, id="cost-priced-two", costPerCall=0.002))
    gw.write_config(cfg)
    want = {(k, e) for k in ("cost-watch-one", "cost-watch-two") for e in ("cost-priced-one", "cost-priced-two")}
    deadline = time.monotonic() + 10
    while not want <= set(found := cost_series(gw.url)):
        assert time.monotonic() < deadline, f"after the reload: {sorted(found)}"
        time.sleep(0.05)
    assert all(found[s] == 0 for s in want)

    keyless = search_cfg(fake_model.url, search_fakes)  # a gateway without keys charges 'anonymous'
    keyless["webSearch"]["engines"] = [searxng_engine(search_fakes, id="cost-priced-keyless", default=True,
                                                       costPerCall=0.001)]
    assert cost_series(gateway(keyless, name="keyless.json").url)[("anonymous", "cost-priced-keyless")] == 0


def test_workers_export_summed_totals(serve, fake_model, search_fakes) -> None:  # noqa: F811
    gw = serve(search_cfg(fake_model.url, search_fakes), "--workers", "2")
    fake_model.default = search_then_answer
    pids: set[int] = set()
    n = 0
    deadline = time.monotonic() + 30
    while len(pids) < 2 or n < 12:
        assert time.monotonic() < deadline, f"only workers {pids} answered"
        with httpx.Client(timeout=10) as c:  # a new connection each time: the kernel picks a worker
            r = c.post(gw.url + "/v1/chat/completions", json={
                "model": "default", "messages": [{"role": "user", "content": "search the web for rust news"}]})
            assert r.status_code == 200, r.text
            n += 1
        with httpx.Client(timeout=10) as c:
            pids.add(c.get(gw.url + "/health").json()["pid"])
    with httpx.Client(timeout=10) as c:  # the last request, scraped at once: it counts whichever worker answers
        assert c.post(gw.url + "/v1/chat/completions", json={
            "model": "default", "messages": [{"role": "user", "content": "search the web for rust news"}]}).status_code == 200
        n += 1
    for _ in range(8):  # whichever worker answers the scrape, the totals are the whole process group's
        with httpx.Client(timeout=10) as c:
            s = {}
            for family in text_string_to_metric_families(c.get(gw.url + "/metrics").text):
                for x in family.samples:
                    s[(x.name, tuple(sorted(x.labels.items())))] = x.value
        assert value(s, "searchhub_requests_total", endpoint="completions", status="200") == n
        assert value(s, "searchhub_loop_rounds_count") == n
        assert value(s, "web_search_calls_total", outcome="ok") == n
        assert value(s, "searchhub_engine_selections_total", source="default") == n
        assert value(s, "searchhub_upstream_duration_seconds_count", outcome="ok") == 2 * n


def test_the_dashboard_queries_only_metrics_we_export(gateway, fake_model) -> None:
    import json
    import re
    from pathlib import Path

    gw = gateway(base_config(fake_model.url))
    exported: set[str] = set()
    for family in text_string_to_metric_families(httpx.get(gw.url + "/metrics").text):
        exported.add(family.name)
        if family.type == "counter":
            exported.add(family.name + "_total")
        if family.type == "histogram":
            exported.update(family.name + s for s in ("_bucket", "_sum", "_count"))
    dashboard = json.loads((Path(__file__).resolve().parent.parent / "docs" / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert len(exprs) >= 15
    used = {m for e in exprs for m in re.findall(r"\b((?:searchhub|web_search)_[a-z_]+)\b", e)}
    assert used and used <= exported, used - exported


def test_made_up_paths_add_no_series(gateway, fake_model) -> None:
    """A scanner's paths under the API prefixes are counted as endpoint "other", whatever they are;
    declared endpoints keep their names, a path parameter's as "<name>/{id}". (The registry is the
    process's: other tests' series may be there too, so this counts what its own requests add.)"""
    from hub.protocols.registry import PROTOCOLS
    from routes.app import EndpointNames

    def scrape(c: httpx.Client) -> dict:
        return {(x.name, tuple(sorted(x.labels.items()))): x.value
                for f in text_string_to_metric_families(c.get("/metrics").text) for x in f.samples
                if x.name == "searchhub_requests_total"}

    gw = gateway(base_config(fake_model.url))
    with httpx.Client(base_url=gw.url, timeout=10) as c:
        before = scrape(c)
        for i in range(40):
            assert c.post(f"/v1/scan-{i}", json={}).status_code == 404
            assert c.get(f"/api/probe{i}/x").status_code == 404
            assert c.get(f"/v1/responses/resp_{i}/x").status_code == 404  # two segments: not the endpoint
        assert c.get("/v1/responses/resp_missing").status_code == 404
        assert c.post("/v1/chat/completions", json={"model": "default",
                                                    "messages": [{"role": "user", "content": "hi"}]}).status_code == 200
        after = scrape(c)
    # the endpoints its own requests counted on (another test's throwaway protocol may have series too)
    names = {dict(labels)["endpoint"] for key, labels in after if after[(key, labels)] != before.get((key, labels))}
    declared = set(EndpointNames(PROTOCOLS).exact.values()) | {"responses/{id}", "other"}
    assert names <= declared, names - declared
    assert value(after, "searchhub_requests_total", endpoint="other", status="404") - \
        value(before, "searchhub_requests_total", endpoint="other", status="404") == 120
    assert value(after, "searchhub_requests_total", endpoint="responses/{id}", status="404") - \
        value(before, "searchhub_requests_total", endpoint="responses/{id}", status="404") == 1
    assert value(after, "searchhub_requests_total", endpoint="completions", status="200") - \
        value(before, "searchhub_requests_total", endpoint="completions", status="200") == 1


def test_declared_paths_are_named_as_before() -> None:
    from hub.protocols.registry import PROTOCOLS
    from routes.app import EndpointNames

    names = EndpointNames(PROTOCOLS)
    assert [names(p) for p in ("/v1/chat/completions", "/v1/responses", "/v1/responses/resp_1", "/v1/messages",
                               "/anthropic/v1/messages", "/v1/messages/count_tokens", "/anthropic/v1/models",
                               "/v1/models", "/v1/search", "/v1/search/open-webui", "/v1/alpha/search",
                               "/alpha/search", "/api/web_search", "/api/web_fetch", "/mcp")] == [
        "completions", "responses", "responses/{id}", "messages", "messages", "count_tokens", "models",
        "models", "search", "open-webui", "alpha/search", "alpha/search", "api/web_search", "api/web_fetch", "mcp"]
    assert {names(p) for p in ("/v1/responses/", "/v1/responses/a/b", "/v1/nothing", "/api/", "/anthropic/x")} == {"other"}
