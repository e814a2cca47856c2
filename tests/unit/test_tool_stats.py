"""`toolrec stats --per-tool`: per tool, how often it was suggested and run after a suggestion (issue 25 item 4)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from build_index.ops.tool_stats import NOT_RANKED, ToolUse, mean_rank, tool_report, tool_uses
from handler.policy.model import ExecutionRecord, QueryRecord

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def record(query_id: str, tasks: list[str], recommended: list[list[str]], ran: list[tuple[str, str]]) -> QueryRecord:
    return QueryRecord(
        query_id=query_id,
        user_id="ada",
        key_id="k1",
        tasks=tuple(tasks),
        recommended=tuple(tuple(r) for r in recommended),
        created_at=NOW,
        expires_at=int((NOW + timedelta(days=30)).timestamp()),
        executions=tuple(ExecutionRecord(tool_name=t, user_id="ada", key_id="k1", at=NOW, outcome=o) for t, o in ran),
    )


def test_suggestions_and_runs_after_a_suggestion_are_counted_per_tool() -> None:
    records = [
        # suggested Slack first, the agent ran Teams (suggested second): Teams ran after a suggestion
        record("q1", ["tell the team"], [["Slack.SendMessage", "Teams.PostMessage"]], [("Teams.PostMessage", "ok")]),
        # the same request again: the same task counts once in Teams' tasks, twice in its runs
        record("q2", ["tell the team"], [["Slack.SendMessage", "Teams.PostMessage"]], [("Teams.PostMessage", "ok")]),
        # a failed run and a run of a tool never suggested do not count as runs after a suggestion
        record(
            "q3",
            ["open an issue"],
            [["GitHub.CreateIssue"]],
            [("GitHub.CreateIssue", "error"), ("Jira.CreateIssue", "ok")],
        ),
        record("q4", ["list channels"], [["Slack.ListChannels", "Slack.SendMessage"]], []),  # never run
    ]
    uses = tool_uses(records)
    assert (uses["Slack.SendMessage"].suggested, uses["Slack.SendMessage"].run_after_suggestion) == (3, 0)
    teams = uses["Teams.PostMessage"]
    assert (teams.suggested, teams.run_after_suggestion, teams.tasks) == (2, 2, ["tell the team"])
    assert (uses["GitHub.CreateIssue"].suggested, uses["GitHub.CreateIssue"].run_after_suggestion) == (1, 0)
    assert "Jira.CreateIssue" not in uses
    report = tool_report(uses, limit=2)
    assert report.splitlines()[1].split() == ["Slack.SendMessage", "3", "0"]
    assert len(report.splitlines()) == 3


def test_mean_rank_counts_a_tool_outside_the_first_ten_as_rank_eleven() -> None:
    ten = [f"T{i}" for i in range(12)]
    assert mean_rank([["A", "B"], ["B", "A"]], "A") == 1.5
    assert mean_rank([ten, ["X"]], "T11") == NOT_RANKED
    use = ToolUse(suggested=4, run_after_suggestion=2, tasks=["t"], cold_rank=5.0, warm_rank=2.0)
    assert "5.0 -> 2.0" in tool_report({"A": use}, limit=5)
