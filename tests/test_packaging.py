"""searchhub as a user installs it: a wheel built from the tracked files, installed non-editable in a
fresh venv (what a Dockerfile, pipx and `uv tool install` do), run from an empty directory with no
engines.json anywhere. The checkout is never on that interpreter's path, so a module or data file left
out of the wheel fails here, not on a user's first request."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import httpx
import pytest

from .fakes.model import FakeModel
from .helpers import free_port

ROOT = Path(__file__).resolve().parent.parent


def _tracked_files() -> list[str]:
    """What a clone has: git's list of tracked files (the working tree's versions of them), or every
    file when this is not a git checkout (an unpacked sdist)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=30)
        return [f for f in out.stdout.decode().split("\0") if f and (ROOT / f).is_file()]
    except (OSError, subprocess.CalledProcessError):
        return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts]


def _modules(files: list[str]) -> set[str]:
    mods = set()
    for f in files:
        p = Path(f)
        if p.suffix == ".py" and p.parts[0] in ("hub", "routes"):
            parts = p.with_suffix("").parts
            mods.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return mods


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """The wheel installed in a fresh venv that borrows only the dependencies from this one."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    files = _tracked_files()
    for f in files:
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, src / f)
    dist = work / "dist"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            "-w", str(dist), str(src)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    wheel = next(dist.glob("searchhub-*.whl"))
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    inst = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
                           "--no-index", str(wheel)], capture_output=True, text=True, timeout=300)
    assert inst.returncode == 0, inst.stdout + inst.stderr
    # The dependencies come from this interpreter's site-packages, added as a plain path: .pth files
    # in it are not run, so this environment's editable install of the checkout stays out.
    (site / "_searchhub_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    empty = work / "empty"
    empty.mkdir()
    home = work / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("SEARCHHUB_CONFIG", "PYTHONPATH", "XDG_CONFIG_HOME", "VIRTUAL_ENV")
           and "proxy" not in k.lower()}
    env.update(HOME=str(home), PATH=f"{venv / 'bin'}:{env.get('PATH', '')}")
    return {"venv": venv, "py": py, "site": site, "empty": empty, "env": env, "files": files, "wheel": wheel}


def test_every_module_imports_from_the_wheel(installed):
    expected = _modules(installed["files"])
    assert "hub.tools" in expected and "routes.app" in expected
    script = (
        "import importlib, json, pkgutil, sys\n"
        "import hub, routes\n"
        "found = {'hub', 'routes'}\n"
        "for pkg in (hub, routes):\n"
        "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "        found.add(m.name)\n"
        "for name in sorted(found):\n"
        "    if not name.endswith('.__main__'):  # importing it runs the program\n"
        "        importlib.import_module(name)\n"
        "print(json.dumps({'found': sorted(found), 'hub': hub.__file__, 'routes': routes.__file__}))\n"
    )
    out = subprocess.run([str(installed["py"]), "-c", script], cwd=installed["empty"], env=installed["env"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert Path(got["hub"]).is_relative_to(installed["site"]), got["hub"]
    assert Path(got["routes"]).is_relative_to(installed["site"]), got["routes"]
    missing = expected - set(got["found"])
    assert not missing, f"modules of the checkout missing from the wheel: {sorted(missing)}"
    for data in ("hub/config/engines.schema.json", "hub/config/engines.default.json", "routes/ui.html"):
        assert (installed["site"] / data).is_file(), f"{data} is not in the wheel"


def test_the_packaged_default_is_the_repository_config():
    assert (ROOT / "hub" / "config" / "engines.default.json").read_bytes() == (ROOT / "engines.json").read_bytes(), \
        "hub/config/engines.default.json must be a copy of engines.json: cp engines.json hub/config/engines.default.json"


def _cli(installed, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(installed["venv"] / "bin" / "searchhub"), *args], cwd=cwd or installed["empty"],
                          env=installed["env"], capture_output=True, text=True, timeout=120)


def test_version(installed):
    out = _cli(installed, "--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith("searchhub ") and "unknown" not in out.stdout, out.stdout


def test_init_then_check_in_an_empty_directory(installed, tmp_path):
    first = _cli(installed, "init", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    written = tmp_path / "engines.json"
    assert written.is_file()
    check = _cli(installed, "check", cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert "engines.json: OK" in check.stdout
    assert "./engines.json" in check.stderr  # where the config came from
    written.write_text(written.read_text() + "\n")  # an edit of the user's own, to see it survive
    before = written.read_bytes()
    second = _cli(installed, "init", cwd=tmp_path)
    assert second.returncode != 0
    assert "already exists" in second.stderr
    assert written.read_bytes() == before
    elsewhere = _cli(installed, "init", "--path", str(tmp_path / "conf" / "mine.json"), cwd=tmp_path)
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert _cli(installed, "check", "--config", str(tmp_path / "conf" / "mine.json")).returncode == 0


def test_serves_from_an_empty_directory_with_the_built_in_config(installed):
    model = FakeModel("installed").start()
    port = free_port()
    env = {**installed["env"], "OLLAMA_BASE_URL": model.url, "OLLAMA_MODEL": "tiny"}
    log = installed["empty"].parent / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(installed["venv"] / "bin" / "searchhub"), "serve", "--port", str(port),
                                 "--log-format", "text"], cwd=installed["empty"], env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        health = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                health = httpx.get(url + "/health", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        assert health is not None and health.status_code == 200, log.read_text()[-3000:]
        assert health.json()["config"]["path"].endswith("engines.default.json")
        r = httpx.post(url + "/v1/chat/completions", timeout=30,
                       json={"model": "default", "messages": [{"role": "user", "content": "say hi"}]})
        assert r.status_code == 200, r.text
        assert r.json()["choices"][0]["message"]["content"] == "ok"
        assert model.requests and model.requests[-1]["model"] == "tiny"
        assert "built-in default config" in log.read_text()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        model.stop()


def _fenced_after(text: str, heading: str) -> str:
    start = text.index("```sh\n", text.index(heading)) + len("```sh\n")
    return text[start:text.index("\n```", start)]


def test_ci_runs_the_readme_test_command_byte_for_byte():
    readme = (ROOT / "README.md").read_text()
    command = _fenced_after(readme, "## Run the tests")
    assert "\n" not in command
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[-1] == command
    # One llama.cpp build, never more compilers at once than cores (the first-run budget).
    assert "LLAMA_CPP_BUILD_JOBS=$(nproc)" in command and "-DLLAMA_BUILD=OFF" in command
    gateway = _fenced_after(readme, "## Run the gateway")
    assert readme.index("## Run the gateway") < readme.index("## Run the tests") < readme.index("## Documentation")
    assert "searchhub serve" in gateway
