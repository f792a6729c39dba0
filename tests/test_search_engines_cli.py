"""`searchhub engines [--probe]`, run as a subprocess on a temporary engines.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .fakes.search_models import GLM_KEY
from .fakes.search_providers import KEYS, config_with
from .helpers import hermetic

ROOT = Path(__file__).resolve().parent.parent
PROXY_PASSWORD = "pr0xy-pw-3e8d1c"


def searchhub(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SEARCHHUB_CONFIG" and "proxy" not in k.lower()}
    return subprocess.run([sys.executable, "-m", "hub", "engines", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def write(tmp_path, search_fakes, search_models, *, brave_key: str = KEYS["brave"]) -> Path:
    engines = [
        {"id": "google", "type": "serper", "apiKey": KEYS["serper"], "default": True,
         "baseURL": search_fakes.base_url(search_fakes.server, "serper")},
        {"id": "brave", "type": "brave", "apiKey": brave_key,
         "baseURL": search_fakes.base_url(search_fakes.server, "brave")},
        {"id": "web", "type": "ddgs", "proxy": f"http://bob:{PROXY_PASSWORD}@127.0.0.1:9"},
        {"id": "glm", "providerKey": "glm.glm-4.6"},
        {"id": "both", "type": "multi", "engines": ["google", "brave"]},
    ]
    providers = {"glm": {"type": "glm", "baseURL": search_models.glm_base(search_models.server, "a"), "apiKey": GLM_KEY}}
    path = tmp_path / "engines.json"
    path.write_text(json.dumps(hermetic(config_with(engines, providers=providers, search_targets=[["glm.glm-4.6"]]))))
    return path


def test_lists_engines_without_keys(tmp_path, search_fakes, search_models):
    p = searchhub("--config", str(write(tmp_path, search_fakes, search_models)), "--json")
    assert p.returncode == 0, p.stderr
    rows = {r["id"]: r for r in json.loads(p.stdout)}
    assert {k: (r["kind"], r["key"], r["google"], r["default"]) for k, r in rows.items()} == {
        "google": ("serper", "set", True, True),
        "brave": ("brave", "set", False, False),
        "web": ("ddgs", "not needed", False, False),
        "glm": ("glm model (glm.glm-4.6)", "set", False, False),
        "both": ("multi (google, brave)", "not needed", False, False),
    }
    assert rows["web"]["proxy"] == "http://****@127.0.0.1:9"
    table = searchhub("--config", str(write(tmp_path, search_fakes, search_models)))
    assert table.returncode == 0 and table.stdout.splitlines()[0].split() == ["id", "kind", "key", "google",
                                                                              "default", "proxy"]
    for secret in (*KEYS.values(), GLM_KEY, PROXY_PASSWORD):
        assert secret not in p.stdout + table.stdout + p.stderr + table.stderr
    assert search_fakes.calls("serper") == []  # listing does not search


def test_probe_searches_each_engine_once(tmp_path, search_fakes, search_models):
    wrong = "wrong-brave-key-81d0c6e2f4"
    p = searchhub("--config", str(write(tmp_path, search_fakes, search_models, brave_key=wrong)), "--probe", "--json",
                  "--query", "rust release")
    assert p.returncode == 1  # an engine failed
    rows = {r["id"]: r["probe"] for r in json.loads(p.stdout)}
    assert rows["google"]["ok"] and rows["google"]["hits"] == 1
    assert rows["glm"]["ok"]
    assert not rows["brave"]["ok"] and "HTTP 422" in rows["brave"]["error"]
    assert not rows["web"]["ok"]  # its proxy is down
    assert rows["both"]["ok"]  # one member answered
    assert search_fakes.calls("serper")[0].json["q"] == "rust release"
    assert len(search_fakes.calls("serper")) == 2  # its own probe and the multi engine's
    for secret in (wrong, PROXY_PASSWORD, GLM_KEY):
        assert secret not in p.stdout + p.stderr


def test_repository_engines_json():
    p = searchhub("--config", str(ROOT / "engines.json"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[1].split()[:4] == ["web", "ddgs", "not", "needed"]
