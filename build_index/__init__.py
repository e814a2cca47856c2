"""The ``toolrec`` command line and everything it runs beside the serving Lambda (handler/), in rooms.

- here: the composition of the build itself: model preparation, index builds (from a catalog, upstream MCP servers
  or a published build), publishing, the drift check a refresh gates on, and the CLI that calls them;
- ``ingest/``: where tools come in: catalog files, upstream MCP servers and their headers, and the catalog lint;
- ``usage/``: learning from use, build side: the query log read as records and folded into usage evidence;
- ``refresh/``: the scheduled refresh: its run, its ``toolrec refresh`` command and its Lambda entry point;
- ``ops/``: running and watching a deployment: the local server (``toolrec serve``), the load test, query-log
  stats and the policy commands;
- ``quality/``: evaluation against the benchmark sets, the reference BM25, the training split and the fine-tuning;
- ``bench/``: latency, cold start, memory, index size and build time, printed as figures.
"""
