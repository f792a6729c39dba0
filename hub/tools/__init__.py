"""Server tools: tools the gateway runs itself (web_search, …), one module each behind one interface
(hub/tools/base.py), built per config by hub/tools/registry.py."""

from .arguments import ArgumentError, parse_arguments
from .base import Hosted, HostedSearch, Rendered, ServerTool, ToolCall, ToolRequest

__all__ = ["ArgumentError", "Hosted", "HostedSearch", "Rendered", "ServerTool", "ToolCall", "ToolRequest",
           "parse_arguments"]
