"""Private network helpers shared by the servers (MCP over HTTP, the
Planfence heads transport). Nothing here is public API."""
