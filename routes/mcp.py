"""/mcp: the MCP server over Streamable HTTP, mounted from the official SDK.

Stateless and answering in JSON: any replica can serve any call, no session lives in a process.
Auth is the gateway's (GatewayMiddleware checks the bearer key before the SDK sees the request),
so every call searches on behalf of the key that made it.

The SDK costs a second of start-up and some 35 MB per process, so it is loaded by the first
request to /mcp, not at start: a gateway nobody asks for MCP never pays for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib
from collections.abc import AsyncIterator
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from hub.runtime import Gateway
from hub.search.metered import SearchBill

from .common import caller

MAX_BODY_BYTES = 1024 * 1024  # a tool call is a few hundred bytes


class McpEndpoint:
    """The ASGI app at /mcp. `running()` belongs in the app's lifespan: the SDK's session manager
    lives in a task of its own, started on first use and stopped with the app."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._app: ASGIApp | None = None
        self._ready: asyncio.Future | None = None
        self._host: asyncio.Task | None = None
        self._stop: asyncio.Event | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        self._stop = asyncio.Event()
        try:
            yield
        finally:
            self._stop.set()
            if self._host is not None:
                with contextlib.suppress(Exception):
                    await self._host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            if self._ready is None:
                self._ready = asyncio.get_running_loop().create_future()
                # A fresh context: the manager's tasks must not carry this first request's id.
                self._host = asyncio.get_running_loop().create_task(self._serve(), context=contextvars.Context())
            await asyncio.shield(self._ready)
        assert self._app is not None
        await self._app(scope, receive, send)

    async def _serve(self) -> None:
        assert self._ready is not None and self._stop is not None
        try:
            # Imported off the event loop: building the SDK's models takes a while.
            sdk = await asyncio.to_thread(importlib.import_module, "mcp.server.streamable_http_manager")
            server = await asyncio.to_thread(_build_server, self.gateway)
            manager = sdk.StreamableHTTPSessionManager(
                app=server, json_response=True, stateless=True, max_request_body_size=MAX_BODY_BYTES,
                security_settings=_rebinding_guard(self.gateway))
            async with manager.run():
                self._app = sdk.StreamableHTTPASGIApp(manager)
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as e:
            if not self._ready.done():
                self._ready.set_exception(e)
                self._ready = None  # the next request tries again
            raise


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _rebinding_guard(gateway: Gateway) -> Any:
    """A keyless gateway on loopback accepts /mcp only for loopback Host and Origin headers, so a web
    page cannot reach it through DNS rebinding; with keys, the key is the guard."""
    from mcp.server.transport_security import TransportSecuritySettings

    assert gateway.runtime is not None
    server = gateway.runtime.config.server
    if server.api_keys or server.host not in LOOPBACK:
        return None
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


def _build_server(gateway: Gateway) -> Any:
    from hub.mcp.server import build_server
    from hub.mcp.tools import ToolContext

    def context_for(ctx: Any) -> ToolContext:
        rt = gateway.runtime
        assert rt is not None
        key, bill = caller(ctx.request) if ctx.request is not None else (None, SearchBill())
        return ToolContext(rt.metered(key, bill), rt.search.engines(), rt.config.web_search.default_engine,
                           rt.direct_fetch, rt.reader, rt.config.web_search.limits.read_pages)

    return build_server(context_for)
