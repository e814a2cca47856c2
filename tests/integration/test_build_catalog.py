"""`toolrec build` validates every catalog row: a bad row is reported as file:line and reason, and nothing is built."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from build_index.cli import main
from build_index.ingest.catalog_files import read_catalogs
from handler.errors import CatalogError

GOOD = {
    "name": "Slack.SendMessage",
    "description": "Send a message.",
    "input_schema": {"type": "object"},
    "app": "Slack",
}


def row(**changes: object) -> str:
    return json.dumps({**GOOD, **changes})


def test_each_bad_row_is_reported_with_its_line_and_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog = tmp_path / "tools.jsonl"
    lines = [
        row(),  # 1: good
        '{"name": "Slack.ListChannels", "description": ',  # 2: not JSON
        json.dumps({k: v for k, v in GOOD.items() if k != "description"} | {"name": "Slack.A"}),  # 3: missing field
        row(name="Slack.B", input_schema={"type": "string"}),  # 4: schema not an object
        row(name="Slack.C", app=5),  # 5: wrong type
        "",  # 6: blank lines are allowed
        row(name="Slack.SendMessage@2.1.0"),  # 7: versioned name
        row(),  # 8: duplicate of line 1
        row(name="Slack.D", executor={"kind": "ftp", "target": "x"}),  # 9: unknown executor kind
    ]
    catalog.write_text("\n".join(lines) + "\n")
    out = tmp_path / "index"

    assert main(["build", "--catalog", str(catalog), "--out", str(out), "--quiet"]) != 0

    err = capsys.readouterr().err
    assert "7 invalid catalog row(s); nothing was built" in err
    expected = {
        2: "not JSON",
        3: "description: Field required",
        4: "input_schema: Value error, input_schema must be a JSON Schema of type object",
        5: "app: Input should be a valid string",
        7: "name: Value error, tool names carry no version numbers",
        8: f"duplicate tool name 'Slack.SendMessage' (first at {catalog}:1)",
        9: "executor.kind: Input should be 'http', 'mcp' or 'lambda'",
    }
    for line_no, reason in expected.items():
        assert f"{catalog}:{line_no}: {reason}" in err
    assert f"{catalog}:1:" not in err and f"{catalog}:6:" not in err
    assert "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("command", ["build", "lint"])
def test_rows_that_would_build_but_mislead_are_refused_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Issue 26 item 4: each of these built (the empty description with a lint warning only)."""
    catalog = tmp_path / "tools.jsonl"
    lines = [
        row(name="Garage.CloseDoor", app="Garage"),  # 1: good
        row(name="Foo.Bar", app="Baz"),  # 2: App.* rules would read Foo, authorization Baz
        row(name="Slack.Blank", description=""),  # 3: nothing to match or choose by
        row(name="Slack.Spaces", description=" \n\t\n "),  # 4: blank lines only
        row(name="Garage.Close_Door", app="Garage"),  # 5: reads as line 1
        row(name="garage.close-door", app="garage"),  # 6: so does this one
    ]
    catalog.write_text("\n".join(lines) + "\n")
    out = tmp_path / "index"
    args = ["--out", str(out), "--quiet"] if command == "build" else []
    assert main([command, "--catalog", str(catalog), *args]) == 2
    err = capsys.readouterr().err
    assert "5 invalid catalog row(s); nothing was built" in err
    expected = {
        2: "tool name 'Foo.Bar' is of app 'Foo' but its row says app 'Baz'",
        3: "tool 'Slack.Blank' has an empty description",
        4: "tool 'Slack.Spaces' has an empty description",
        5: f"tool name 'Garage.Close_Door' reads as 'Garage.CloseDoor' (at {catalog}:1)",
        6: f"tool name 'garage.close-door' reads as 'Garage.CloseDoor' (at {catalog}:1)",
    }
    for line_no, reason in expected.items():
        assert f"{catalog}:{line_no}: {reason}" in err, err
    assert not out.exists()


def test_duplicates_across_catalog_files_name_both_places(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(row() + "\n")
    second.write_text(row(name="Slack.Other") + "\n" + row() + "\n")
    with pytest.raises(
        CatalogError, match=rf"{second}:2: duplicate tool name 'Slack.SendMessage' \(first at {first}:1\)"
    ):
        read_catalogs([first, second])


def test_many_bad_rows_are_counted_and_the_report_stays_short(tmp_path: Path) -> None:
    catalog = tmp_path / "tools.jsonl"
    catalog.write_text("".join("not json\n" for _ in range(50)))
    with pytest.raises(CatalogError) as error:
        read_catalogs([catalog])
    message = str(error.value)
    assert message.startswith("50 invalid catalog row(s)")
    assert f"{catalog}:20:" in message and f"{catalog}:21:" not in message and "... and 30 more" in message


@pytest.mark.parametrize("content", ["", "\n  \n"])
def test_an_empty_catalog_builds_nothing(tmp_path: Path, content: str) -> None:
    catalog = tmp_path / "tools.jsonl"
    catalog.write_text(content)
    with pytest.raises(CatalogError, match="no tools in"):
        read_catalogs([catalog])


def test_an_unreadable_catalog_is_a_catalog_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="cannot read catalog"):
        read_catalogs([tmp_path / "missing.jsonl"])
    (tmp_path / "latin1.jsonl").write_bytes(b'{"name": "Caf\xe9"}\n')
    with pytest.raises(CatalogError, match="cannot read catalog"):
        read_catalogs([tmp_path / "latin1.jsonl"])
