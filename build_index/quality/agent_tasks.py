"""Our own training data: tasks written the way agents send them, each labelled with the tool(s) that do it.

Helpers wrote them from catalogs no evaluation uses (agent_tasks/README.md: who, from what, the prompt): the
``*Api`` toolkits of ``../shared/catalogs/arcade/tools_full.jsonl`` whose vendor has no curated toolkit, and the
training sets' catalogs (their tools outside the held-out fifth). Benchmark queries paraphrase one tool's
description at length; agents write terse steps with values inline, in the user's words. A task names its tools by
their id in its ``source`` catalog, the values it holds (so training can swap them for others) and the look-alike
siblings that would be wrong for it (its hard negatives).

As for the training sets, one tool in five is never trained on (training_split.is_held_out over ``agent_tasks``):
the tasks that need one are a validation set of agent-phrased requests (``write_bench_view``), the one that
no-match and the score are calibrated on beside the others.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_index.quality.training_split import is_held_out

AGENT_TASKS_DIR = Path(__file__).with_name("agent_tasks")
SET_NAME = "agent_tasks"
ARCADE_SOURCE = "arcade"  # tools of ../shared/catalogs/arcade/tools_full.jsonl
ARCADE_CATALOG = Path("catalogs") / "arcade" / "tools_full.jsonl"  # under the shared data root


@dataclass(frozen=True)
class Value:
    text: str  # exactly as it appears in the task
    kind: str  # id, email, amount, date, ...


@dataclass(frozen=True)
class AgentTask:
    task: str
    groups: tuple[tuple[str, ...], ...]  # one group of interchangeable tool ids per needed step
    source: str  # "arcade" or a training set's name: where the ids are defined
    style: str
    values: tuple[Value, ...]
    negatives: tuple[str, ...]  # same-app look-alikes that would be wrong for the task

    @property
    def tool_ids(self) -> set[str]:
        return {tool for group in self.groups for tool in group}


def _groups(tools: Sequence[Any]) -> tuple[tuple[str, ...], ...]:
    return tuple((str(step),) if isinstance(step, str) else tuple(str(t) for t in step) for step in tools)


def read_agent_tasks(directory: Path = AGENT_TASKS_DIR) -> list[AgentTask]:
    """Every task of every ``*.jsonl`` file of the folder, in file and line order."""
    tasks = []
    for path in sorted(directory.glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            try:
                tasks.append(
                    AgentTask(
                        task=str(row["task"]),
                        groups=_groups(row["tools"]),
                        source=str(row["source"]),
                        style=str(row.get("style", "")),
                        values=tuple(Value(str(v["text"]), str(v["kind"])) for v in row.get("values", [])),
                        negatives=tuple(str(n) for n in row.get("negatives", [])),
                    )
                )
            except (KeyError, TypeError) as exc:
                raise ValueError(f"{path.name}:{number}: not an agent task ({exc})") from exc
    return tasks


def held_out(task: AgentTask) -> bool:
    """A task that needs a tool training never sees: an arcade tool in the held-out fifth, or a training set's
    held-out tool (the writers were given none, so none should be)."""
    set_name = SET_NAME if task.source == ARCADE_SOURCE else task.source
    return any(is_held_out(set_name, tool) for tool in task.tool_ids)


def training_tasks(tasks: Iterable[AgentTask]) -> list[AgentTask]:
    return [task for task in tasks if not held_out(task)]


def arcade_rows(shared_root: Path, apps: Iterable[str]) -> list[dict[str, Any]]:
    """The rows of the arcade catalog's tools of these apps, as the catalog has them."""
    wanted = set(apps)
    lines = (shared_root / ARCADE_CATALOG).read_text(encoding="utf-8").splitlines()
    return [row for row in map(json.loads, filter(str.strip, lines)) if row["app"] in wanted]


def write_bench_view(shared_root: Path, out_dir: Path, tasks: Sequence[AgentTask]) -> Path:
    """The held-out arcade tasks as a set in the benchmark format (``toolrec eval`` reads it): every tool of the
    apps the tasks were written for, and the tasks that need a held-out tool as its queries."""
    arcade = [task for task in tasks if task.source == ARCADE_SOURCE]
    apps = {tool.split(".", 1)[0] for task in arcade for tool in task.tool_ids}
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = arcade_rows(shared_root, apps)
    keep = ("id", "name", "description", "input_schema", "app")
    (out_dir / "tools.jsonl").write_text("".join(json.dumps({k: r[k] for k in keep}) + "\n" for r in rows))
    queries = [
        {"id": f"agent-{number}", "query": task.task, "relevant_groups": [list(g) for g in task.groups],
         "relevant": sorted(task.tool_ids), "subset": task.style}
        for number, task in enumerate(arcade) if held_out(task)
    ]  # fmt: skip
    (out_dir / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    return out_dir
