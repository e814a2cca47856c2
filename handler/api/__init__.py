"""The REST adapter: schemas, auth, error mapping, routes."""
