"""Running tools: the executor port and its adapters (http, mcp, lambda) and the execution service."""
