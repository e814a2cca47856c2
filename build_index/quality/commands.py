"""`toolrec eval`, `toolrec calibrate-score`, `toolrec agent-tasks`: measuring retrieval quality, fitting the score."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from build_index.cli_options import embedder_for, model_dir_option
from build_index.quality.acceptance_sets import SETS as ACCEPTANCE_SETS


def _share(text: str) -> float:
    try:
        share = float(text)
    except ValueError:
        share = -1.0
    if not 0.0 < share < 1.0:
        raise argparse.ArgumentTypeError(f"a share between 0 and 1 (exclusive), not {text!r}")
    return share


def cmd_eval(args: argparse.Namespace) -> int:
    from build_index.model_prepare import MODEL_ID
    from build_index.quality.calibration import left_out_calibration
    from build_index.quality.evaluate import evaluate, format_report
    from handler.ranking.confidence import SHIPPED
    from handler.ranking.retriever import Method

    method = Method(args.retriever)
    others = args.no_match_against or []
    calibration = SHIPPED if args.calibration is None else left_out_calibration(args.calibration, args.bench_dir.name)
    options: dict[str, Any] = {
        "method": method, "with_instruction": args.with_instruction, "no_match_against": others,
        "calibration": calibration,
    }  # fmt: skip
    if args.usage_split is not None:
        from build_index.quality.usage_eval import evaluate_usage_split, format_split_report

        embedder = embedder_for(args)
        split = evaluate_usage_split(args.bench_dir, args.usage_split, embedder, MODEL_ID, args.traffic, **options)
        print(json.dumps(split) if args.json else format_split_report(split))
        return 0
    usage = None
    if args.usage_from is not None:
        from build_index.usage.fold import groups_from_benchmark

        usage = groups_from_benchmark(args.usage_from)
    result = evaluate(args.bench_dir, embedder_for(args), MODEL_ID, usage=usage, **options)
    print(json.dumps(result) if args.json else format_report(result))
    return 0


def cmd_calibrate_score(args: argparse.Namespace) -> int:
    from build_index.model_prepare import MODEL_ID
    from build_index.quality.calibration import calibrate_score, format_calibration

    report = calibrate_score(args.sets, embedder_for(args), MODEL_ID, args.max_queries)
    print(json.dumps(report) if args.json else format_calibration(report))
    return 0


def cmd_agent_tasks(args: argparse.Namespace) -> int:
    from build_index.quality.agent_tasks import read_agent_tasks, write_bench_view
    from build_index.quality.shared_data import shared_dir

    out = write_bench_view(args.shared or shared_dir(), args.out, read_agent_tasks())
    print(f"{out}: the held-out agent tasks as a set (toolrec eval and calibrate-score read it)")
    return 0


def cmd_acceptance_set(args: argparse.Namespace) -> int:
    from build_index.quality.acceptance_sets import write_acceptance_set
    from build_index.quality.shared_data import shared_dir

    out = write_acceptance_set(args.which, args.out, args.shared or shared_dir())
    print(f"{out}: the {args.which} acceptance tasks that have a tool, as a set (toolrec eval reads it)")
    return 0


def cmd_train_siblings(args: argparse.Namespace) -> int:
    from build_index.model_prepare import MODEL_ID
    from build_index.quality.shared_data import shared_dir
    from build_index.quality.siblings_fit import L2, train_siblings

    head, lists = train_siblings(args.shared or shared_dir(), embedder_for(args), MODEL_ID, args.exclude, args.cap)
    about = {"fit_on": f"{lists} sibling groups of training rows", "left_out": args.exclude, "l2": L2}
    args.out.write_text(head.to_json(**about), encoding="utf-8")
    print(
        f"{args.out}: a sibling head fit on {lists} groups"
        + (f", without {', '.join(args.exclude)}" if args.exclude else "")
    )
    return 0


def add_quality_commands(commands: Any) -> None:
    """`toolrec eval`, `toolrec calibrate-score`, `toolrec agent-tasks`: measuring retrieval quality."""
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
        "--calibration",
        type=Path,
        default=None,
        metavar="REPORT",
        help="score and no match fit without this set (`toolrec calibrate-score --json` writes REPORT): the "
        "leave-one-set-out figures; default: the shipped ones",
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
    evaluation.add_argument(
        "--traffic",
        choices=("simple", "real"),
        default="simple",
        help="with --usage-split: each history query run once (simple), or asked by several users and keys, "
        "suggested by the cold index, sometimes failed or never run, folded from a query log (real)",
    )
    model_dir_option(evaluation)
    evaluation.set_defaults(run=cmd_eval)

    calibration = commands.add_parser(
        "calibrate-score",
        help="fit the suggestions' score and the no match on sets the model never trained on, and report each set "
        "with it left out",
    )
    calibration.add_argument("sets", type=Path, nargs="+", help="sets in the benchmark format")
    calibration.add_argument("--max-queries", type=int, default=None, help="evenly spaced sample per set")
    calibration.add_argument("--json", action="store_true", help="print one JSON object")
    model_dir_option(calibration)
    calibration.set_defaults(run=cmd_calibrate_score)

    view = commands.add_parser(
        "agent-tasks", help="write the agent tasks about held-out tools as a set in the benchmark format"
    )
    view.add_argument("out", type=Path, help="the folder to write (its name is the set's name: agent_tasks)")
    view.add_argument("--shared", type=Path, default=None, help="the shared data root (default: ../shared)")
    view.set_defaults(run=cmd_agent_tasks)

    acceptance = commands.add_parser(
        "acceptance-set", help="write the demo's or Arcade's acceptance tasks as a set in the benchmark format"
    )
    acceptance.add_argument("which", choices=ACCEPTANCE_SETS, help="whose acceptance tasks (tests/acceptance/)")
    acceptance.add_argument("out", type=Path, help="the folder to write (its name is the set's name)")
    acceptance.add_argument("--shared", type=Path, default=None, help="the shared data root (default: ../shared)")
    acceptance.set_defaults(run=cmd_acceptance_set)

    siblings = commands.add_parser(
        "train-siblings", help="fit the head that picks the action among one app's tools (training rows only)"
    )
    siblings.add_argument(
        "--out",
        type=Path,
        required=True,
        help="the weights file to write (shipped: handler/ranking/siblings_head.json)",
    )
    siblings.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="SOURCE",
        help="leave out a training set's rows (and its agent tasks), or agent_tasks (repeatable)",
    )
    siblings.add_argument("--cap", type=int, default=2500, help="training queries read per training set")
    siblings.add_argument("--shared", type=Path, default=None, help="the shared data root (default: ../shared)")
    model_dir_option(siblings)
    siblings.set_defaults(run=cmd_train_siblings)
