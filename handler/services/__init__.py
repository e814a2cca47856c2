"""The services behind REST and MCP: access filtering, select/search, apps. Pure of HTTP and MCP."""
