"""Build -> publish (local directory and S3 under moto) -> load -> query, with LATEST written last."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pytest
from moto import mock_aws

from build_index.build import index_tools
from build_index.cli import main
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from handler.catalog.tool import Tool
from handler.index.format import LATEST, MANIFEST, BuiltIndex
from handler.index.load import Index
from handler.index.store import LocalIndexStore, S3IndexStore, load_latest
from handler.inference.embedder import OnnxEmbedder
from handler.ranking.retriever import Method
from infra.publish import publish_directory

BUCKET = "toolrec-test-indexes"


@pytest.fixture(scope="module")
def built(arcade_tools: list[Tool], embedder: OnnxEmbedder) -> BuiltIndex:
    return index_tools(arcade_tools, embedder, MODEL_ID, progress=False)


@pytest.fixture(scope="module")
def newer(built: BuiltIndex, embedder: OnnxEmbedder) -> BuiltIndex:
    """Another build (a smaller catalog), so its build id differs from ``built``'s even within one second."""
    return index_tools(built.tools[:5], embedder, MODEL_ID, progress=False)


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def ask(index: Index, embedder: OnnxEmbedder, query: str, method: Method = Method.HYBRID) -> list[str]:
    hits = index.ranking.rank(query, embedder.embed(query), 5, method=method)
    return [index.tools[h.index].name for h in hits]


def assert_answers_queries(index: Index, embedder: OnnxEmbedder, tools: list[Tool]) -> None:
    assert [t.name for t in index.tools] == [t.name for t in tools]
    assert index.tools[0].input_schema == tools[0].input_schema  # full schemas come back for the agent
    assert ask(index, embedder, "Jira.SearchIssuesWithJql")[0] == "Jira.SearchIssuesWithJql"
    assert ask(index, embedder, "Jira_SearchIssuesWithJql", Method.BM25)[0] == "Jira.SearchIssuesWithJql"
    assert "Math.Add" in ask(index, embedder, "add two numbers together")
    assert "Daytona.GitPull" in ask(index, embedder, "pull the latest changes from the remote git repository")
    assert "Github.ListPullRequestCommits" in ask(index, embedder, "which commits are in this pull request?")


def test_cli_build_to_a_directory_then_load_and_query(
    arcade_tools: list[Tool], embedder: OnnxEmbedder, write_catalog: Callable[..., Path], tmp_path: Path
) -> None:
    catalog = write_catalog(arcade_tools)
    out = tmp_path / "index"
    assert main(["build", "--catalog", str(catalog), "--out", str(out), "--quiet"]) == 0
    build_id = (out / LATEST).read_text().strip()
    assert (out / "builds" / build_id / MANIFEST).is_file()
    index = load_latest(LocalIndexStore(out), tmp_path / "cache", embedder.fingerprint)
    assert index.manifest.build_id == build_id and index.manifest.tool_count == len(arcade_tools)
    assert_answers_queries(index, embedder, arcade_tools)


def test_loaded_index_scores_like_the_built_one(built: BuiltIndex, embedder: OnnxEmbedder, tmp_path: Path) -> None:
    publish(built, str(tmp_path / "index"))
    index = load_latest(LocalIndexStore(tmp_path / "index"), tmp_path / "cache", embedder.fingerprint)
    for query in ["send a message", "delete a label in gmail", "list teams"]:
        np.testing.assert_array_equal(index.ranking.bm25.score(index.ranking.analyzer(query)),
                                      built.bm25.score(built.analyzer(query)))  # fmt: skip


def test_build_to_s3_then_cold_load_and_query(
    arcade_tools: list[Tool], embedder: OnnxEmbedder, write_catalog: Callable[..., Path], s3: Any, tmp_path: Path
) -> None:
    catalog = write_catalog(arcade_tools)
    # The CLI creates its own boto3 client, as it does in CI; moto intercepts it.
    assert main(["build", "--catalog", str(catalog), "--out", f"s3://{BUCKET}/tenant-a/", "--quiet"]) == 0
    store = S3IndexStore(s3, BUCKET, "tenant-a")
    cache = tmp_path / "lambda-tmp"
    index = load_latest(store, cache, embedder.fingerprint)
    assert (cache / index.manifest.build_id / MANIFEST).is_file()
    assert_answers_queries(index, embedder, arcade_tools)
    # A second cold start in the same container reuses the verified copy instead of downloading it again.
    calls: list[str] = []
    s3.meta.events.register("before-call.s3.GetObject", lambda **kw: calls.append(kw["params"]["url_path"]))
    assert load_latest(store, cache, embedder.fingerprint).manifest.build_id == index.manifest.build_id
    assert len(calls) == 1  # LATEST only


