"""The `toolrec` command line. Each subcommand parses its arguments and calls one function elsewhere."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from build_index.cli_options import embedder_for, model_dir_option
from build_index.ops.commands import add_ops_commands
from build_index.quality.commands import add_quality_commands
from build_index.refresh.cli import HEADER_HELP, add_refresh_parser
from handler.errors import CatalogError, ToolrecError
from handler.inference.model_files import default_model_dir

Command = Callable[[argparse.Namespace], int]
INTERRUPTED_EXIT = 130  # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C


def cmd_model_prepare(args: argparse.Namespace) -> int:
    from build_index.model_prepare import prepare

    model_dir = args.model_dir or default_model_dir()
    spec = prepare(model_dir)
    print(f"model ready at {model_dir} ({spec.model_id}, fingerprint {spec.fingerprint[:12]})")
    return 0


def cmd_model_finetune(args: argparse.Namespace) -> int:
    from build_index.model_prepare import PINNED_FILES, SHIPPED_DIR
    from build_index.quality.finetune import finetune

    spec = finetune(args.training, args.out)
    if spec.files == PINNED_FILES:
        print(f"model at {args.out} reproduces the shipped one ({SHIPPED_DIR}) file for file")
    else:
        print(
            f"model at {args.out} differs from the shipped one: model.onnx sha256 {spec.files['model.onnx']}, "
            f"pinned {PINNED_FILES['model.onnx']}. To ship it: copy its files into {SHIPPED_DIR}, pin the sha256 in "
            "build_index/model_prepare.py, recalibrate no-match, re-record the golden vectors and drift goldens."
        )
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    import os

    from build_index.build import default_workers, embed_texts, index_tools
    from build_index.model_prepare import MODEL_ID
    from build_index.publish import publish
    from handler.settings import configured_namespace

    model_dir = args.model_dir or default_model_dir()
    embedder = embedder_for(args)
    namespace = configured_namespace(os.environ)
    if args.from_index:
        from build_index.usage.fold import published_build

        if args.catalog or args.from_mcp:
            raise CatalogError("--from-index rebuilds that index's own tools: give it without --catalog/--from-mcp")
        built = published_build(args.from_index, embedder.fingerprint, namespace)
    else:
        built = index_tools(
            _catalog_tools(args, namespace),
            embedder,
            MODEL_ID,
            progress=not args.quiet,
            model_dir=model_dir,
            workers=default_workers(),
            namespace=namespace,
        )
    if args.single_operator and not args.usage:
        raise CatalogError("--single-operator applies to a local query log: give it with --usage FILE.queries.jsonl")
    if args.usage:
        from build_index.usage.evidence import unused_evidence_note
        from build_index.usage.fold import with_usage

        def embed(texts: Sequence[str]) -> Any:
            return embed_texts(texts, embedder, not args.quiet, model_dir, default_workers(), "past tasks")

        built = with_usage(built, args.usage, embed, args.single_operator)
        summary = built.usage[1] if built.usage else None
        assert summary is not None
        print(
            f"usage from {args.usage}: {summary.execution_groups} execution groups, {summary.distinct_tasks} distinct "
            f"tasks for {summary.tools_with_usage} tools; not used: {summary.ignored or 'none'}"
        )
        note = unused_evidence_note(summary.ignored)
        if note:
            print(note)
    manifest = publish(built, args.out)
    print(f"built {manifest.tool_count} tools as {manifest.build_id} at {args.out}")
    return 0


def _catalog_tools(args: argparse.Namespace, namespace: str) -> list[Any]:
    from build_index.ingest.catalog_files import read_catalogs

    tools = read_catalogs(args.catalog) if args.catalog else []
    if args.from_mcp:
        from build_index.ingest.mcp_tools import merge, tools_from_mcp

        ingested = tools_from_mcp(args.from_mcp, args.mcp_app, args.catalog_out, args.header, namespace)
        tools = merge(tools, ingested)
    if not tools:
        raise CatalogError("nothing to build: give --catalog, --from-mcp or --from-index")
    return tools


def cmd_lint(args: argparse.Namespace) -> int:
    from build_index.ingest.catalog_files import read_catalogs
    from build_index.ingest.lint import lint_tools

    tools = read_catalogs(args.catalog)
    report = lint_tools(tools, embedder_for(args).embed, args.duplicate_threshold)
    print(json.dumps(report.as_json()) if args.json else "\n".join(report.lines()))
    return 0 if report.clean else 1


def cmd_bench(args: argparse.Namespace) -> int:
    from build_index.bench.report import format_report
    from build_index.bench.run import run

    sizes = [int(size) for size in args.sizes.split(",")]
    # The service logs JSON lines to stdout (Lambda's convention); here stdout is the report alone.
    with contextlib.redirect_stdout(sys.stderr):
        figures = run(sizes, args.queries, time_build=not args.no_build_timing)
    print(json.dumps(figures) if args.json else format_report(figures))
    return 0


def cmd_drift(args: argparse.Namespace) -> int:
    import os

    import httpx

    from build_index.drift import (
        CheckedTask,
        Endpoint,
        check,
        load_golden,
        read_queries,
        record,
        write_golden,
    )

    api_key = os.environ.get(args.api_key_env)
    if not api_key:
        print(f"toolrec drift: ${args.api_key_env} holds no API key", file=sys.stderr)
        return 2
    try:
        with Endpoint(args.url, api_key) as endpoint:
            if not args.record:
                report = check(endpoint, load_golden(args.golden))
            else:
                queries = read_queries(args.queries) if args.queries else None
                tasks = queries or [CheckedTask(q.task, q.right) for q in load_golden(args.golden).queries]
                golden = record(endpoint, tasks, args.user_id, args.gateway_id)
                write_golden(args.golden, golden)
                print(f"recorded {len(golden.queries)} queries from build {golden.recorded_from} to {args.golden}")
                for query in (q for q in golden.queries if q.known_wrong):
                    print(f"  known wrong: {query.task!r} got {query.expected[:1] or 'no match'}, right {query.right}")
                return 0
    except httpx.HTTPError as exc:
        print(f"toolrec drift: {args.url} did not answer: {exc}", file=sys.stderr)
        return 2
    print(report.format())
    return 1 if report.moved else 0


def _drift_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    drift = commands.add_parser("drift", help="replay a fixed query set against an endpoint, compare with a golden")
    drift.add_argument("--url", required=True, help="the stage's base URL (its ApiUrl, or http://127.0.0.1:8000)")
    drift.add_argument("--golden", type=Path, required=True, help="expected results (JSON, written by --record)")
    drift.add_argument("--record", action="store_true", help="write the golden file from this (known-good) endpoint")
    drift.add_argument("--queries", type=Path, default=None, help="with --record: tasks, one a line")
    drift.add_argument("--user-id", default="drift-check", help="with --record: the user the queries run as")
    drift.add_argument("--gateway-id", default=None, help="with --record: limit to one gateway's tools")
    drift.add_argument("--api-key-env", default="TOOLREC_DRIFT_API_KEY", help="variable holding the API key")
    drift.set_defaults(run=cmd_drift)


def _add_build_command(commands: Any) -> None:
    build = commands.add_parser("build", help="index catalogs and publish the build")
    build.add_argument("--catalog", type=Path, action="append", help="catalog JSONL (repeatable)")
    build.add_argument("--from-mcp", action="append", metavar="URL", help="an MCP server's tools/list (repeatable)")
    build.add_argument("--mcp-app", default=None, help="App name for --from-mcp tools (default: the server's name)")
    build.add_argument("--catalog-out", type=Path, default=None, help="also write the --from-mcp tools as JSONL")
    build.add_argument("--header", action="append", metavar="'NAME: VALUE'", help=HEADER_HELP)
    build.add_argument("--out", required=True, help="index location: a directory or s3://bucket/prefix")
    build.add_argument("--quiet", action="store_true", help="no progress bar")
    build.add_argument(
        "--from-index",
        metavar="LOCATION",
        default=None,
        help="rebuild the latest build at LOCATION (a directory or s3://...) with its tools and vectors as they are, "
        "e.g. to fold in fresh --usage without embedding the catalog again",
    )
    build.add_argument(
        "--usage",
        metavar="SOURCE",
        default=None,
        help="fold past executions into the index (README 'Learning from use'): dynamodb:TABLE (a deployment's "
        "query log), a local query log (*.queries.jsonl) or a JSONL file of query + relevant tool names",
    )
    build.add_argument(
        "--single-operator",
        action="store_true",
        help="with a local query log: count its runs as your own, as on a machine only you use (a deployment's "
        "query log needs several API keys over time before a tool learns, so one key or a burst moves nothing)",
    )
    model_dir_option(build)
    build.set_defaults(run=cmd_build)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="toolrec", description="Tool recommendation for AI agents.")
    commands = root.add_subparsers(dest="command", required=True)

    model = commands.add_parser("model", help="manage the local embedding model")
    model_commands = model.add_subparsers(dest="model_command", required=True)
    prepare = model_commands.add_parser("prepare", help="build the pinned int8 model directory (idempotent)")
    model_dir_option(prepare)
    prepare.set_defaults(run=cmd_model_prepare)
    finetune = model_commands.add_parser(
        "finetune", help="retrain the shipped model from the training sets (needs the `train` extra; ~20 min)"
    )
    finetune.add_argument("--training", type=Path, required=True, help="the training root (../shared/training)")
    finetune.add_argument("--out", type=Path, required=True, help="where to write the model directory")
    finetune.set_defaults(run=cmd_model_finetune)

    _add_build_command(commands)

    lint = commands.add_parser("lint", help="report catalog names and first lines that hurt matching")
    lint.add_argument("--catalog", type=Path, action="append", required=True, help="catalog JSONL (repeatable)")
    lint.add_argument("--json", action="store_true", help="print one JSON object")
    lint.add_argument(
        "--duplicate-threshold", type=float, default=0.95, help="cosine at which two first lines are near-duplicates"
    )
    model_dir_option(lint)
    lint.set_defaults(run=cmd_lint)

    add_quality_commands(commands)
    add_ops_commands(commands)

    bench = commands.add_parser("bench", help="measure latency, cold start, memory and build time")
    bench.add_argument(
        "--sizes", default="1000,10000,100000", help="catalog sizes, comma-separated (default: %(default)s)"
    )
    bench.add_argument("--queries", type=int, default=500, help="queries per measurement (default: %(default)s)")
    bench.add_argument("--no-build-timing", action="store_true", help="skip the fresh 10k build")
    bench.add_argument("--json", action="store_true", help="print one JSON object")
    bench.set_defaults(run=cmd_bench)
    _drift_parser(commands)
    add_refresh_parser(commands)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    command: Command = args.run
    try:
        return command(args)
    except ToolrecError as exc:
        print(f"toolrec: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C is the user's own stop, not a fault: one line, no traceback (issue 33 item 12). A build publishes
        # LATEST last, so an interrupted one left the served build as it was.
        print("toolrec: interrupted", file=sys.stderr)
        return INTERRUPTED_EXIT


if __name__ == "__main__":
    sys.exit(main())
