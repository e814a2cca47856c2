"""The apps a step names (handler/ranking/named_apps.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handler.ranking.named_apps import NamedApps, app_key, app_words, named_first

NAMES = [
    "Slack.SendMessage",
    "Stripe.ListInvoices",
    "Customerio.IdentifyPerson",
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


def test_a_catalog_mostly_of_bare_functions_has_no_app_to_name() -> None:
    topics = ["restaurant.search", "math.factorial"] + [f"get_thing_{i}" for i in range(8)]
    assert NamedApps.of(topics).named("find a restaurant and do some math") == frozenset()
    assert NamedApps.of(topics[:2]).named("find a restaurant") == {"restaurant"}


def test_a_name_other_apps_tools_hold_more_often_than_its_own_is_a_topic() -> None:
    names = ["Image.Blur", "Image.Crop", "PhotoTools.ResizeImage", "Thumbs.ImageThumbnail", "Cdn.UploadImage"]
    texts = ["image blur", "image crop", "photo tools resize image", "thumbs image thumbnail", "cdn upload image"]

    def holding(wanted: tuple[str, ...]) -> int:
        return sum(1 for text in texts if all(w in text.split() for w in wanted))

    apps = NamedApps.of(names, holding)
    assert apps.named("blur the image") == frozenset()  # three other apps' tools say "image", it has two
    assert apps.named("resize it with photo tools") == {"phototools"}


def test_each_tool_knows_its_app() -> None:
    assert NamedApps.of(["Slack.SendMessage", "bare_function"]).app_of_tool == ("slack", "")


@pytest.mark.parametrize(
    ("app", "key"),
    [("GitHubAPI", "github"), ("ZohoBooksApi", "zohobooks"), ("my_Toolkit", "my"), ("Api", "api"), ("ΟΔΟΣ_Α", "οδοςα")],
)
def test_an_apps_key_is_its_name_without_separators_or_suffix(app: str, key: str) -> None:
    assert app_key(app) == key


@given(st.text(alphabet=st.sampled_from("AaPpIiΣσς._-/: \tkitTolx"), max_size=24) | st.text(max_size=24))
def test_an_apps_key_is_its_words_joined(app: str) -> None:
    # The key is read without splitting the name into words (a catalog's apps are keyed at every index load).
    assert app_key(app) == "".join(app_words(app))


def test_an_address_names_no_app_unless_it_is_the_apps_name() -> None:
    apps = NamedApps.of(NAMES)
    assert apps.named("crawl docs.stripe.com, only the /api paths") == frozenset()
    assert apps.named("email ana@slack.com the notes") == frozenset()
    assert apps.named("open https://slack.com/help") == frozenset()
    assert apps.named("list the stripe invoices for ana@globex.com") == {"stripe"}
    assert apps.named("add kim@startup.io to customer.io with plan=pro") == {"customerio"}


def test_the_named_apps_tools_go_first_each_side_in_its_order() -> None:
    apps = NamedApps.of(NAMES)
    chosen = [2, 0, 5, 1]  # Customerio, Slack, GoogleCalendar, Stripe (positions in NAMES)
    assert named_first(apps, apps.named("then tell #eng on slack"), chosen) == [1, 0, 2, 3]
    assert named_first(apps, apps.named("in stripe or on slack"), chosen) == [1, 3, 0, 2]
    assert named_first(apps, apps.named("no app here"), chosen) == [0, 1, 2, 3]
