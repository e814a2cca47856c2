"""The `toolrec` command line. Each subcommand parses its arguments and calls one function elsewhere."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from build_index.refresh_cli import HEADER_HELP, add_refresh_parser
from handler.errors import CatalogError, ToolrecError
from handler.inference.model_files import default_model_dir

Command = Callable[[argparse.Namespace], int]


def _share(text: str) -> float:
    try:
        share = float(text)
    except ValueError:
        share = -1.0
    if not 0.0 < share < 1.0:
        raise argparse.ArgumentTypeError(f"a share between 0 and 1 (exclusive), not {text!r}")
    return share


def _model_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=None,
        help="prepared model directory (default: $TOOLREC_MODEL_DIR or ~/.cache/toolrec/models/...)",
    )


def _embedder(args: argparse.Namespace, threads: int = 1):  # type: ignore[no-untyped-def]
    from handler.inference.embedder import OnnxEmbedder

    return OnnxEmbedder(args.model_dir or default_model_dir(), threads=threads)


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
    from build_index.build import default_workers, embed_texts, index_tools
    from build_index.model_prepare import MODEL_ID
    from build_index.publish import publish

    model_dir = args.model_dir or default_model_dir()
    embedder = _embedder(args)
    if args.from_index:
        from build_index.usage import published_build

        if args.catalog or args.from_mcp:
            raise CatalogError("--from-index rebuilds that index's own tools: give it without --catalog/--from-mcp")
        built = published_build(args.from_index, embedder.fingerprint)
    else:
        built = index_tools(
            _catalog_tools(args),
            embedder,
            MODEL_ID,
            progress=not args.quiet,
            model_dir=model_dir,
            workers=default_workers(),
        )
    if args.usage:
        from build_index.usage import with_usage

        def embed(texts: Sequence[str]) -> Any:
            return embed_texts(texts, embedder, not args.quiet, model_dir, default_workers(), "past tasks")

        built = with_usage(built, args.usage, embed)
        summary = built.usage[1] if built.usage else None
        assert summary is not None
        print(
            f"usage from {args.usage}: {summary.execution_groups} execution groups, {summary.distinct_tasks} distinct "
            f"tasks for {summary.tools_with_usage} tools; not used: {summary.ignored or 'none'}"
        )
    manifest = publish(built, args.out)
    print(f"built {manifest.tool_count} tools as {manifest.build_id} at {args.out}")
    return 0


def _catalog_tools(args: argparse.Namespace) -> list[Any]:
    from build_index.catalog_io import read_catalogs

    tools = read_catalogs(args.catalog) if args.catalog else []
    if args.from_mcp:
        from build_index.mcp_ingest import merge, tools_from_mcp

        tools = merge(tools, tools_from_mcp(args.from_mcp, args.mcp_app, args.catalog_out, args.header))
    if not tools:
        raise CatalogError("nothing to build: give --catalog, --from-mcp or --from-index")
    return tools


def cmd_eval(args: argparse.Namespace) -> int:
    from build_index.model_prepare import MODEL_ID
    from build_index.quality.evaluate import evaluate, format_report
    from handler.ranking.no_match import NO_MATCH_COSINE
    from handler.ranking.retriever import Method

    method = Method(args.retriever)
    others = args.no_match_against or []
    threshold = NO_MATCH_COSINE if args.no_match_cosine is None else args.no_match_cosine
    options: dict[str, Any] = {
        "method": method, "with_instruction": args.with_instruction, "no_match_against": others,
        "no_match_cosine": threshold,
    }  # fmt: skip
    if args.usage_split is not None:
        from build_index.quality.usage_eval import evaluate_usage_split, format_split_report

        split = evaluate_usage_split(args.bench_dir, args.usage_split, _embedder(args), MODEL_ID, **options)
        print(json.dumps(split) if args.json else format_split_report(split))
        return 0
    usage = None
    if args.usage_from is not None:
        from build_index.usage import groups_from_benchmark

        usage = groups_from_benchmark(args.usage_from)
    result = evaluate(args.bench_dir, _embedder(args), MODEL_ID, usage=usage, **options)
    print(json.dumps(result) if args.json else format_report(result))
    return 0


def cmd_calibrate_no_match(args: argparse.Namespace) -> int:
    from build_index.model_prepare import MODEL_ID
    from build_index.quality.calibration import calibrate_no_match

    print(json.dumps(calibrate_no_match(args.training_dir, _embedder(args), MODEL_ID, args.max_queries)))
    return 0


def cmd_lint(args: argparse.Namespace) -> int:
    from build_index.catalog_io import read_catalogs
    from build_index.lint import lint_tools

    tools = read_catalogs(args.catalog)
    report = lint_tools(tools, _embedder(args).embed, args.duplicate_threshold)
    print(json.dumps(report.as_json()) if args.json else "\n".join(report.lines()))
    return 0 if report.clean else 1


def cmd_serve(args: argparse.Namespace) -> int:
    from build_index.ops.serve import serve

    serve(args.host, args.port, args.root, args.index, args.policy)
    return 0


def cmd_policy(args: argparse.Namespace) -> int:
    from build_index.ops.policy_cli import run_policy

    return run_policy(args)


def cmd_bench(args: argparse.Namespace) -> int:
    from build_index.bench.run import format_report, run

    sizes = [int(size) for size in args.sizes.split(",")]
    # The service logs JSON lines to stdout (Lambda's convention); here stdout is the report alone.
    with contextlib.redirect_stdout(sys.stderr):
        figures = run(sizes, args.queries, time_build=not args.no_build_timing)
    print(json.dumps(figures) if args.json else format_report(figures))
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
    from build_index.query_log import local_query_log_records, query_log_records

    if args.table:
        records = query_log_records(args.table, args.region)
    else:
        records = local_query_log_records(args.policy or default_policy_file())
    stats = recommendation_stats(records)
    print(json.dumps(stats.as_json()) if args.json else stats_report(stats))
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


def _add_quality_commands(commands: Any) -> None:
    """`toolrec eval` and `toolrec calibrate-no-match`: measuring retrieval quality."""
    evaluation = commands.add_parser("eval", help="measure retrieval quality on a benchmark set")
    evaluation.add_argument("bench_dir", type=Path)
    evaluation.add_argument("--retriever", choices=["hybrid", "bm25", "dense"], default="hybrid")
    evaluation.add_argument("--with-instruction", action="store_true", help="prepend the query's instruction")
    evaluation.add_argument("--json", action="store_true", help="print one JSON object")
    evaluation.add_argument(
        "--no-match-against",
        type=Path,
        action="append",
        metavar="OTHER_BENCH_DIR",
        help="run that set's queries against BENCH_DIR's catalog as off-catalog tasks (repeatable)",
    )
    evaluation.add_argument(
        "--no-match-cosine",
        type=float,
        default=None,
        help="the no-match threshold to apply (default: the shipped one); leave-one-set-out figures take the "
        "threshold `calibrate-no-match` gives without this set",
    )
    history = evaluation.add_mutually_exclusive_group()
    history.add_argument(
        "--usage-from",
        type=Path,
        metavar="FILE",
        help="build the set's index with FILE (query + relevant tool ids of BENCH_DIR) as its usage history",
    )
    history.add_argument(
        "--usage-split",
        type=_share,
        metavar="SHARE",
        help="use this share of the queries (by a fixed hash of their id) as history; score cold and warm on the rest",
    )
    _model_dir_option(evaluation)
    evaluation.set_defaults(run=cmd_eval)

    calibration = commands.add_parser(
        "calibrate-no-match",
        help="compute the no-match threshold from sets the model never trained on, and each set's leave-one-out one",
    )
    calibration.add_argument("training_dir", type=Path, nargs="+", help="sets in the benchmark format")
    calibration.add_argument("--max-queries", type=int, default=None, help="evenly spaced sample per set")
    _model_dir_option(calibration)
    calibration.set_defaults(run=cmd_calibrate_no_match)


def _loadtest_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    load = commands.add_parser("loadtest", help="bounded load test of `toolrec serve` on 127.0.0.1 (select requests)")
    load.add_argument("--requests", type=int, default=10_000, help="select requests to send")
    load.add_argument("--concurrency", type=int, default=32, help="concurrent connections")
    load.add_argument("--root", type=Path, default=None, help="server root to reuse (default: a fresh temp dir)")
    load.add_argument("--rss-growth-mb", type=float, default=32.0, help="allowed server RSS growth, middle to end")
    load.add_argument("--json", action="store_true", help="print one JSON object")
    load.set_defaults(run=cmd_loadtest)


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
    _model_dir_option(build)
    build.set_defaults(run=cmd_build)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="toolrec", description="Tool recommendation for AI agents.")
    commands = root.add_subparsers(dest="command", required=True)

    model = commands.add_parser("model", help="manage the local embedding model")
    model_commands = model.add_subparsers(dest="model_command", required=True)
    prepare = model_commands.add_parser("prepare", help="build the pinned int8 model directory (idempotent)")
    _model_dir_option(prepare)
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
    _model_dir_option(lint)
    lint.set_defaults(run=cmd_lint)

    _add_quality_commands(commands)

    serve = commands.add_parser("serve", help="serve the REST API locally (embedded default: demo index + policy file)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--index", default=None, help="index directory or s3://... (default: the demo, built on first run)"
    )
    serve.add_argument("--policy", type=Path, default=None, help="policy file (default: .toolrec/policy.json)")
    serve.add_argument("--root", type=Path, default=Path(".toolrec"), help="where the embedded default lives")
    serve.set_defaults(run=cmd_serve)

    from build_index.ops.policy_cli import add_policy_parser

    add_policy_parser(commands, cmd_policy)
    bench = commands.add_parser("bench", help="measure latency, cold start, memory and build time")
    bench.add_argument("--sizes", default="1000,10000,100000", help="catalog sizes, comma-separated")
    bench.add_argument("--queries", type=int, default=500, help="queries per measurement")
    bench.add_argument("--no-build-timing", action="store_true", help="skip the fresh 10k build")
    bench.add_argument("--json", action="store_true", help="print one JSON object")
    bench.set_defaults(run=cmd_bench)
    stats = commands.add_parser("stats", help="hit rate of recommendations -> executions, from the query log")
    stats.add_argument("--table", help="a deployment's DynamoDB query log table (default: the local query log)")
    stats.add_argument(
        "--policy", type=Path, help="local policy file whose query log to read (default: .toolrec/policy.json)"
    )
    stats.add_argument("--region", default=None, help="AWS region (default: the environment's)")
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    stats.set_defaults(run=cmd_stats)
    _loadtest_parser(commands)
    _drift_parser(commands)
    add_refresh_parser(commands, _model_dir_option)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    command: Command = args.run
    try:
        return command(args)
    except ToolrecError as exc:
        print(f"toolrec: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
