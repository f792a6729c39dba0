"""A real, throwaway redis-server on a free loopback port, and a listener that never answers."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

INSTALL_HINT = "redis-server is not installed; install it with: apt-get install -y redis-server"


class RedisServerMissing(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """One redis-server process, without persistence, that can be stopped, paused and restarted on its port."""

    def __init__(self, *, password: str | None = None, port: int | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RedisServerMissing(INSTALL_HINT)
        self.binary = binary
        self.password = password
        self.port = port or free_port()
        self._dir = tempfile.TemporaryDirectory(prefix="searchhub-redis-")
        self._log = Path(self._dir.name) / "redis.log"
        self._proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 5.0) -> None:
        args = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            self._dir.name,
            "--logfile",
            str(self._log),
        ]
        if self.password:
            args += ["--requirepass", self.password]
        self._proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not self._answers_ping():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server on port {self.port} did not start:\n{self._log_tail()}")
            time.sleep(0.01)

    def stop(self) -> None:
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGCONT)  # a paused server cannot act on SIGTERM
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def kill(self) -> None:
        """SIGKILL, like the OOM killer or a crashed host: no clean close, the kernel resets the connections.
        ``start()`` brings a new, empty server up on the same port."""
        if self._proc is None:
            return
        self._proc.kill()
        self._proc.wait(5)
        self._proc = None

    def answers_ping(self) -> bool:
        return self._answers_ping()

    def pause(self) -> None:
        """Freeze the process: connections still open (the kernel accepts them), nothing answers."""
        assert self._proc is not None
        self._proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self._proc is not None
        self._proc.send_signal(signal.SIGCONT)

    def close(self) -> None:
        self.stop()
        self._dir.cleanup()

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _answers_ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"*1\r\n$4\r\nPING\r\n")
                # +PONG, or -NOAUTH when a password is set: either way the server is serving.
                return s.recv(64)[:1] in (b"+", b"-")
        except OSError:
            return False

    def _log_tail(self) -> str:
        try:
            return "\n".join(self._log.read_text(errors="replace").splitlines()[-20:])
        except OSError:
            return "(no log)"


class SilentListener:
    """A TCP port that accepts connections and never sends a byte, like a wedged server."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(128)  # the kernel completes handshakes; we never accept or reply
        self.port = self._sock.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> SilentListener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
