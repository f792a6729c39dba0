"""`searchhub serve --log-format json`: the access line (one per request) carries its fields as JSON
keys of their own (hub/observability/logformat.py ACCESS_FIELDS), with the values of the request that was made:
a chat turn through the real gateway process whose model searches once (the fake SearXNG) and reads
one result page (the fake site), under a named API key whose secret never reaches the log."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from .helpers import ServeProcess, base_config
from .test_web_fetch_gateway import cite_the_page, config, fetch_first_hit, hits

ROOT = Path(__file__).resolve().parent.parent
SECRET = "sk-access-log-secret-5150"


def searching_config(fake_model, search_fakes, site) -> dict:
    cfg = config(fake_model.url, search_fakes, site)
    cfg["webSearch"]["injectPolicy"] = "always"
    cfg["webSearch"]["engines"][0]["costPerCall"] = 0.005
    cfg["server"]["apiKeys"] = [{"name": "ci-bot", "key": SECRET}]
    return cfg


def chat_turn(serve: ServeProcess, fake_model, search_fakes, site) -> None:
    search_fakes.script("searxng", hits(site))
    fake_model.script({"tool_calls": [{"name": "web_search", "arguments": {"query": "kestrel bridge"}}]},
                      fetch_first_hit, cite_the_page)
    r = httpx.post(serve.url + "/v1/chat/completions", timeout=30, headers={"authorization": f"Bearer {SECRET}"},
                   json={"model": "default", "messages": [{"role": "user", "content": "kestrel bridge news?"}]})
    assert r.status_code == 200, r.text
    assert "reopened in March" in r.json()["choices"][0]["message"]["content"]


def logged_turn(tmp_path: Path, fake_model, search_fakes, site, log_format: str) -> list[str]:
    """The gateway process's log lines around one searching chat turn."""
    serve = ServeProcess(tmp_path, searching_config(fake_model, search_fakes, site), log_format=log_format)
    try:
        serve.wait_for("Application startup complete")
        chat_turn(serve, fake_model, search_fakes, site)
        serve.wait_for("/v1/chat/completions 200")
    finally:
        lines = serve.stop()
    return lines


def test_json_access_line_has_its_fields_as_keys(tmp_path: Path, fake_model, search_fakes, site) -> None:
    lines = logged_turn(tmp_path, fake_model, search_fakes, site, "json")
    assert not any(SECRET in line for line in lines)
    log = [json.loads(line) for line in lines]
    access = [e for e in log if e["logger"] == "searchhub.http" and e.get("path") == "/v1/chat/completions"]
    assert len(access) == 1, log
    line = access[0]
    duration = line.pop("duration_ms")
    assert isinstance(duration, float) and duration > 0
    assert line["msg"].startswith(f"POST /v1/chat/completions 200 {duration:.1f} ms key=ci-bot searches=1 ")
    assert {k: v for k, v in line.items() if k not in ("ts", "msg", "request_id")} == {
        "level": "info", "logger": "searchhub.http", "method": "POST", "path": "/v1/chat/completions",
        "status": 200, "route": "default", "target": "local.m", "key": "ci-bot", "searches": 1, "fetches": 1,
        "search_cost": 0.005,
    }
    assert line["request_id"].startswith("req_") or line["request_id"]


def test_text_access_line_stays_the_human_line(tmp_path: Path, fake_model, search_fakes, site) -> None:
    lines = logged_turn(tmp_path, fake_model, search_fakes, site, "text")
    access = [line for line in lines if "searchhub.http" in line and "/v1/chat/completions" in line]
    assert len(access) == 1, lines
    assert " key=ci-bot searches=1 search_cost=0.005" in access[0] and not access[0].lstrip().startswith("{")
    assert "route" not in access[0] and SECRET not in "".join(lines)


def test_batched_lines_keep_their_requests_ids_and_metrics_count_them_at_once(tmp_path: Path, fake_model) -> None:
    """Access lines and request metrics are written in batches (hub/observability/requests.py): more
    requests than one batch holds each get their own line with their own request id and status, and a
    scrape right after the last answer counts every one of them."""
    fake_model.default = {"content": "ok"}
    cfg = base_config(fake_model.url, webSearch={"enabled": False})
    serve = ServeProcess(tmp_path, cfg, log_format="json")
    sent: dict[str, int] = {}
    try:
        serve.wait_for("Application startup complete")
        with httpx.Client(base_url=serve.url, timeout=30) as client:
            for i in range(300):  # more than one batch (MAX_PENDING 256)
                rid = f"req-batch-{i}"
                body = {"model": "default", "messages": [{"role": "user", "content": "hi"}]}
                if i % 7 == 0:
                    body = {"model": "default", "messages": "not a list"}  # a 400 among them
                r = client.post("/v1/chat/completions", json=body, headers={"x-request-id": rid})
                assert r.headers["x-request-id"] == rid
                sent[rid] = r.status_code
            scrape = client.get("/metrics").text
        counted = {status: sum(float(line.rsplit(" ", 1)[1]) for line in scrape.splitlines()
                               if line.startswith("searchhub_requests_total{")
                               and 'endpoint="completions"' in line and f'status="{status}"' in line)
                   for status in (200, 400)}
        assert sorted(set(sent.values())) == [200, 400]
        assert counted == {200: sum(s == 200 for s in sent.values()), 400: sum(s == 400 for s in sent.values())}
    finally:
        lines = serve.stop()
    access = {}
    for line in lines:
        entry = json.loads(line) if line.startswith("{") else {}
        if entry.get("logger") == "searchhub.http" and entry.get("path") == "/v1/chat/completions":
            access[entry["request_id"]] = entry["status"]
    assert access == sent
