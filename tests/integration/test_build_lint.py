"""`toolrec lint` on small catalogs written here, through the command line, with the real embedding model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from build_index.cli import main
from handler.inference.model_files import default_model_dir

ROWS = [
    ("Slack.SendMessage", "Send a message to a Slack channel.\nLonger details that matching never reads."),
    ("Slack.PostMessage", "Sends a message to a Slack channel."),  # cosine 0.974 with the one above
    ("Github.CreateIssue", "Create an issue in a GitHub repository."),
    ("Jira.CreateIssue", "Create an issue in a Jira project."),  # same shape, other service: cosine 0.55
    ("send_email", "Send an email to one or more recipients."),  # not App.ToolName
    ("Util.Helper", "Helper function"),
    ("Util.Endpoint", "API endpoint"),
    ("Util.DoIt", "Does stuff"),
    ("Util.SendIt", "Send it to them now."),
    ("Weather.GetForecast", "Get the weather forecast for a city."),
]


def write(path: Path, rows: list[tuple[str, str]]) -> Path:
    lines = [json.dumps({"name": n, "description": d, "input_schema": {"type": "object"}, "app": n.split(".")[0]})
             for n, d in rows]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


def lint(*args: str) -> list[str]:
    return ["lint", *args, "--model-dir", str(default_model_dir())]


def test_lint_reports_each_problem_as_name_and_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog = write(tmp_path / "tools.jsonl", ROWS)
    assert main(lint("--catalog", str(catalog))) == 1
    lines = capsys.readouterr().out.splitlines()
    # The cosine's last digits follow the CPU's int8 kernels (test_build_model.py); its form and bound do not.
    cosines = [float(c) for c in re.findall(r"cosine (\d\.\d{3}) >= 0\.95", "\n".join(lines))]
    assert len(cosines) == 2 and all(0.95 <= c <= 1.0 for c in cosines)
    assert [re.sub(r"cosine \d\.\d{3}", "cosine C", line) for line in lines[:-1]] == [
        "Slack.SendMessage: first line nearly duplicates Slack.PostMessage's (cosine C >= 0.95)",
        "Slack.PostMessage: first line nearly duplicates Slack.SendMessage's (cosine C >= 0.95)",
        "send_email: name is not in App.ToolName form",
        "Util.Helper: vague first line 'Helper function': 2 word(s), say what it does to which service or object",
        "Util.Endpoint: vague first line 'API endpoint': 2 word(s), say what it does to which service or object",
        "Util.DoIt: vague first line 'Does stuff': 2 word(s), say what it does to which service or object",
        "Util.SendIt: first line 'Send it to them now.' names no service or object (only 'send' is specific)",
    ]
    assert lines[-1] == "7 problem(s) in 7 of 10 tools (name-form 1, near-duplicate 2, no-object 1, vague 3)"


def test_lint_json_and_threshold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog = write(tmp_path / "tools.jsonl", ROWS)
    assert main(lint("--catalog", str(catalog), "--json", "--duplicate-threshold", "0.5")) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["tools"] == 10 and report["duplicate_threshold"] == 0.5
    pairs = {(d["first"], d["second"]) for d in report["duplicates"]}
    assert ("Github.CreateIssue", "Jira.CreateIssue") in pairs  # 0.55 is a duplicate at this threshold
    assert all(0.5 <= d["cosine"] <= 1.0 for d in report["duplicates"])
    assert report["by_kind"]["vague"] == 3 and report["problem_count"] == len(report["problems"])
    assert {"tool": "send_email", "kind": "name-form", "message": "name is not in App.ToolName form"} in report[
        "problems"
    ]


def test_lint_reads_several_catalogs_and_a_clean_one_exits_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = write(tmp_path / "a.jsonl", [ROWS[0], ROWS[2]])
    second = write(tmp_path / "b.jsonl", [ROWS[3], ROWS[-1]])
    assert main(lint("--catalog", str(first), "--catalog", str(second))) == 0
    assert capsys.readouterr().out == "no problems in 4 tools\n"


def test_lint_reports_bad_rows_with_line_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog = write(tmp_path / "tools.jsonl", ROWS[:2])
    catalog.write_text(catalog.read_text() + '{"name": "X.Y"}\n')
    assert main(lint("--catalog", str(catalog))) not in (0, 1)
    err = capsys.readouterr().err
    assert f"{catalog}:3: description: Field required" in err and "input_schema: Field required" in err
