"""`searchhub mcp`: the MCP server over stdio, for clients that only launch local servers.

The same tools, engines, fetcher, cache (the config's state store, so Redis-shared when configured)
and budgets as /mcp. Searches and fetches count against the key in $SEARCHHUB_API_KEY when it is
set, else against no key (the operator's own process)."""

from __future__ import annotations

import argparse
import logging
import os
import sys

import anyio
from mcp.server.stdio import stdio_server

from .. import config as cfgmod
from ..access.keys import match_key
from ..config.keys import ApiKey
from ..runtime import running
from .server import build_server
from .tools import ToolContext

KEY_ENV = "SEARCHHUB_API_KEY"


def run_stdio(args: argparse.Namespace, cfg: cfgmod.Config, path: str) -> int:
    key = None
    presented = os.environ.get(KEY_ENV)
    if presented and cfg.server.api_keys:
        key = match_key(presented, cfg.server.api_keys)
        if key is None:
            print(f"{KEY_ENV} is not one of server.apiKeys in {path}", file=sys.stderr)
            return 1
    # stdout carries the protocol: every log line goes to stderr.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    anyio.run(_serve, cfg, key)
    return 0


async def _serve(cfg: cfgmod.Config, key: ApiKey | None) -> None:
    async with running(cfg) as runtime:

        def context_for(_ctx) -> ToolContext:
            return ToolContext(runtime.metered(key), runtime.search.engines(), cfg.web_search.default_engine,
                               runtime.direct_fetch, runtime.reader, cfg.web_search.limits.read_pages)

        server = build_server(context_for)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
