"""The server tools, one module each, found by hub/tools/registry.py: a module declares
`TOOL = ToolKind(...)` (hub/tools/kind.py); modules whose name starts with "_" are helpers."""
