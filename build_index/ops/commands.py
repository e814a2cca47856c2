"""The commands that run or inspect a service: `toolrec serve`, `policy`, `stats` and `loadtest`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from build_index.cli_options import model_dir_option
from build_index.ops.policy_cli import add_policy_parser, run_policy
from handler.settings import ENV_PREFIX


def cmd_serve(args: argparse.Namespace) -> int:
    from build_index.ops.serve import serve

    if args.log_tasks:  # the service's own setting, which the settings serve builds read with the rest
        os.environ[f"{ENV_PREFIX}LOG_TASKS"] = "true"
    serve(args.host, args.port, args.root, args.index, args.policy)
    return 0


def cmd_loadtest(args: argparse.Namespace) -> int:
    from build_index.ops.loadtest import run_loadtest

    if args.requests < 2 or args.concurrency < 1:
        print("toolrec: loadtest needs --requests >= 2 and --concurrency >= 1", file=sys.stderr)
        return 2
    report = run_loadtest(args.requests, args.concurrency, args.root, args.rss_growth_mb)
    print(json.dumps(report.as_json()) if args.json else "\n".join(report.lines()))
    return 0 if report.passed else 1


def cmd_stats(args: argparse.Namespace) -> int:
    from build_index.ops.policy_checks import default_policy_file
    from build_index.ops.stats import recommendation_stats, stats_report
    from build_index.usage.query_log import local_query_log_records, query_log_records

    if args.table:
        records = query_log_records(args.table, args.region)
    else:
        records = local_query_log_records(args.policy or default_policy_file())
    if not args.per_tool:
        stats = recommendation_stats(records)
        print(json.dumps(stats.as_json()) if args.json else stats_report(stats))
        return 0
    from build_index.ops.tool_stats import tool_report, tool_uses, with_rank_movement

    uses = tool_uses(records)
    if args.index:
        import tempfile

        from build_index.cli_options import embedder_for
        from handler.index.store import load_latest, open_store

        embedder = embedder_for(args)
        with tempfile.TemporaryDirectory() as cache:
            index = load_latest(open_store(args.index), Path(cache), embedder.fingerprint)
            with_rank_movement(uses, index, embedder, args.top)
    if args.json:
        print(json.dumps({name: use.as_json() for name, use in sorted(uses.items())}))
    else:
        print(tool_report(uses, args.top))
    return 0


def add_ops_commands(commands: Any) -> None:
    serve = commands.add_parser("serve", help="serve the REST API locally (embedded default: demo index + policy file)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--index", default=None, help="index directory or s3://... (default: the demo, built on first run)"
    )
    serve.add_argument("--policy", type=Path, default=None, help="policy file (default: .toolrec/policy.json)")
    serve.add_argument("--root", type=Path, default=Path(".toolrec"), help="where the embedded default lives")
    serve.add_argument(
        "--log-tasks",
        action="store_true",
        help="log each select's task text (default: only its counts, latency and empty reasons; $TOOLREC_LOG_TASKS)",
    )
    serve.set_defaults(run=cmd_serve)

    add_policy_parser(commands, run_policy)
    stats = commands.add_parser("stats", help="hit rate of recommendations -> executions, from the query log")
    stats.add_argument("--table", help="a deployment's DynamoDB query log table (default: the local query log)")
    stats.add_argument(
        "--policy", type=Path, help="local policy file whose query log to read (default: .toolrec/policy.json)"
    )
    stats.add_argument("--region", default=None, help="AWS region (default: the environment's)")
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    stats.add_argument(
        "--per-tool", action="store_true", help="per tool: times suggested, run after a suggestion (issue 25)"
    )
    stats.add_argument(
        "--index", default=None, help="with --per-tool: index whose usage moved each tool (cold -> warm mean rank)"
    )
    stats.add_argument("--top", type=int, default=20, help="with --per-tool: the most suggested tools shown")
    model_dir_option(stats)
    stats.set_defaults(run=cmd_stats)
    _loadtest_parser(commands)


def _loadtest_parser(commands: Any) -> None:
    load = commands.add_parser("loadtest", help="bounded load test of `toolrec serve` on 127.0.0.1 (select requests)")
    load.add_argument("--requests", type=int, default=10_000, help="select requests to send")
    load.add_argument("--concurrency", type=int, default=32, help="concurrent connections")
    load.add_argument("--root", type=Path, default=None, help="server root to reuse (default: a fresh temp dir)")
    load.add_argument("--rss-growth-mb", type=float, default=32.0, help="allowed server RSS growth, middle to end")
    load.add_argument("--json", action="store_true", help="print one JSON object")
    load.set_defaults(run=cmd_loadtest)
