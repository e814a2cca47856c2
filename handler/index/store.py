"""Where built indexes live: a local directory or an S3 prefix, behind one small interface.

Both hold ``LATEST`` and ``builds/<build_id>/...``. The service reads ``LATEST``, fetches that build into a
local cache directory (S3: under /tmp on Lambda, reused while it verifies), then loads it with checksums.

S3 files are streamed to disk a few at a time and hashed as they arrive: a file whose sha256 differs from the
manifest's is refused there, and the load does not read a file it was just handed again to hash it (at 1M tools,
~1 GB: one pass less, and never a whole file in memory). A copy found in the cache is verified in full when loaded.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from handler.aws import aws_client
from handler.catalog.names import DEFAULT_NAMESPACE, ToolNames
from handler.errors import IndexNotPublishedError, IndexUnavailableError, IntegrityError
from handler.index.format import BUILDS, LATEST, MANIFEST, TOOLS, read_manifest
from handler.index.load import Index, assemble, load_tool_records, verify_build
from handler.index.table import ToolTable

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

# Files downloaded at once: the large ones (vectors, tool records) stream side by side, each hashed by its thread
# (hashlib and the socket reads release the GIL).
DOWNLOAD_THREADS = 4
DOWNLOAD_CHUNK = 1 << 20
LARGEST = (TOOLS, "vectors.npy", "usage_vectors.npy")  # started first: the download lasts as long as they do


class IndexStore(Protocol):
    def latest_build_id(self) -> str:
        """The build ``LATEST`` points at; IndexUnavailableError when there is none or storage fails."""
        ...

    def fetch(self, build_id: str, cache_dir: Path) -> Path:
        """A local directory holding that build's files (not yet verified)."""
        ...

    def describe(self) -> str: ...


def _valid_build_id(build_id: str) -> str:
    build_id = build_id.strip()
    if not build_id or "/" in build_id or build_id.startswith("."):
        raise IndexUnavailableError(f"LATEST holds an invalid build id {build_id!r}")
    return build_id


@dataclass(frozen=True)
class LocalIndexStore:
    root: Path

    def latest_build_id(self) -> str:
        try:
            return _valid_build_id((self.root / LATEST).read_text())
        except FileNotFoundError as exc:
            raise IndexNotPublishedError(f"no index at {self.root} (no {LATEST}): run `toolrec build`") from exc

    def fetch(self, build_id: str, cache_dir: Path) -> Path:
        return self.root / BUILDS / build_id

    def describe(self) -> str:
        return str(self.root)


