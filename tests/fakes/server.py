"""Run an ASGI app under uvicorn in a background thread on a free loopback port; start a fake's thread."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import uvicorn


class ServerThread:
    def __init__(self, app, host: str = "127.0.0.1") -> None:
        self.app = app
        self.host = host
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> ServerThread:
        config = uvicorn.Config(self.app, host=self.host, port=0, log_level="warning", lifespan="on",
                                loop="asyncio", timeout_graceful_shutdown=2,
                                # longer than any client pool keeps an idle connection, so a burst of
                                # requests never lands on connections the fake is closing
                                timeout_keep_alive=120)
        self._server = uvicorn.Server(config)
        self._server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self._thread = threading.Thread(target=lambda: asyncio.run(self._server.serve()), daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("server failed to start")
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)


def run_loop_until_stopped(loop: asyncio.AbstractEventLoop, server: asyncio.Server | None = None) -> None:
    """Run `loop` until `loop.stop()`, then close it in its own thread: the server, the handlers still
    running, the loop itself (a loop left to the garbage collector closes itself later, in whatever
    test is running then, and warns there)."""
    try:
        loop.run_forever()
    finally:
        if server is not None:
            server.close()
        tasks = asyncio.all_tasks(loop)
        for t in tasks:
            t.cancel()
        if tasks:
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.close()


def started_thread(run: Callable[[], object], ready: threading.Event, what: str) -> threading.Thread:
    """A daemon thread running `run`, once it has set `ready` (RuntimeError after 10 s)."""
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    if not ready.wait(10):
        raise RuntimeError(f"{what} did not start")
    return thread
