"""Server tools: tools the gateway runs itself (web_search, …), one module each behind one interface
(hub/tools/base.py), built per config by hub/tools/registry.py."""

from .arguments import ArgumentError, parse_arguments
from .base import Hosted, HostedFetch, Rendered, ServerTool, ToolCall, ToolRequest, Transcript
from .registry import Parts, ServerTools, build

__all__ = ["ArgumentError", "Hosted", "HostedFetch", "Parts", "Rendered", "ServerTool", "ServerTools", "ToolCall",
           "ToolRequest", "Transcript", "build", "parse_arguments"]
