"""Server tools: tools the gateway runs itself (web_search, …), one module each behind one interface
(hub/tools/base.py), built per config by hub/tools/registry.py."""

from .arguments import ArgumentError, parse_arguments
from .base import Hosted, HostedFetch, HostedSearch, Rendered, ServerTool, ToolCall, ToolRequest, Transcript

__all__ = ["ArgumentError", "Hosted", "HostedFetch", "HostedSearch", "Rendered", "ServerTool", "ToolCall",
           "ToolRequest", "Transcript", "parse_arguments"]
