"""`toolrec policy gateway put --pin`: pins are checked against the served catalog before anything is written,
kept under the catalog's names, and read back by the store the service uses (the policy file, DynamoDB on moto;
the index in a directory or on S3)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from build_index.cli import main as toolrec
from handler.policy.dynamodb_store import DynamoPolicyStore, TableNames
from handler.policy.file_store import FilePolicyStore
from handler.policy.model import MAX_PINNED
from handler.ranking.query import Embedder
from tests.support.gateway_app import catalog
from tests.support.serving import publish_tools

TOOLS = catalog("http://worker.test", "http://upstream.test/mcp", "http://dead.test/mcp")
TABLES = TableNames("policy", "connections", "api-keys", "query-log")
PUT = ["gateway", "put", "assistant", "--allow", "Slack.*", "Text.*", "Weather.GetForecast", "--recommendation", "on"]


@pytest.fixture(scope="module")
def index_dir(embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = str(tmp_path_factory.mktemp("pin-index"))
    publish_tools(TOOLS, directory, embedder)
    return directory


@pytest.fixture(autouse=True)
def no_index_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLREC_INDEX_LOCATION", raising=False)


def test_pins_round_trip_through_the_policy_file(tmp_path: Path, index_dir: str) -> None:
    path = tmp_path / "policy.json"
    base = ["policy", "--file", str(path)]
    # Any spelling a call accepts names the tool; the catalog's own name is what is stored and listed.
    assert toolrec([*base, *PUT, "--pin", "text_shout", "Slack.SendMessage", "--index", index_dir]) == 0
    gateway = FilePolicyStore(path).gateway("assistant")
    assert gateway is not None and gateway.pinned == ("Text.Shout", "Slack.SendMessage")
    assert json.loads(path.read_text())["gateways"][0]["pinned"] == ["Text.Shout", "Slack.SendMessage"]

    # `put` replaces the whole gateway, as it does its allow list: no --pin, no pins.
    assert toolrec([*base, *PUT]) == 0
    gateway = FilePolicyStore(path).gateway("assistant")
    assert gateway is not None and gateway.pinned == ()


def test_the_index_comes_from_the_service_variable(
    tmp_path: Path, index_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "policy.json"
    monkeypatch.setenv("TOOLREC_INDEX_LOCATION", index_dir)
    assert toolrec(["policy", "--file", str(path), *PUT, "--pin", "Weather.GetForecast"]) == 0
    gateway = FilePolicyStore(path).gateway("assistant")
    assert gateway is not None and gateway.pinned == ("Weather.GetForecast",)


@pytest.mark.parametrize(
    ("pins", "message"),
    [
        (["Slack.SendMesage", "Text.Shout"], "cannot pin Slack.SendMesage: not in the catalog"),
        # A typo gets the nearest catalog name, as a rule pattern does (issue 26 item 6).
        (["Slack.SendMesage"], "not in the catalog; 'Slack.SendMesage' (did you mean 'Slack.SendMessage'?)"),
        (["Calculator.AddNumbers"], "cannot pin Calculator.AddNumbers: gateway assistant does not allow it"),
        (["Slack.*"], "'Slack.*' is not a tool name: a pin names one tool exactly, never a pattern"),
        (["Text.Shout", "text_shout"], "pinned more than once: Text.Shout, text_shout"),
        ([f"Notes.Entry{i}" for i in range(MAX_PINNED + 1)], f"a gateway pins at most {MAX_PINNED} tools, not 21"),
    ],
)
def test_bad_pins_are_refused_and_nothing_is_written(
    tmp_path: Path, index_dir: str, capsys: pytest.CaptureFixture[str], pins: list[str], message: str
) -> None:
    path = tmp_path / "policy.json"
    assert toolrec(["policy", "--file", str(path), *PUT, "--pin", *pins, "--index", index_dir]) == 2
    assert message in capsys.readouterr().err
    assert not path.exists()


def test_pins_need_a_catalog_to_be_checked_against(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="--pin needs --index"):
        toolrec(["policy", "--file", str(tmp_path / "policy.json"), *PUT, "--pin", "Text.Shout"])
    assert not (tmp_path / "policy.json").exists()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        yield


def test_pins_round_trip_through_dynamodb_against_an_index_on_s3(aws: None, embedder: Embedder) -> None:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="toolrec-index")
    publish_tools(TOOLS, "s3://toolrec-index/acme", embedder, s3)
    tables = ["--policy-table", "policy", "--connections-table", "connections"]
    base = ["policy", "--dynamodb", *tables, "--api-keys-table", "api-keys", "--query-log-table", "query-log"]
    assert toolrec([*base, "create-tables"]) == 0
    pins = ["--pin", "Weather_GetForecast", "Slack.SendMessage", "--index", "s3://toolrec-index/acme"]
    assert toolrec([*base, *PUT, *pins]) == 0

    gateway = DynamoPolicyStore(boto3.client("dynamodb"), TABLES).gateway("assistant")
    assert gateway is not None
    assert (gateway.pinned, gateway.recommendation) == (("Weather.GetForecast", "Slack.SendMessage"), "on")

    assert toolrec([*base, *PUT, "--pin", "Admin.DeleteUser", "--index", "s3://toolrec-index/acme"]) == 2
    kept = DynamoPolicyStore(boto3.client("dynamodb"), TABLES).gateway("assistant")
    assert kept == gateway  # the refused change wrote nothing
