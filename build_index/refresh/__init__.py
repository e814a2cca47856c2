"""The scheduled refresh: re-read the upstreams and the query log, publish a new build only when they changed."""
