"""REST routers: thin (parse, call a service, return a response model)."""
