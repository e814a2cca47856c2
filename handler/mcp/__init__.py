"""The MCP gateway: each gateway is a stateless streamable-HTTP MCP server over the same services as REST."""
