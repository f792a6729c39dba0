"""`searchhub search`, run as a subprocess against the fake providers with a temporary engines.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .fakes.search_providers import KEYS, Reply, config_with
from .helpers import hermetic

ROOT = Path(__file__).resolve().parent.parent
CANARY = "sk-CANARY-cli-51f0a8e2c3d94b17"


@pytest.fixture
def fake(search_fakes):
    """The shared fake search providers (tests/conftest.py), reset for this test."""
    return search_fakes


@pytest.fixture
def engines_json(fake, tmp_path):
    def write(api_key: str = KEYS["serper"], **ws) -> Path:
        engines = [
            {"id": "serper", "type": "serper", "apiKey": api_key, "baseURL": fake.base_url(fake.server, "serper"),
             "default": True},
            {"id": "searx", "type": "searxng", "baseURL": fake.base_url(fake.server, "searxng")},
        ]
        path = tmp_path / "engines.json"
        path.write_text(json.dumps(hermetic(config_with(engines, **ws))))
        return path

    return write


def searchhub(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SEARCHHUB_CONFIG"}
    return subprocess.run([sys.executable, "-m", "hub", "search", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=30)


def test_json_output(fake, engines_json):
    p = searchhub("latest stable rust release", "--config", str(engines_json()), "--count", "3",
                  "--recency", "oneWeek", "--json")
    assert p.returncode == 0, p.stderr
    payload = json.loads(p.stdout)
    assert payload["engine"] == "serper" and payload["query"] == "latest stable rust release"
    assert [h["n"] for h in payload["hits"]] == [1, 2]
    assert payload["hits"][0]["url"] == "https://blog.rust-lang.org/2025/10/30/Rust-1.91.0/"
    (req,) = fake.calls("serper")
    assert req.json == {"q": "latest stable rust release", "num": 3, "tbs": "qdr:w"}
    assert KEYS["serper"] not in p.stdout + p.stderr


def test_table_output_with_another_engine(fake, engines_json):
    p = searchhub("rust", "--config", str(engines_json()), "--engine", "searx", "--count", "4")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.startswith("engine searx · 4 results")
    assert "[1] Announcing Rust 1.91.0 | Rust Blog" in out
    assert "    https://doc.rust-lang.org/stable/releases.html" in out
    assert fake.calls("searxng")[0].params["format"] == "json"


def test_failed_search_exits_1_without_the_key(fake, engines_json):
    fake.script("serper", Reply(status=401, body={"message": f"Invalid API key {CANARY}", "statusCode": 401}))
    p = searchhub("rust", "--config", str(engines_json(api_key=CANARY)))
    assert p.returncode == 1
    assert "search failed (engine serper): the search service refused the credentials (HTTP 401" in p.stderr
    assert CANARY not in p.stdout + p.stderr and CANARY[:12] not in p.stdout + p.stderr
    fake.script("serper", Reply(status=429, body={"message": f"slow down {CANARY}"}))
    p = searchhub("rust", "--config", str(engines_json(api_key=CANARY)), "--json")
    assert p.returncode == 1
    assert json.loads(p.stdout) == {"error": "rate limited by the search service (HTTP 429: slow down ****)",
                                    "engine": "serper"}
    assert CANARY not in p.stderr


def test_unknown_engine_and_config_errors(engines_json, tmp_path):
    p = searchhub("rust", "--config", str(engines_json()), "--engine", "bing")
    assert p.returncode == 1 and "unknown engine 'bing'; valid engines: serper, searx" in p.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(hermetic({"providers": {}, "virtualrouter": {"routing": {}},
                               "webSearch": {"engines": [{"id": "s", "type": "serper", "apiKey": CANARY}],
                                             "maxResults": 0}})))
    p = searchhub("rust", "--config", str(bad))
    assert p.returncode == 1 and "invalid configuration" in p.stderr and "webSearch.maxResults" in p.stderr
    assert CANARY not in p.stderr
    p = searchhub("rust", "--config", str(tmp_path / "missing.json"))
    assert p.returncode == 1 and "cannot read" in p.stderr


LONG = " ".join(f"part{i:04d} of what the provider says went wrong" for i in range(30))  # ~1,300 characters


@pytest.mark.parametrize("json_output", [False, True])
def test_a_failure_is_said_once_and_whole(fake, engines_json, json_output):
    """A person sees the engine's error once (not also as a log line) and whole (not cut at a model's
    160 characters), the key still masked; the exit status says it failed."""
    fake.script("serper", Reply(status=500, body={"message": f"{LONG} (key {CANARY})"}))
    p = searchhub("rust", "--config", str(engines_json(api_key=CANARY)), *(["--json"] if json_output else []))
    assert p.returncode == 1
    said = p.stdout + p.stderr
    assert said.count("part0000 of") == 1 and said.count("part0029 of") == 1, said
    assert f"{LONG} (key ****)" in said and "…" not in said
    assert CANARY not in said and CANARY[:12] not in said
    told = [line for line in p.stderr.splitlines() if "part0000" in line]
    if json_output:
        assert json.loads(p.stdout)["error"] == f"the search service failed (HTTP 500: {LONG} (key ****))"
        assert told == []
    else:
        assert p.stdout == ""
        assert told == [f"search failed (engine serper): the search service failed (HTTP 500: {LONG} (key ****))"]


def test_a_failure_longer_than_a_screen_is_bounded(fake, engines_json):
    fake.script("serper", Reply(status=500, body={"message": "x" * 10_000}))
    p = searchhub("rust", "--config", str(engines_json()))
    assert p.returncode == 1
    (line,) = [line for line in p.stderr.splitlines() if "xxx" in line]
    assert line.startswith("search failed (engine serper): the search service failed (HTTP 500: xxx")
    assert 2000 <= len(line) <= 2200 and line.endswith("…)")


def test_a_fallback_still_says_which_engine_failed(fake, engines_json):
    """When another engine answers, the failure is not in the answer: it is said once, on stderr."""
    fake.script("serper", Reply(status=500, body={"message": LONG}))
    p = searchhub("rust", "--config", str(engines_json(fallback=True)))
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("engine searx · ")
    assert p.stderr.count("part0000 of") == 1 and "serper" in p.stderr and LONG in p.stderr
