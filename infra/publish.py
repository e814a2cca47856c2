"""Publish a build that ``toolrec build --out DIR`` made locally to ``s3://bucket/prefix``: files, manifest, LATEST.

The deploy builds (and so validates) the index before it touches AWS, and publishes that same build after the stack
exists. The upload is build_index/publish.py's: a build's files, then its manifest, then the LATEST pointer, so a
reader never sees half an index.

    python -m infra.publish --from build/index/acme --to s3://toolrec-acme-prod-index/index
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from build_index.publish import upload_build
from handler.index.format import BUILDS, LATEST, MANIFEST, read_manifest


def local_build_id(root: Path) -> str:
    return (root / LATEST).read_text().strip()


def publish_directory(root: Path, location: str, s3_client: Any = None) -> str:
    """Upload the build LATEST names in ``root``; returns its build id."""
    build_id = local_build_id(root)
    build_dir = root / BUILDS / build_id
    manifest = read_manifest((build_dir / MANIFEST).read_bytes())
    upload_build(build_dir, build_id, manifest.files, location, s3_client)
    return build_id


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.publish", description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, required=True, help="a local index directory")
    parser.add_argument("--to", dest="location", required=True, help="s3://bucket/prefix")
    args = parser.parse_args(argv)
    build_id = publish_directory(args.source, args.location)
    print(f"published {build_id} to {args.location}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
