"""Tool records kept as JSON lines and parsed on demand: the same tools come back, in order, and nothing is
parsed before it is asked for."""

from __future__ import annotations

import json

import pytest

from handler.catalog.tool import Requirements, Tool
from handler.errors import IntegrityError
from handler.index import records as records_module
from handler.index.records import ToolKeys, ToolRecords, to_jsonl

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}
TOOLS = [
    Tool(name="Slack.SendMessage", description="Send a message.\nSecond line", input_schema=SCHEMA, app="Slack"),
    Tool(
        name="Gmail.Send",
        description="Envoyer un e-mail — « vite » \u2028 ok",
        input_schema=SCHEMA,
        app="Gmail",
        requirements=Requirements(authorization="gmail", scopes=("send",)),
    ),
    Tool(name="lookup", description="A tool outside the App.ToolName convention", input_schema=SCHEMA, app="Misc"),
]


def records(tools: list[Tool]) -> ToolRecords:
    keys = ToolKeys.from_json(ToolKeys.of(tools).to_json())
    return ToolRecords(to_jsonl(tools).encode("utf-8"), keys)


def test_records_round_trip_in_index_order() -> None:
    loaded = records(TOOLS)
    assert len(loaded) == 3
    assert list(loaded) == TOOLS
    assert loaded[-1] == TOOLS[-1] and loaded[1:] == TOOLS[1:]
    with pytest.raises(IndexError):
        loaded[3]


def test_keys_hold_what_every_request_needs() -> None:
    keys = ToolKeys.of(TOOLS)
    assert keys.names == ("Slack.SendMessage", "Gmail.Send", "lookup")
    assert keys.apps == ("Slack", "Gmail", "Misc")
    assert keys.needs_authorization.tolist() == [False, True, False]


def test_a_record_is_parsed_only_when_asked_for() -> None:
    lines = to_jsonl(TOOLS).split("\n")  # only "\n" ends a record (not the U+2028 in TOOLS[1])
    lines[2] = "{not json}"  # a broken last record: the others still serve
    loaded = ToolRecords("\n".join(lines).encode("utf-8"), ToolKeys.of(TOOLS))
    assert loaded[0] == TOOLS[0]
    with pytest.raises(IntegrityError, match=r"tool record 2 \(lookup\) is invalid"):
        loaded[2]


def test_only_the_most_recently_read_records_stay_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(records_module, "PARSED_RECORDS", 2)
    many = [Tool(name=f"App.Tool{i}", description=f"Tool {i}", input_schema=SCHEMA, app="App") for i in range(50)]
    loaded = records(many)
    for _ in range(3):
        assert list(loaded) == many  # read again after being dropped: the same records
    assert loaded[49] is loaded[49]  # the last read stays parsed
    cached = loaded._parsed.cache_info()
    assert cached.currsize == 2 and cached.maxsize == 2


def test_records_that_disagree_with_their_keys_are_refused() -> None:
    with pytest.raises(IntegrityError, match="holds 2 records for 3 tool keys"):
        ToolRecords(to_jsonl(TOOLS[:2]).encode("utf-8"), ToolKeys.of(TOOLS))
    swapped = ToolRecords(to_jsonl([TOOLS[1], TOOLS[0], TOOLS[2]]).encode("utf-8"), ToolKeys.of(TOOLS))
    with pytest.raises(IntegrityError, match=r"tool record 0 is 'Gmail.Send', its key says 'Slack.SendMessage'"):
        swapped[0]


def test_inconsistent_key_lists_are_refused() -> None:
    raw = json.loads(ToolKeys.of(TOOLS).to_json())
    raw["apps"].pop()
    with pytest.raises(IntegrityError, match="3 names, 2 apps, 3 flags"):
        ToolKeys.from_json(json.dumps(raw))
