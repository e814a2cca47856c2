"""`toolrec policy` against the policy file: every kind of record, read back through the store the service uses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from build_index.cli import main as toolrec
from build_index.ops.serve import prepare_embedded_default
from handler.inference.embedder import OnnxEmbedder
from handler.policy.file_store import FilePolicyStore
from handler.policy.keys import hash_key


def test_policy_cli_writes_every_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "policy.json"
    base = ["policy", "--file", str(path)]
    for args in [
        ["gateway", "put", "sales", "--allow", "Salesforce.*", "Slack.SendMessage", "--recommendation", "off"],
        ["rule", "put", "--subject", "*", "--rule-id", "all", "--effect", "allow", "--tools", "*"],
        ["rule", "put", "--subject", "bob", "--rule-id", "no-pay", "--effect", "deny", "--tools", "Stripe.*"],
        ["app", "put", "Slack", "--name", "Slack", "--authorize-url", "https://auth.example.test/slack"],
        ["connection", "put", "bob", "Slack", "--account", "bob@acme.test", "--scope", "chat:write", "--scope", "x"],
    ]:
        assert toolrec([*base, *args]) == 0
    assert toolrec([*base, "key", "create", "--gateway", "sales"]) == 0
    key = re.search(r"^(trk_\S+)$", capsys.readouterr().out, re.M)
    assert key, "a generated key is printed once"

    store = FilePolicyStore(path)
    gateway = store.gateway("sales")
    assert gateway is not None and (gateway.allowed, gateway.recommendation) == (
        ("Salesforce.*", "Slack.SendMessage"),
        "off",
    )
    assert sorted(r.rule_id for r in store.access_rules("bob")) == ["all", "no-pay"]
    assert store.connections("bob")[0].scopes == ("chat:write", "x")
    record = store.api_key(hash_key(key.group(1)))
    assert record is not None and record.gateway_id == "sales"
    assert key.group(1) not in path.read_text()

    assert toolrec([*base, "key", "revoke", key.group(1)]) == 0
    assert toolrec([*base, "connection", "delete", "bob", "Slack"]) == 0
    assert store.api_key(hash_key(key.group(1))) is None and store.connections("bob") == []


def test_policy_cli_refuses_bad_patterns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert toolrec(["policy", "--file", str(tmp_path / "p.json"), "gateway", "put", "g", "--allow", "Sla*"]) == 2
    assert "'Sla*' is not a tool pattern" in capsys.readouterr().err
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("name", ["Slack.Send Message", "Slack.Send*", "Slack.Send-Message"])
def test_every_name_the_build_takes_a_rule_can_name(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One rule (handler/catalog/names.py name_problem) for catalog names and exact patterns (issue 22): before,
    "Slack.Send Message" built and `toolrec policy` refused it, so nothing could allow or deny that tool alone."""
    row = {"name": name, "description": "Send a message to a Slack channel.", "input_schema": {}, "app": "Slack"}
    catalog = tmp_path / "tools.jsonl"
    catalog.write_text(json.dumps(row) + "\n")
    index = tmp_path / "index"
    built = toolrec(["build", "--catalog", str(catalog), "--out", str(index), "--quiet"])
    rule = ["rule", "put", "--subject", "bob", "--rule-id", "r", "--effect", "deny", "--tools", name]
    written = toolrec(["policy", "--file", str(tmp_path / "policy.json"), *rule, "--index", str(index)])
    err = capsys.readouterr().err
    assert (built, written) in ((0, 0), (2, 2)), err
    if built:
        assert f"tool name {name!r} holds whitespace or '*'" in err and not index.exists()
        assert f"{name!r} is not a tool pattern" in err


@pytest.fixture(scope="module")
def served_root(tmp_path_factory: pytest.TempPathFactory, embedder: OnnxEmbedder) -> Path:
    """The layout `toolrec serve` leaves: the demo index and the demo policy side by side."""
    root = tmp_path_factory.mktemp("serve") / ".toolrec"
    prepare_embedded_default(root, embedder, "trk_policy-cli-test-key")
    return root


