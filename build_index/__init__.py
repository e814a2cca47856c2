"""The ``toolrec`` command line and everything it runs beside the serving Lambda (handler/), in four rooms.

- here: the build side: model preparation, catalog reading and linting, index builds (from a catalog, upstream MCP
  servers or a published build), publishing, folding usage, the scheduled refresh, and the CLI that calls them;
- ``ops/``: running and watching a deployment: the local server (``toolrec serve``), the load test, the drift
  check, query-log stats and the policy commands;
- ``quality/``: evaluation against the benchmark sets, the reference BM25, the training split and the fine-tuning;
- ``bench/``: latency, cold start, memory, index size and build time, printed as figures.
"""
