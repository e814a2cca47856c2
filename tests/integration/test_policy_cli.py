"""`toolrec policy` against the policy file: every kind of record, read back through the store the service uses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from build_index.cli import main as toolrec
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
