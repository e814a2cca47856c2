"""toolrec serving: the ranking core, the index format, and the Lambda/HTTP/MCP adapters."""