def test_list_and_show_say_what_the_file_holds(served_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = str(served_root / "policy.json")
    assert toolrec(["policy", "--file", policy, "list"]) == 0
    out, err = capsys.readouterr()
    assert "gateway default: allows *, recommendation auto" in out.splitlines()
    assert "rule everyone for *: allow *" in out and "connection demo-user -> GoogleCalendar: connected" in out
    assert "connection demo-user -> Slack: not connected" in out  # six Slack tools need scopes it lacks
    assert f"reading {served_root.resolve() / 'policy.json'}" in err
    assert toolrec(["policy", "--file", policy, "show"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == json.loads((served_root / "policy.json").read_text())
    assert "trk_policy-cli-test-key" not in json.dumps(shown)


@pytest.mark.parametrize(
    ("pattern", "hint"), [("Slakc.*", "(did you mean 'Slack.*'?)"), ("NotATool", ""), ("Slack.SendMesage", "Slack.")]
)
def test_a_pattern_that_matches_no_tool_is_refused(
    served_root: Path, capsys: pytest.CaptureFixture[str], pattern: str, hint: str
) -> None:
    policy = served_root / "policy.json"
    before = policy.read_text()
    rule = ["rule", "put", "--subject", "bob", "--rule-id", "r", "--effect", "deny", "--tools", pattern]
    for args in (["gateway", "put", "g", "--allow", "Slack.*", pattern], rule):
        assert toolrec(["policy", "--file", str(policy), *args]) == 2
        err = capsys.readouterr().err
        assert f"{pattern!r}" in err and "matches no tool of the index at" in err and hint in err, err
    assert policy.read_text() == before  # nothing written
    assert toolrec(["policy", "--file", str(policy), "gateway", "put", "chat", "--allow", "slack.*"]) == 0
    elsewhere = ["policy", "--file", str(served_root.parent / "elsewhere.json"), *rule]
    assert toolrec([*elsewhere, "--index", str(served_root / "index")]) == 2  # named: checked against it
    assert "matches no tool of the index at" in capsys.readouterr().err


def test_deleting_what_does_not_exist_says_so(served_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["policy", "--file", str(served_root / "policy.json")]
    for args, what in [
        (["gateway", "delete", "nope"], "no gateway nope: nothing deleted"),
        (["rule", "delete", "--subject", "*", "--rule-id", "nope"], "no rule nope of *: nothing deleted"),
        (["connection", "delete", "demo-user", "Stripe"], "no connection of demo-user to Stripe: nothing deleted"),
        (["key", "revoke", "trk_never-issued"], "no such API key: nothing deleted"),
    ]:
        assert toolrec([*base, *args]) == 1
        assert what in capsys.readouterr().err


def test_a_rule_id_alone_deletes_the_one_rule_of_that_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 26 item 6: `rule delete --rule-id x` demanded --subject even when only one subject has rule x."""
    base = ["policy", "--file", str(tmp_path / "policy.json")]
    for subject, rule_id in (("alice", "quiet"), ("alice", "shared"), ("bob", "shared")):
        put = ["rule", "put", "--subject", subject, "--rule-id", rule_id, "--effect", "deny", "--tools", "*"]
        assert toolrec([*base, *put]) == 0
    assert toolrec([*base, "rule", "delete", "--rule-id", "quiet"]) == 0
    assert "rule quiet of alice deleted" in capsys.readouterr().out
    assert toolrec([*base, "rule", "delete", "--rule-id", "shared"]) == 2  # which one is ambiguous: nothing deleted
    assert "rule shared exists for alice, bob: give --subject" in capsys.readouterr().err
    assert toolrec([*base, "rule", "delete", "--rule-id", "nope"]) == 1
    assert "no rule nope: nothing deleted" in capsys.readouterr().err
    left = FilePolicyStore(tmp_path / "policy.json").document().access_rules
    assert [(r.subject, r.rule_id) for r in left] == [("alice", "shared"), ("bob", "shared")]


def test_the_default_file_is_never_created_silently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # another folder than the one `toolrec serve` ran in
    monkeypatch.delenv("TOOLREC_POLICY_FILE", raising=False)
    monkeypatch.delenv("TOOLREC_INDEX_LOCATION", raising=False)
    put = ["gateway", "put", "g", "--allow", "*"]
    assert toolrec(["policy", *put]) == 1
    err = capsys.readouterr().err
    assert f"no policy file at {tmp_path.resolve() / '.toolrec' / 'policy.json'}" in err and "--create" in err
    assert not (tmp_path / ".toolrec").exists()
    assert toolrec(["policy", "--create", *put]) == 0
    assert "yet: this change creates it" in capsys.readouterr().err
    assert toolrec(["policy", "rule", "put", "--subject", "*", "--rule-id", "a", "--effect", "allow",
                    "--tools", "Slack.*"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert f"editing {tmp_path.resolve() / '.toolrec' / 'policy.json'}" in err
    assert "not checked against a catalog: give --index" in err
    assert toolrec(["policy", "--file", str(tmp_path / "named.json"), *put]) == 0  # named: created, and said
    assert "yet: this change creates it" in capsys.readouterr().err


def test_list_reads_dynamodb_too(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from moto import mock_aws

    for option in ("policy", "connections", "api_keys", "query_log"):
        monkeypatch.setenv(f"TOOLREC_{option.upper()}_TABLE", f"t-{option}")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("TOOLREC_INDEX_LOCATION", raising=False)
    with mock_aws():
        assert toolrec(["policy", "--dynamodb", "create-tables"]) == 0
        assert toolrec(["policy", "--dynamodb", "gateway", "put", "crm", "--allow", "HubSpot.*"]) == 0
        assert toolrec(["policy", "--dynamodb", "gateway", "delete", "nope"]) == 1
        capsys.readouterr()
        assert toolrec(["policy", "--dynamodb", "list"]) == 0
        out, err = capsys.readouterr()
    assert out.strip() == "gateway crm: allows HubSpot.*, recommendation auto"
    assert "reading the DynamoDB tables t-policy, t-connections, t-api_keys, t-query_log" in err
