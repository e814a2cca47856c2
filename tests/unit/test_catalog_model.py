"""What a catalog entry accepts: fields the format does not know, versioned names and non-object schemas are refused."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from handler.catalog.tool import Tool

BASE = {
    "name": "Slack.SendMessage",
    "description": "Send a message.",
    "input_schema": {"type": "object"},
    "app": "Slack",
}


def test_extra_catalog_fields_are_refused() -> None:
    # Dropped, a misspelled "executor" would silently build a tool without one (issue 33 item 6).
    with pytest.raises(ValidationError, match="executer"):
        Tool.model_validate({**BASE, "executer": {"kind": "http", "target": "http://127.0.0.1:1/"}})


@pytest.mark.parametrize(
    "name",
    [
        "Slack.SendMessage@2.1.0",
        "Slack.SendMessage@3",
        "Slack.SendMessage_v2",
        "Slack.SendMessageV2",
        "Slack.SendMessage-1.2",
        "Slack.SendMessage.v3",
    ],
)
def test_versioned_names_are_refused(name: str) -> None:
    with pytest.raises(ValidationError, match="no version numbers"):
        Tool.model_validate({**BASE, "name": name})


@pytest.mark.parametrize("name", ["Net.LookupIpv4", "Codec.Base64Encode", "Aws.S3PutObject", "Math.Log_10", "Net.IPV4"])
def test_names_ending_in_digits_that_are_not_versions_pass(name: str) -> None:
    assert Tool.model_validate({**BASE, "name": name}).name == name


def test_executor_fields_stay_strict() -> None:
    with pytest.raises(ValidationError, match="Extra inputs"):
        Tool.model_validate({**BASE, "executor": {"kind": "http", "target": "http://127.0.0.1:1/", "url": "x"}})


def test_input_schema_must_be_an_object_schema() -> None:
    with pytest.raises(ValidationError, match="type object"):
        Tool.model_validate({**BASE, "input_schema": {"type": "array"}})
