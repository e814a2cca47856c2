"""``toolrec refresh``'s arguments and run (build_index/refresh/run.py does the work). Light at import: the CLI builds
every parser on each start, and the build stack is imported only when the command runs."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from build_index.cli_options import model_dir_option

HEADER_HELP = "sent to every --from-mcp server (repeatable); ${VAR} and ${secretsmanager:ID} are filled in"


def add_refresh_parser(commands: Any) -> None:
    refresh = commands.add_parser("refresh", help="re-read upstream MCP servers; rebuild and publish if they changed")
    refresh.add_argument("--index", required=True, help="the published index: a directory or s3://bucket/prefix")
    refresh.add_argument("--from-mcp", metavar="URL", help="one upstream server (with --mcp-app and --header)")
    refresh.add_argument("--mcp-app", default=None, help="App name for its tools (default: the server's name)")
    refresh.add_argument("--header", action="append", metavar="'NAME: VALUE'", help=HEADER_HELP)
    refresh.add_argument("--upstreams", metavar="JSON", help='[{"url": ..., "app": ..., "headers": {...}}, ...]')
    refresh.add_argument(
        "--usage",
        metavar="SOURCE",
        help="also fold this query log (as build --usage); rebuild when its evidence changed",
    )
    refresh.add_argument("--golden", type=Path, help="a drift golden the new build must pass before LATEST moves")
    model_dir_option(refresh)
    refresh.set_defaults(run=run_refresh)


def run_refresh(args: argparse.Namespace) -> int:
    from build_index.drift import load_golden
    from build_index.ingest.upstream_headers import parse_headers, parse_upstreams, upstreams_from
    from build_index.model_prepare import MODEL_ID
    from build_index.refresh.run import refresh
    from handler.errors import CatalogError
    from handler.inference.embedder import OnnxEmbedder
    from handler.inference.model_files import default_model_dir
    from handler.settings import configured_namespace

    if args.upstreams and args.from_mcp:
        raise CatalogError("give either --from-mcp URL or --upstreams JSON, not both")
    if not (args.upstreams or args.from_mcp or args.usage):
        raise CatalogError("nothing to refresh from: give --from-mcp URL, --upstreams JSON and/or --usage SOURCE")
    one = {"url": args.from_mcp, "app": args.mcp_app, "headers": parse_headers(args.header)}
    upstreams = parse_upstreams(args.upstreams) if args.upstreams else upstreams_from([one]) if args.from_mcp else []
    golden = load_golden(args.golden) if args.golden else None
    embedder = OnnxEmbedder(args.model_dir or default_model_dir())
    namespace = configured_namespace(os.environ)
    result = refresh(
        args.index, upstreams, embedder, MODEL_ID, os.environ, usage=args.usage, golden=golden, namespace=namespace
    )
    unchanged = "tools and usage unchanged" if args.usage else "tools unchanged"
    done = "published new build" if result.published else f"{unchanged}, kept build"
    print(f"{done} {result.build_id} ({result.tool_count} tools, catalog sha256 {result.catalog_sha256[:12]})")
    return 0
