"""Options and collaborators every `toolrec` command that embeds shares: the model directory and the embedder."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from handler.inference.model_files import default_model_dir

if TYPE_CHECKING:
    from handler.inference.embedder import OnnxEmbedder


def model_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=None,
        help="prepared model directory (default: $TOOLREC_MODEL_DIR or ~/.cache/toolrec/models/...)",
    )


def _embedder(args: argparse.Namespace, threads: int = 1):  # type: ignore[no-untyped-def]
    from handler.inference.embedder import OnnxEmbedder

    return OnnxEmbedder(args.model_dir or default_model_dir(), threads=threads)


def embedder_for(args: argparse.Namespace, threads: int = 1) -> OnnxEmbedder:
    """The embedder of the command's ``--model-dir`` (imported when a command runs: the CLI starts light)."""
    from handler.inference.embedder import OnnxEmbedder

    return OnnxEmbedder(args.model_dir or default_model_dir(), threads=threads)
