"""nearest_name: the one did-you-mean rule of the API and the policy CLI (handler/catalog/names.py)."""

from __future__ import annotations

import pytest

from handler.catalog.names import MAX_SUGGESTED_CHARS, nearest_name

TOOLS = ["Weather.GetForecast", "Weather.GetAlerts", "Slack.SendMessage", "Slack.ListChannels"]


@pytest.mark.parametrize(
    ("typed", "nearest"),
    [
        ("Slack.SendMesage", "Slack.SendMessage"),
        ("slack_sendmesage", "Slack.SendMessage"),  # any case, `_` for `.`, as every lookup by name reads it
        ("Slakc.SendMessage", "Slack.SendMessage"),
        ("Weather.GetForcast", "Weather.GetForecast"),
        # The app's name alone makes no tool of it near: the part after it must be.
        ("Weather.Teleport", None),
        ("Slack.Teleport", None),
        ("NotATool", None),
    ],
)
def test_the_nearest_name_or_none(typed: str, nearest: str | None) -> None:
    assert nearest_name(typed, TOOLS) == nearest


def test_only_the_names_given_are_suggested() -> None:
    # The caller passes the names the asker may see: a denied tool is simply not among them.
    assert nearest_name("Slack.SendMesage", [t for t in TOOLS if t != "Slack.SendMessage"]) is None


def test_a_name_too_long_to_be_typed_gets_no_suggestion() -> None:
    long_name = "Slack.SendMessage" + "e" * MAX_SUGGESTED_CHARS
    assert nearest_name(long_name, TOOLS) is None
    assert nearest_name("Slack.SendMesage", [*TOOLS, long_name]) == "Slack.SendMessage"


def test_gateway_ids_compare_whole() -> None:
    assert nearest_name("defualt", ["default", "sms", "support"]) == "default"
    assert nearest_name("smss", ["default", "sms"]) == "sms"
    assert nearest_name("nope", ["default", "support"]) is None
