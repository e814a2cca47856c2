"""Reusable test helpers: real servers on 127.0.0.1 free ports (workers, upstream MCP servers, the app)."""
