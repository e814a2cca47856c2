"""Deployment tooling: the Lambda package, per-tenant deploys, their dry runs."""
