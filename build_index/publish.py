"""Publishing a build: its files under ``builds/<build_id>/`` first, the ``LATEST`` pointer last."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from handler.aws import aws_client
from handler.index.format import BUILDS, LATEST, MANIFEST, BuiltIndex, Manifest, write_build
from handler.index.store import object_key, parse_s3_url


def publish(built: BuiltIndex, location: str, s3_client: Any = None) -> Manifest:
    """Write a build to a directory or ``s3://bucket/prefix`` and point LATEST at it."""
    if location.startswith("s3://"):
        return _publish_s3(built, location, s3_client)
    return _publish_local(built, Path(location))


def _publish_local(built: BuiltIndex, root: Path) -> Manifest:
    staging_root = root / BUILDS
    staging_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=staging_root))
    try:
        manifest = write_build(built, staging)
        target = staging_root / manifest.build_id
        # The same content published twice within one second gets the same build id: it is already there.
        if not target.is_dir():
            staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _atomic_write(root / LATEST, manifest.build_id + "\n")
    return manifest


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    with os.fdopen(fd, "w") as stream:
        stream.write(text)
    Path(tmp).replace(path)


def _publish_s3(built: BuiltIndex, location: str, s3_client: Any) -> Manifest:
    with tempfile.TemporaryDirectory() as tmp:
        manifest = write_build(built, Path(tmp))
        upload_build(Path(tmp), manifest.build_id, manifest.files, location, s3_client)
    return manifest


def upload_build(directory: Path, build_id: str, files: Iterable[str], location: str, s3_client: Any = None) -> None:
    """Upload a build's files from ``directory`` to ``s3://bucket/prefix``, then its manifest, then LATEST."""
    if s3_client is None:
        s3_client = aws_client("s3", "build")
    bucket, prefix = parse_s3_url(location)
    for name in [*files, MANIFEST]:  # the manifest after the files it describes
        s3_client.upload_file(str(directory / name), bucket, object_key(prefix, BUILDS, build_id, name))
    s3_client.put_object(Bucket=bucket, Key=object_key(prefix, LATEST), Body=(build_id + "\n").encode())