def test_latest_is_written_last_on_s3(built: BuiltIndex, s3: Any) -> None:
    keys: list[str] = []
    s3.meta.events.register("provide-client-params.s3.PutObject", lambda params, **_: keys.append(params["Key"]))
    manifest = publish(built, f"s3://{BUCKET}/idx", s3_client=s3)
    prefix = f"idx/builds/{manifest.build_id}/"
    assert keys[-1] == f"idx/{LATEST}"
    assert keys[-2] == prefix + MANIFEST  # the manifest after every file it describes
    assert sorted(keys[:-2]) == sorted(prefix + name for name in manifest.files)


def test_the_deploy_publishes_the_local_build_as_built(
    built: BuiltIndex, embedder: OnnxEmbedder, s3: Any, tmp_path: Path
) -> None:
    local = publish(built, str(tmp_path / "index"))
    keys: list[str] = []
    s3.meta.events.register("provide-client-params.s3.PutObject", lambda params, **_: keys.append(params["Key"]))
    assert publish_directory(tmp_path / "index", f"s3://{BUCKET}/deployed/", s3) == local.build_id
    assert keys[-2:] == [f"deployed/builds/{local.build_id}/{MANIFEST}", f"deployed/{LATEST}"]
    index = load_latest(S3IndexStore(s3, BUCKET, "deployed"), tmp_path / "cache", embedder.fingerprint)
    assert index.manifest == local


def test_a_half_published_s3_build_is_invisible(
    built: BuiltIndex, newer: BuiltIndex, embedder: OnnxEmbedder, s3: Any, tmp_path: Path
) -> None:
    old = publish(built, f"s3://{BUCKET}/idx", s3_client=s3)

    def crash_before_latest(params: dict[str, Any], **_: Any) -> None:
        if params["Key"].endswith(LATEST):
            raise ConnectionError("the build machine died here")

    s3.meta.events.register("provide-client-params.s3.PutObject", crash_before_latest)
    with pytest.raises(ConnectionError):
        publish(newer, f"s3://{BUCKET}/idx", s3_client=s3)
    s3.meta.events.unregister("provide-client-params.s3.PutObject", crash_before_latest)
    builds = {k["Key"].split("/")[2] for k in s3.list_objects_v2(Bucket=BUCKET, Prefix="idx/builds/")["Contents"]}
    assert len(builds) == 2  # the new build's files are all there ...
    index = load_latest(S3IndexStore(s3, BUCKET, "idx"), tmp_path / "cache", embedder.fingerprint)
    assert index.manifest.build_id == old.build_id  # ... but readers still see the old one


def test_a_half_published_local_build_is_invisible(
    built: BuiltIndex, newer: BuiltIndex, embedder: OnnxEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "index"
    old = publish(built, str(root))

    def crash(path: Path, text: str) -> None:
        raise OSError("disk full while writing LATEST")

    monkeypatch.setattr("build_index.publish._atomic_write", crash)
    with pytest.raises(OSError, match="disk full"):
        publish(newer, str(root))
    assert len(list((root / "builds").iterdir())) == 2
    assert (
        load_latest(LocalIndexStore(root), tmp_path / "cache", embedder.fingerprint).manifest.build_id == old.build_id
    )


def test_republishing_the_same_build_is_harmless(built: BuiltIndex, embedder: OnnxEmbedder, tmp_path: Path) -> None:
    root = tmp_path / "index"
    first, second = publish(built, str(root)), publish(built, str(root))  # usually within the same second
    assert (root / LATEST).read_text().strip() == second.build_id
    assert {p.name for p in (root / "builds").iterdir()} == {first.build_id, second.build_id}  # no staging left
    assert load_latest(LocalIndexStore(root), tmp_path / "cache", embedder.fingerprint).manifest.tool_count == 40
