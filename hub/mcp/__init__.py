"""searchhub's search as an MCP server: the tool table and the server built on the official SDK."""
