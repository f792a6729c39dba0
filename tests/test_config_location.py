"""Where the commands find their config (--config, $SEARCHHUB_CONFIG, ./engines.json, the user config
dir, the built-in default), `searchhub init`, and `searchhub doctor` against fakes on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hub import config as cfgmod
from hub.runtime import PLUGINS

from .helpers import base_config, free_port, searxng_engine

ROOT = Path(__file__).resolve().parent.parent


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("SEARCHHUB_CONFIG", "XDG_CONFIG_HOME") and "proxy" not in k.lower()}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT), **extra)
    return env


def _run(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "routes", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_locate_follows_the_documented_order(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    env = {"HOME": str(home)}
    user = home / ".config" / "searchhub" / "engines.json"
    assert cfgmod.locate(None, env, str(cwd)) == cfgmod.ConfigLocation(str(cfgmod.BUILTIN_CONFIG), "built-in default")
    user.parent.mkdir(parents=True)
    user.write_text("{}")
    assert cfgmod.locate(None, env, str(cwd)) == cfgmod.ConfigLocation(str(user), "user config")
    xdg = tmp_path / "xdg" / "searchhub" / "engines.json"
    xdg.parent.mkdir(parents=True)
    xdg.write_text("{}")
    assert cfgmod.locate(None, {**env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}, str(cwd)).path == str(xdg)
    (cwd / "engines.json").write_text("{}")
    assert cfgmod.locate(None, env, str(cwd)) == cfgmod.ConfigLocation(str(cwd / "engines.json"), "./engines.json")
    named = {**env, "SEARCHHUB_CONFIG": "/etc/x.json"}
    assert cfgmod.locate(None, named, str(cwd)) == cfgmod.ConfigLocation("/etc/x.json", "$SEARCHHUB_CONFIG")
    assert cfgmod.locate("given.json", named, str(cwd)) == cfgmod.ConfigLocation("given.json", "--config")


def test_the_built_in_default_loads_and_routes_to_local_servers():
    cfg = cfgmod.load(cfgmod.BUILTIN_CONFIG, env={}, plugins=PLUGINS)
    assert [t.key for p in cfg.router.routes["default"] for t in p.targets] == ["ollama.qwen3:8b", "llamacpp.default"]
    assert cfg.providers["ollama"].base_url_env == ("OLLAMA_BASE_URL",)


def test_commands_say_which_config_they_use(tmp_path):
    home = tmp_path / "home"
    empty = tmp_path / "empty"
    empty.mkdir()
    out = _run(empty, _env(home), "check")
    assert out.returncode == 0, out.stderr
    assert "built-in default config" in out.stderr and "searchhub init" in out.stderr
    user = home / ".config" / "searchhub" / "engines.json"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps(base_config("http://127.0.0.1:9/v1")))
    out = _run(empty, _env(home), "check")
    assert out.returncode == 0, out.stderr
    assert f"config {user} (from user config)" in out.stderr
    assert '"local.m"' in out.stdout


def test_a_named_config_that_is_missing_is_an_error_not_a_fallback(tmp_path):
    out = _run(tmp_path, _env(tmp_path, SEARCHHUB_CONFIG=str(tmp_path / "nope.json")), "check")
    assert out.returncode == 1
    assert "nope.json" in out.stderr and "from $SEARCHHUB_CONFIG" in out.stderr
    out = _run(tmp_path, _env(tmp_path), "check", "--config", "typo.json")
    assert out.returncode == 1 and "typo.json" in out.stderr


def test_init_never_overwrites(tmp_path):
    target = tmp_path / "engines.json"
    target.write_text("mine")
    out = _run(tmp_path, _env(tmp_path), "init")
    assert out.returncode == 1 and "already exists" in out.stderr
    assert target.read_text() == "mine"
    out = _run(tmp_path, _env(tmp_path), "init", "--path", str(tmp_path / "a" / "b.json"))
    assert out.returncode == 0, out.stderr
    written = json.loads((tmp_path / "a" / "b.json").read_text())
    builtin = json.loads(cfgmod.BUILTIN_CONFIG.read_text())
    assert written["$schema"].startswith("file://") and written["$schema"].endswith("engines.schema.json")
    assert {k: v for k, v in written.items() if k != "$schema"} == {k: v for k, v in builtin.items() if k != "$schema"}


def test_doctor_says_what_works_and_what_to_fix(tmp_path, fake_model, search_fakes):
    closed = free_port()
    cfg = base_config(fake_model.url)
    cfg["providers"]["gone"] = {"type": "llamacpp", "baseURL": f"${{GONE_URL:-http://127.0.0.1:{closed}/v1}}"}
    cfg["providers"]["ollama"] = {"type": "ollama", "baseURL": fake_model.url}
    cfg["virtualrouter"]["routing"]["local"] = [{"id": "l", "priority": 1, "targets": ["gone.default"]}]
    cfg["virtualrouter"]["routing"]["named"] = [{"id": "n", "priority": 1, "targets": ["ollama.qwen3:8b"]}]
    cfg["webSearch"] = {"engines": [searxng_engine(search_fakes, default=True)]}
    path = tmp_path / "engines.json"
    path.write_text(json.dumps(cfg))
    out = _run(tmp_path, _env(tmp_path), "doctor", "--timeout", "5")
    assert out.returncode == 1, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert any(ln.split()[:2] == ["ok", "local"] for ln in lines), out.stdout
    gone = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["FAIL", "gone"])
    assert f"127.0.0.1:{closed}" in lines[gone] and "cannot connect" in lines[gone]
    assert "GONE_URL" in "\n".join(lines[gone:gone + 3])
    ollama = next(ln for ln in lines if ln.split()[:2] == ["FAIL", "ollama"])
    assert "does not serve 'qwen3:8b'" in ollama and "(it serves: m)" in ollama
    assert any(ln.split()[:2] == ["ok", "default"] for ln in lines)
    assert any(ln.split()[:2] == ["FAIL", "local:"] for ln in lines)
    assert any(ln.split()[:2] == ["ok", "searxng"] for ln in lines), out.stdout
    assert lines[-1].startswith("something to fix")
    # Fixed: every route has a target that answers and the default engine searches.
    del cfg["virtualrouter"]["routing"]["local"], cfg["virtualrouter"]["routing"]["named"]
    del cfg["providers"]["gone"], cfg["providers"]["ollama"]
    path.write_text(json.dumps(cfg))
    out = _run(tmp_path, _env(tmp_path), "doctor", "--timeout", "5")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[-1].startswith("all good")


def test_doctor_never_prints_a_secret(tmp_path, fake_model):
    cfg = base_config(fake_model.url.replace("http://", "http://admin:hunter2-secret@"))  # sent as Basic auth
    cfg["providers"]["keyed"] = {"type": "vllm", "baseURL": f"http://127.0.0.1:{free_port()}/v1?key=qs-secret-77",
                                 "apiKey": "sk-very-secret-key-123456"}
    (tmp_path / "engines.json").write_text(json.dumps(cfg))
    out = _run(tmp_path, _env(tmp_path), "doctor", "--timeout", "5")
    both = out.stdout + out.stderr
    for secret in ("hunter2-secret", "sk-very-secret-key-123456", "qs-secret-77"):
        assert secret not in both
    assert "http://****@127.0.0.1" in out.stdout and "?****" in out.stdout
    assert any(ln.split()[:2] == ["ok", "local"] for ln in out.stdout.splitlines()), out.stdout
