"""Where tools come in: catalog files and upstream MCP servers read into catalog entries, and linted before a build."""
