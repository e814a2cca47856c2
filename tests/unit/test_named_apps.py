"""The apps a step names (handler/ranking/named_apps.py)."""

from __future__ import annotations

from handler.ranking.named_apps import NamedApps, app_key

NAMES = [
    "Slack.SendMessage",
    "GoogleCalendar.CreateEvent",
    "ZohoBooksApi.CreateInvoice",
    "X.PostTweet",
    "Box.UploadFile",
]


def test_an_app_is_named_by_its_words_joined_or_apart() -> None:
    apps = NamedApps.of(NAMES)
    assert apps.named("post it in #eng on slack") == {"slack"}
    assert apps.named("book it on my google calendar") == {"googlecalendar"}
    assert apps.named("add it to my googlecalendar and ping slack") == {"googlecalendar", "slack"}
    assert apps.named("send the invoice from zoho books") == {"zohobooks"}  # "Api" is not part of the name


def test_a_short_app_name_is_never_read_as_named() -> None:
    apps = NamedApps.of(NAMES)
    assert apps.named("put the box in x") == frozenset()
    assert app_key("X") == "x" and "x" not in apps.keys


def test_each_tool_knows_its_app() -> None:
    assert NamedApps.of(["Slack.SendMessage", "bare_function"]).app_of_tool == ("slack", "")
