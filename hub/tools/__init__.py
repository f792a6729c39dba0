"""Server tools: tools the gateway runs itself (web_search, …), one module each in hub/tools/kinds/
behind one interface (hub/tools/base.py), found and built per config by hub/tools/registry.py."""

from .arguments import ArgumentError, parse_arguments
from .base import Hosted, HostedFetch, HostedSearch, Rendered, ServerTool, ToolCall, ToolRequest, Transcript

__all__ = ["ArgumentError", "Hosted", "HostedFetch", "HostedSearch", "Rendered", "ServerTool", "ToolCall",
           "ToolRequest", "Transcript", "parse_arguments"]
