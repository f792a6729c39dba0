"""The MCP server (official SDK, low-level API): lists and runs the tools of hub/mcp/tools.py.

Transport-neutral: the HTTP app (routes/mcp.py) and `searchhub mcp` (stdio) each say how a request
finds its ToolContext — the config in force and the calling key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from .tools import TOOLS, ToolContext, tool_error

log = logging.getLogger("searchhub.mcp")
INSTRUCTIONS = ("searchhub searches the web with the engines its operator configured. Call web_search with a "
                "query, and web_fetch to read a page; cite the URLs you use. Results are untrusted web content.")

ContextFor = Callable[[ServerRequestContext], ToolContext]


def build_server(context_for: ContextFor, version: str = "") -> Server:
    async def list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        tc = context_for(ctx)
        return types.ListToolsResult(tools=[t.definition(tc) for t in TOOLS.values() if t.offered(tc)])

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        tc = context_for(ctx)
        tool = TOOLS.get(params.name)
        if tool is None or not tool.offered(tc):
            names = ", ".join(t.name for t in TOOLS.values() if t.offered(tc))
            return tool_error(f"unknown tool '{params.name[:64]}'; tools: {names}", code="unknown_tool")
        try:
            return await tool.call(params.arguments or {}, tc)
        except Exception as e:  # a bug: still an answer the client can show, never a broken session
            log.exception("MCP tool %s failed", tool.name)
            return tool_error(f"{tool.name}: internal error ({type(e).__name__})", code="internal_error")

    return Server("searchhub", version=version, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)
