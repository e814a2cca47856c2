"""Where built indexes live: a local directory or an S3 prefix, behind one small interface.

Both hold ``LATEST`` and ``builds/<build_id>/...``. The service reads ``LATEST``, fetches that build into a
local cache directory (S3: under /tmp on Lambda, reused while it verifies), then loads it with checksums.

S3 files are streamed to disk a few at a time and hashed as they arrive: a file whose sha256 differs from the
manifest's is refused there, and the load does not read a file it was just handed again to hash it (at 1M tools,
~1 GB: one pass less, and never a whole file in memory). A copy found in the cache is verified in full when loaded.

A server (``load_latest(private=True)``) maps a local build from its own copy too, made and hashed the same way: a
build is memory-mapped, and a mapped file changed in place (`cp` over the build's folder, `rsync --inplace`) killed
the process by SIGBUS at the next query (issue 33). The copy keeps the published files' sizes and times, so a change
made to them later is seen (``changed_in_place``) and logged while the verified copy keeps serving.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable, Mapping
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

    def fetch_checked(self, build_id: str, cache_dir: Path) -> tuple[Path, Mapping[str, str]]:
        """A private copy of that build in ``cache_dir/<build_id>``, and the sha256 of each file checked on the way."""
        ...

    def changed_in_place(self, build_id: str, cache_dir: Path) -> list[str]:
        """The files of a build served from its private copy that have changed where it was published since."""
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
        """The build where it lies, for a command that reads it once."""
        return self.root / BUILDS / build_id

    def fetch_checked(self, build_id: str, cache_dir: Path) -> tuple[Path, Mapping[str, str]]:
        """A private copy of the build in ``cache_dir/<build_id>``, each file hashed as it is copied (as S3's)."""
        source = self.fetch(build_id, cache_dir)

        def copy(name: str, staging: Path) -> str:
            try:
                digest = _copy_hashed(source / name, staging / name)
            except FileNotFoundError:
                raise IntegrityError(f"index {build_id} is missing {name}") from None
            shutil.copystat(source / name, staging / name)  # its times: what ``changed_in_place`` compares
            return digest

        try:
            manifest_body = (source / MANIFEST).read_bytes()
        except FileNotFoundError:
            raise IntegrityError(f"no {MANIFEST} in {source}") from None
        return _staged(cache_dir, build_id, manifest_body, copy)

    def changed_in_place(self, build_id: str, cache_dir: Path) -> list[str]:
        """The files of the build whose size or time differ from the private copy made of them (one stat each)."""
        source, copy = self.fetch(build_id, cache_dir), cache_dir / build_id
        changed = []
        for path in sorted(copy.iterdir()) if copy.is_dir() else []:
            if path.name == MANIFEST:
                continue
            try:
                now, then = (source / path.name).stat(), path.stat()
            except FileNotFoundError:
                changed.append(path.name)
                continue
            if (now.st_size, now.st_mtime_ns) != (then.st_size, then.st_mtime_ns):
                changed.append(path.name)
        return changed

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

        if (cache_dir / build_id / MANIFEST).is_file():
            return cache_dir / build_id, {}
        try:
            manifest_body = self._get(BUILDS, build_id, MANIFEST)
            return _staged(
                cache_dir, build_id, manifest_body, lambda name, staging: self._download(build_id, name, staging)
            )
        except (BotoCoreError, ClientError) as exc:
            raise IndexUnavailableError(f"cannot download build {build_id} from {self.describe()}: {exc}") from exc

    def changed_in_place(self, build_id: str, cache_dir: Path) -> list[str]:
        """Nothing: an S3 object is never mapped, only the private copy downloaded from it."""
        return []

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


def _staged(
    cache_dir: Path, build_id: str, manifest_body: bytes, fetch_file: Callable[[str, Path], str]
) -> tuple[Path, Mapping[str, str]]:
    """The build in ``cache_dir/<build_id>`` (a complete copy there is reused), each file the manifest lists written
    into a staging folder by ``fetch_file`` (name, folder -> its sha256) and checked against it, the manifest last,
    then renamed into place: a reader never sees half a copy. IntegrityError when a file differs: nothing is kept."""
    target = cache_dir / build_id
    if (target / MANIFEST).is_file():
        return target, {}
    cache_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{build_id}-", dir=cache_dir))
    try:
        manifest = read_manifest(manifest_body)  # admits only the format's plain names: writes stay in staging
        order = sorted(manifest.files, key=lambda name: name not in LARGEST)
        with ThreadPoolExecutor(DOWNLOAD_THREADS) as pool:
            digests = dict(zip(order, pool.map(lambda name: fetch_file(name, staging), order), strict=True))
        for name, digest in digests.items():
            if digest != manifest.files[name]:
                raise IntegrityError(
                    f"index {manifest.build_id}: {name} does not match its sha256 (corrupt or partial)"
                )
        (staging / MANIFEST).write_bytes(manifest_body)  # last: its presence marks a complete copy
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target, digests


def _copy_hashed(source: Path, target: Path) -> str:
    """Copy a file a chunk at a time (read, never mapped: a file shrinking meanwhile is a short read); its sha256."""
    digest = hashlib.sha256()
    with source.open("rb") as stream, target.open("wb") as out:
        while chunk := stream.read(DOWNLOAD_CHUNK):
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


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
    store: IndexStore,
    cache_dir: Path,
    model_fingerprint: str,
    threads: int = 1,
    namespace: str = DEFAULT_NAMESPACE,
    private: bool = False,
) -> Index:
    """Fetch and verify the build ``LATEST`` names (``namespace``: the deployment's, as ``assemble`` reads it). A
    corrupt cached copy is dropped, so a retry refetches it. ``private``: load a local build from a copy of it in
    ``cache_dir`` (a server, which must outlive changes to the published files; a command reads it where it lies)."""
    build_id = store.latest_build_id()
    if isinstance(store, S3IndexStore) or private:
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