@dataclass(frozen=True)
class S3IndexStore:
    client: S3Client
    bucket: str
    prefix: str

    def latest_build_id(self) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            body = self.client.get_object(Bucket=self.bucket, Key=object_key(self.prefix, LATEST))["Body"].read()
        except self.client.exceptions.NoSuchKey as exc:
            raise IndexNotPublishedError(f"no index at {self.describe()} (no {LATEST}): run `toolrec build`") from exc
        except (BotoCoreError, ClientError) as exc:
            raise IndexUnavailableError(f"cannot read {self.describe()}/{LATEST}: {exc}") from exc
        return _valid_build_id(body.decode())

    def fetch(self, build_id: str, cache_dir: Path) -> Path:
        """Download a build once into ``cache_dir/<build_id>``; a complete cached copy is reused."""
        return self.fetch_checked(build_id, cache_dir)[0]

    def fetch_checked(self, build_id: str, cache_dir: Path) -> tuple[Path, Mapping[str, str]]:
        """``fetch``, and the sha256 of each file it downloaded now, checked against the manifest on the way (empty
        for a cached copy). IntegrityError when a file differs from its sha256: nothing is kept."""
        from botocore.exceptions import BotoCoreError, ClientError

        target = cache_dir / build_id
        if (target / MANIFEST).is_file():
            return target, {}
        cache_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{build_id}-", dir=cache_dir))
        try:
            manifest_body = self._get(BUILDS, build_id, MANIFEST)
            manifest = read_manifest(manifest_body)  # admits only the format's plain names: writes stay in staging
            order = sorted(manifest.files, key=lambda name: name not in LARGEST)

            def download(name: str) -> str:
                return self._download(build_id, name, staging)

            with ThreadPoolExecutor(DOWNLOAD_THREADS) as pool:
                digests = dict(zip(order, pool.map(download, order), strict=True))
            for name, digest in digests.items():
                if digest != manifest.files[name]:
                    raise IntegrityError(
                        f"index {manifest.build_id}: {name} does not match its sha256 (corrupt or partial)"
                    )
            (staging / MANIFEST).write_bytes(manifest_body)  # last: its presence marks a complete copy
            staging.rename(target)
        except (BotoCoreError, ClientError) as exc:
            raise IndexUnavailableError(f"cannot download build {build_id} from {self.describe()}: {exc}") from exc
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return target, digests

    def _download(self, build_id: str, name: str, staging: Path) -> str:
        """Stream one file into ``staging``; its sha256."""
        digest = hashlib.sha256()
        body = self.client.get_object(Bucket=self.bucket, Key=object_key(self.prefix, BUILDS, build_id, name))["Body"]
        with (staging / name).open("wb") as out:
            for chunk in body.iter_chunks(DOWNLOAD_CHUNK):
                digest.update(chunk)
                out.write(chunk)
        return digest.hexdigest()

    def _get(self, *parts: str) -> bytes:
        body: bytes = self.client.get_object(Bucket=self.bucket, Key=object_key(self.prefix, *parts))["Body"].read()
        return body

    def describe(self) -> str:
        return f"s3://{self.bucket}/{self.prefix.strip('/')}"


def object_key(prefix: str, *parts: str) -> str:
    """The S3 key of ``parts`` under a store's prefix: ``object_key("tenant/", BUILDS, build_id, MANIFEST)``."""
    return "/".join(p for p in (prefix.strip("/"), *parts) if p)


def parse_s3_url(location: str) -> tuple[str, str]:
    bucket, _, prefix = location.removeprefix("s3://").partition("/")
    if not bucket:
        raise ValueError(f"{location!r} names no bucket")
    return bucket, prefix.strip("/")


def open_store(location: str, s3_client: Any = None) -> IndexStore:
    """A store for ``DIR`` or ``s3://bucket/prefix`` (the S3 client is created here unless injected)."""
    if location.startswith("s3://"):
        bucket, prefix = parse_s3_url(location)
        if s3_client is None:
            # The serving path's options wherever a store is opened: reading a build is the same work.
            s3_client = aws_client("s3", "serve")
        return S3IndexStore(s3_client, bucket, prefix)
    return LocalIndexStore(Path(location))


def load_latest(
    store: IndexStore, cache_dir: Path, model_fingerprint: str, threads: int = 1, namespace: str = DEFAULT_NAMESPACE
) -> Index:
    """Fetch and verify the build ``LATEST`` names (``namespace``: the deployment's, as ``assemble`` reads it). A
    corrupt cached copy is dropped, so a retry refetches it."""
    build_id = store.latest_build_id()
    if isinstance(store, S3IndexStore):
        directory, checked = store.fetch_checked(build_id, cache_dir)
    else:
        directory, checked = store.fetch(build_id, cache_dir), {}
    try:
        return assemble(directory, verify_build(directory, model_fingerprint, checked), threads, namespace)
    except IntegrityError:
        if directory.is_relative_to(cache_dir):
            shutil.rmtree(directory, ignore_errors=True)
        raise


def latest_table(store: IndexStore, cache_dir: Path) -> ToolTable:
    """The tools of the build ``LATEST`` names, verified, as the lookup table policy patterns are checked against:
    its records alone, without the model (``toolrec policy`` checks names before anything is served)."""
    records = load_tool_records(store.fetch(store.latest_build_id(), cache_dir))
    return ToolTable.of(records, ToolNames(records.keys.names))
